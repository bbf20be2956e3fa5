/* A count above INT_MAX through the public API: int8 allreduce in place of
 * INT_MAX + 11 elements (2 GiB per rank) and a broadcast of the same buffer;
 * then the uneven collectives with a count and a displacement above INT_MAX
 * in the same buffer: allgatherv and reduce_scatterv of blocks {n, 5} in
 * place, and alltoallv of n elements from rank 0 to rank 1. Run twice: with
 * the MPI's large-count forms, and with PGS_MPI_CHUNK_COUNT just below
 * INT_MAX, which takes the path for MPIs without them. */
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

  if (size == 2) {
    /* Blocks {n, 5}: rank 1's starts at element n, above INT_MAX. */
    const size_t total = n + 5, counts[2] = {n, 5}, displs[2] = {0, n};
    buf = malloc(total);
    if (!PG_TEST_TRUE(buf != NULL, "cannot allocate %zu bytes", total))
      return pg_test_verdict(MPI_COMM_WORLD, "test_large_count");
    memset(buf, 0, total);
    memset(buf + displs[rank], 10 + rank, counts[rank]);
    PG_TEST_STATUS(pg_allgatherv(s, buf + displs[rank], counts[rank], buf, counts, displs, PG_INT8), PG_OK);
    const size_t at[] = {0, (size_t)INT_MAX, n - 1, n, n + 4};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; ++i) {
      const signed char expected = (signed char)(at[i] < n ? 10 : 11);
      PG_TEST_TRUE(buf[at[i]] == expected, "allgatherv element %zu: %d, expected %d", at[i], buf[at[i]], expected);
    }
    /* Every element is 10 or 11 on both ranks: the sums are 20 and 22. */
    PG_TEST_STATUS(pg_reduce_scatterv(s, buf, buf + displs[rank], counts, PG_INT8, PG_SUM), PG_OK);
    const signed char sum = (signed char)(rank == 0 ? 20 : 22);
    const size_t mine[] = {displs[rank], displs[rank] + counts[rank] / 2, displs[rank] + counts[rank] - 1};
    for (size_t i = 0; i < sizeof mine / sizeof mine[0]; ++i)
      PG_TEST_TRUE(buf[mine[i]] == sum, "reduce_scatterv element %zu: %d, expected %d", mine[i], buf[mine[i]], sum);
    /* alltoallv: rank 0's n elements to rank 1. */
    signed char small[1] = {0};
    const size_t none[2] = {0, 0}, zero[2] = {0, 0}, to_1[2] = {0, n}, from_0[2] = {n, 0};
    if (rank == 0) memset(buf, 33, n), buf[n - 1] = 34;
    PG_TEST_STATUS(rank == 0 ? pg_alltoallv(s, buf, to_1, zero, small, none, zero, PG_INT8)
                             : pg_alltoallv(s, small, none, zero, buf, from_0, zero, PG_INT8),
                   PG_OK);
    if (rank == 1)
      PG_TEST_TRUE(buf[0] == 33 && buf[(size_t)INT_MAX] == 33 && buf[n - 1] == 34 && buf[n] == 22,
                   "alltoallv: %d %d %d %d", buf[0], buf[(size_t)INT_MAX], buf[n - 1], buf[n]);
    /* gatherv to rank 1 (in place there): rank 0's n elements at element 0;
     * then scatterv from rank 1 (in place there): they go back to rank 0. */
    if (rank == 0) memset(buf, 44, n), buf[n - 1] = 45;
    PG_TEST_STATUS(pg_gatherv(s, rank == 0 ? buf : buf + n, counts[rank], buf, rank == 1 ? counts : NULL,
                              rank == 1 ? displs : NULL, PG_INT8, 1),
                   PG_OK);
    if (rank == 1)
      PG_TEST_TRUE(buf[0] == 44 && buf[(size_t)INT_MAX] == 44 && buf[n - 1] == 45 && buf[n] == 22,
                   "gatherv: %d %d %d %d", buf[0], buf[(size_t)INT_MAX], buf[n - 1], buf[n]);
    if (rank == 1) memset(buf, 55, n);
    if (rank == 0) memset(buf, 0, n);
    PG_TEST_STATUS(pg_scatterv(s, rank == 1 ? buf : NULL, rank == 1 ? counts : NULL, rank == 1 ? displs : NULL,
                               rank == 0 ? buf : buf + n, counts[rank], PG_INT8, 1),
                   PG_OK);
    if (rank == 0)
      PG_TEST_TRUE(buf[0] == 55 && buf[(size_t)INT_MAX] == 55 && buf[n - 1] == 55,
                   "scatterv: %d %d %d", buf[0], buf[(size_t)INT_MAX], buf[n - 1]);
    free(buf);
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_large_count");
}
