/* A valid plugin for the tests (libpg_backend_onerank.so), with no operation
 * of its own: everything runs on the default backend. The tests make it
 * visible to some ranks only. */
#include <stdlib.h>

#include "pg_backend.h"

static pg_status onerank_create(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)ctx; (void)user_data;
  *state = NULL;
  return PG_OK;
}

PG_API pg_status pg_backend_plugin_init(void) {
  pg_backend_ops ops = pg_backend_ops_init("onerank", PG_DEVICE_CPU);
  ops.create = onerank_create;
  return pg_backend_register(&ops);
}
