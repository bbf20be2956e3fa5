/* A broken plugin for the tests: its init registers a table the library
 * refuses (an invalid name) and returns that failure. */
#include <string.h>

#include "pg_backend.h"

static pg_status never_called(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)ctx; (void)user_data; (void)state;
  return PG_ERR_INTERNAL;
}

PG_API pg_status pg_backend_plugin_init(void) {
  pg_backend_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.abi_version = PG_BACKEND_ABI_VERSION;
  ops.struct_size = sizeof ops;
  ops.name = "Init-Fails";
  ops.devices = PG_DEVICE_CPU;
  ops.create = never_called;
  return pg_backend_register(&ops);
}
