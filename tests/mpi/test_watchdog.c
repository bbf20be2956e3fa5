/* PGS_TIMEOUT: rank 0 enters a barrier the others never join; the watchdog
 * reports it and aborts the job. CTest passes on the report, which only the
 * watchdog prints; without it the test hangs into CTest's TIMEOUT and fails.
 *   test_watchdog [funneled]   below MPI_THREAD_MULTIPLE the caller polls */
#include <string.h>
#include <unistd.h>

#include "pg_strategy.h"

int main(int argc, char **argv) {
  int provided = 0;
  int level = argc > 1 && strcmp(argv[1], "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
  MPI_Init_thread(&argc, &argv, level, &provided);
  pg_strategy *s = NULL;
  if (pg_strategy_create("cpu", NULL, &s) != PG_OK) return 1;
  if (pg_strategy_rank(s) == 0) {
    pg_barrier(s);  /* never completes */
  } else {
    sleep(60);  /* the watchdog on rank 0 ends the job long before */
  }
  return 1;
}
