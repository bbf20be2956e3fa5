/* A count above INT_MAX through the public API: int8 allreduce in place of
 * INT_MAX + 11 elements (2 GiB per rank) and a broadcast of the same buffer. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

int main(void) {
  pg_test_watchdog("test_large_count");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (!s) return 1;
  const size_t n = (size_t)INT_MAX + 11;
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  signed char *buf = malloc(n);
  if (!PG_TEST_TRUE(buf != NULL, "cannot allocate %zu bytes", n)) return pg_test_verdict(MPI_COMM_WORLD, "test_large_count");
  memset(buf, 1 + rank, n);
  PG_TEST_STATUS(pg_allreduce(s, buf, buf, n, PG_INT8, PG_SUM), PG_OK);
  const signed char want = (signed char)(size * (size + 1) / 2);
  /* Spot checks at both ends and across the INT_MAX boundary. */
  const size_t probes[] = {0, 1, (size_t)INT_MAX - 1, (size_t)INT_MAX, (size_t)INT_MAX + 1, n - 1};
  for (size_t i = 0; i < sizeof probes / sizeof probes[0]; ++i)
    PG_TEST_TRUE(buf[probes[i]] == want, "allreduce element %zu: %d, expected %d", probes[i], buf[probes[i]], want);
  if (rank == 0) memset(buf + (size_t)INT_MAX, 77, 11);
  PG_TEST_STATUS(pg_broadcast(s, buf, n, PG_INT8, 0), PG_OK);
  PG_TEST_TRUE(buf[n - 1] == 77 && buf[0] == want, "broadcast tail %d head %d", buf[n - 1], buf[0]);
  free(buf);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_large_count");
}
