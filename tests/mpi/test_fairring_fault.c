/* A failure in fairring's step across nodes reaches the failing rank's node:
 * on virtual nodes of 2 ranks (PGS_RANKS_PER_NODE=2: 2x2, or 2+1),
 * PGS_FAIRRING_FAULT names the ranks whose step across nodes fails (the fast
 * path's, or with PGS_FAIRRING_ALGO=leaders the leaders'). Every rank of a
 * failing rank's node returns PG_ERR_BACKEND naming it within 1 s (its peers
 * used to wait for its result forever); the other node's ranks, whose step
 * finished, get the right sum, or PG_ERR_BACKEND naming it where they learn
 * of the failure first (the strategy's alarm); pg_strategy_destroy completes
 * everywhere.
 *
 *   test_fairring_fault [COUNT]   doubles per rank (default 1: on the fast
 *   path the leaders' step; from PGS_FAIRRING_SPLIT_BYTES every rank's, over
 *   its rail) */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

/* Whether `rank` is in PGS_FAIRRING_FAULT=across:<rank>[,<rank>...]. */
static int named(int rank) {
  const char *v = getenv("PGS_FAIRRING_FAULT");
  if (!v || strncmp(v, "across:", 7) != 0) return 0;
  for (const char *p = v + 7; *p;) {
    char *end = NULL;
    if (strtol(p, &end, 10) == rank) return 1;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

/* Whether `message` names a rank of a node where PGS_FAIRRING_FAULT fails a
 * rank: the failing rank, or a node peer that failed because of it (where
 * several fail, a rank learns of whichever reaches it first). */
static int names_a_failing_node(const char *message, int size) {
  for (int r = 0; r < size; ++r) {
    char who[32];
    snprintf(who, sizeof who, "rank %d ", r);
    if ((named(r / 2 * 2) || named(r / 2 * 2 + 1)) && strstr(message, who)) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  pg_test_watchdog("test_fairring_fault");
  pg_strategy *s = NULL;
  pg_test_step("create fairring");
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &s), PG_OK);
  if (s && PG_TEST_TRUE(pg_strategy_node_count(s) == 2 && pg_strategy_size(s) >= 3,
                        "runs as 2x2 or 2+1 virtual nodes, not %d nodes of %d ranks", pg_strategy_node_count(s),
                        pg_strategy_size(s))) {
    const int rank = pg_strategy_rank(s), first = rank / 2 * 2;
    const size_t count = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 1;
    double *x = malloc(count * sizeof *x), *y = calloc(count, sizeof *y);
    for (size_t i = 0; i < count; ++i) x[i] = rank + 1 + (double)(i % 7);
    pg_test_step("allreduce across nodes, %zu doubles", count);
    const double entered = MPI_Wtime();
    const pg_status st = pg_allreduce(s, x, y, count, PG_FLOAT64, PG_SUM);
    const double took = MPI_Wtime() - entered;
    /* Small, the node's first rank crosses for it; split, each rank for its block. */
    const int failing = named(first) ? first : count > 1 && named(first + 1) ? first + 1 : -1;
    const int size = pg_strategy_size(s);
    if (failing >= 0) {
      PG_TEST_TRUE(st == PG_ERR_BACKEND, "rank %d failed: got %s: %s", failing, pg_status_name(st), pg_last_error());
      PG_TEST_TRUE(names_a_failing_node(pg_last_error(), size), "the message names rank %d or its node: %s",
                   failing, pg_last_error());
      if (failing == rank)
        PG_TEST_TRUE(strstr(pg_last_error(), "across nodes") != NULL, "the message names the step: %s",
                     pg_last_error());
      PG_TEST_TRUE(took < 1.0, "the failure reached this rank within 1 s: %.3f s", took);
    } else if (st == PG_ERR_BACKEND) {
      PG_TEST_TRUE(names_a_failing_node(pg_last_error(), size),
                   "only a failure elsewhere ends a call here, and the message names its rank: %s", pg_last_error());
    } else {
      PG_TEST_STATUS(st, PG_OK);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += y[i] != size * (size + 1) / 2 + size * (double)(i % 7);
      PG_TEST_TRUE(wrong == 0, "the sum: %zu of %zu elements wrong (y[0] = %g)", wrong, count, y[0]);
    }
    free(x);
    free(y);
    pg_test_step("destroy");
    pg_status destroyed = pg_strategy_destroy(s);
    PG_TEST_TRUE(destroyed == PG_OK, "destroy: %s: %s", pg_status_name(destroyed), pg_last_error());
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_fairring_fault");
  MPI_Finalize();
  return failed;
}
