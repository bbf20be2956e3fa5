/* A failure in fairring's fast path across nodes reaches the failing rank's
 * node: on 2x2 virtual nodes (PGS_RANKS_PER_NODE=2), PGS_FAIRRING_FAULT names
 * the leaders (ranks 0 and 2) whose step across nodes fails. Every rank of a
 * failing leader's node returns PG_ERR_BACKEND naming the leader (its peers
 * used to wait for its result forever), the other node's ranks get the right
 * sum, and pg_strategy_destroy completes everywhere. */
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  pg_test_watchdog("test_fast_path_fault");
  pg_strategy *s = NULL;
  pg_test_step("create fairring");
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &s), PG_OK);
  if (s && PG_TEST_TRUE(pg_strategy_node_count(s) == 2 && pg_strategy_local_size(s) == 2,
                        "runs as 2x2 virtual nodes, not %d x %d", pg_strategy_node_count(s),
                        pg_strategy_local_size(s))) {
    const int rank = pg_strategy_rank(s), leader = rank / 2 * 2;
    double x = rank + 1, y = 0;
    pg_test_step("allreduce on the fast path, across nodes");
    const pg_status st = pg_allreduce(s, &x, &y, 1, PG_FLOAT64, PG_SUM);
    if (named(leader)) {
      char who[32];
      snprintf(who, sizeof who, "rank %d", leader);
      PG_TEST_TRUE(st == PG_ERR_BACKEND, "leader %d failed: got %s: %s", leader, pg_status_name(st), pg_last_error());
      PG_TEST_TRUE(strstr(pg_last_error(), who) != NULL, "the message names %s: %s", who, pg_last_error());
      PG_TEST_TRUE(strstr(pg_last_error(), "across nodes") != NULL, "the message names the step: %s",
                   pg_last_error());
    } else {
      PG_TEST_STATUS(st, PG_OK);
      PG_TEST_TRUE(y == 10, "the sum: %g", y);
    }
    pg_test_step("destroy");
    pg_status destroyed = pg_strategy_destroy(s);
    PG_TEST_TRUE(destroyed == PG_OK, "destroy: %s: %s", pg_status_name(destroyed), pg_last_error());
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_fast_path_fault");
  MPI_Finalize();
  return failed;
}
