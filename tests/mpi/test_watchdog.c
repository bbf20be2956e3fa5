/* PGS_TIMEOUT: rank 0 enters a collective the others never join; the watchdog
 * reports it and aborts the job. CTest passes on the report, which only the
 * watchdog prints; without it the test hangs into CTest's TIMEOUT and fails.
 *   test_watchdog [multiple|funneled] [barrier|allreduce]
 * funneled: below MPI_THREAD_MULTIPLE the caller polls, and the watchdog's
 * thread watches a backend call it cannot poll. allreduce: 1 Mi doubles, so a
 * hierarchical backend hangs in its own schedule rather than in MPI.
 * PGS_BACKEND=plain: a table backend with a blocking allreduce only. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_test.h"

int main(int argc, char **argv) {
  int provided = 0;
  int level = argc > 1 && strcmp(argv[1], "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
  MPI_Init_thread(&argc, &argv, level, &provided);
  const char *backend = getenv("PGS_BACKEND");
  if (backend && strcmp(backend, "plain") == 0 && pg_test_register_plain() != PG_OK) return 1;
  pg_strategy *s = NULL;
  if (pg_strategy_create("cpu", NULL, &s) != PG_OK) return 1;
  if (pg_strategy_rank(s) == 0) {
    /* never completes */
    if (argc > 2 && strcmp(argv[2], "allreduce") == 0) {
      static double data[1 << 20];
      pg_allreduce(s, data, data, 1 << 20, PG_FLOAT64, PG_SUM);
    } else {
      pg_barrier(s);
    }
  } else {
    sleep(60);  /* the watchdog on rank 0 ends the job long before */
  }
  return 1;
}
