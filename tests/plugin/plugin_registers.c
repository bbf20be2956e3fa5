/* Broken plugins for the tests, built twice with a different REGISTERED_NAME:
 * libpg_backend_initfails.so registers a name the library refuses ("Init-Fails")
 * and returns that failure; libpg_backend_wrongname.so registers a backend
 * under another name than its file's. */

#include "pg_backend.h"

static pg_status never_called(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)ctx; (void)user_data; (void)state;
  return PG_ERR_INTERNAL;
}

PG_API pg_status pg_backend_plugin_init(void) {
  pg_backend_ops ops = pg_backend_ops_init(REGISTERED_NAME, PG_DEVICE_CPU);
  ops.create = never_called;
  return pg_backend_register(&ops);
}
