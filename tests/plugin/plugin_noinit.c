/* A broken plugin for the tests: a shared library named libpg_backend_noinit.so
 * that does not export pg_backend_plugin_init. */
#include "pg_backend.h"

PG_API int pg_backend_plugin_version(void) { return 1; } /* some other symbol */
