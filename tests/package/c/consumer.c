/* Built against the installed package (CMake and pkg-config): creates the CPU
 * default strategy, checks an allreduce against the analytic sum. */
#include <stdio.h>

#include "pg_strategy.h"

int main(void) {
  int major = -1, minor = -1, patch = -1;
  pg_version(&major, &minor, &patch);
  if (major != PG_VERSION_MAJOR || minor != PG_VERSION_MINOR) {
    fprintf(stderr, "header %d.%d but library %d.%d\n", PG_VERSION_MAJOR, PG_VERSION_MINOR, major, minor);
    return 1;
  }
  pg_strategy *s = NULL;
  pg_status st = pg_strategy_create("cpu", NULL, &s);
  if (st != PG_OK) {
    fprintf(stderr, "create: %s: %s\n", pg_status_name(st), pg_last_error());
    return 1;
  }
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  long v = rank + 1, sum = 0;
  st = pg_allreduce(s, &v, &sum, 1, PG_INT64, PG_SUM);
  int ok = st == PG_OK && sum == (long)size * (size + 1) / 2;
  if (rank == 0) printf("consumer %d.%d.%d: %s on %d ranks: %s\n", major, minor, patch,
                        pg_strategy_backend(s), size, ok ? "OK" : "FAILED");
  pg_strategy_destroy(s);
  return ok ? 0 : 1;
}
