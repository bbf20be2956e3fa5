/* Faults a job meets in production, each a mode:
 *   kill      rank 1 dies (SIGKILL) in the middle of a loop of allreduces: the
 *             launcher must end the whole job at once (run by fault_run.sh)
 *   stop      rank 1 is stopped (SIGSTOP) in the middle of the loop: with
 *             PGS_TIMEOUT the watchdog must report and end the job within the
 *             timeout and a second (run by fault_run.sh)
 *   mismatch  under PGS_DEBUG=detail, ranks that disagree on the collective,
 *             its count, dtype, op, root, its nonblocking twin, or a bad
 *             argument on one rank: every rank gets the same failure and the
 *             strategy stays usable after each */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"

/* The faulting rank says when it faults (fault_run.sh times the job's end
 * from there: a busy machine may take seconds to start the job). */
static void loop_until_fault(pg_strategy *s, int fault) {
  const int rank = pg_strategy_rank(s);
  for (int i = 0; i < 100000; ++i) {
    if (i == 50 && rank == 1) {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      fprintf(stderr, "fault at %lld.%09ld\n", (long long)now.tv_sec, now.tv_nsec);
      raise(fault);
    }
    int v = 1, sum = 0;
    if (pg_allreduce(s, &v, &sum, 1, PG_INT32, PG_SUM) != PG_OK) exit(3);
  }
}

/* One disagreement: rank 0 calls `odd`, the others `usual`; every rank must
 * return `expected`, and a correct allreduce must work afterwards. */
static void disagree(pg_strategy *s, const char *what, pg_status (*odd)(pg_strategy *),
                     pg_status (*usual)(pg_strategy *), pg_status expected) {
  pg_test_step("mismatch: %s", what);
  const pg_status st = pg_strategy_rank(s) == 0 ? odd(s) : usual(s);
  PG_TEST_TRUE(st == expected, "%s: %s (%s), expected %s", what, pg_status_name(st), pg_last_error(),
               pg_status_name(expected));
  int v = 1, sum = 0;
  PG_TEST_STATUS(pg_allreduce(s, &v, &sum, 1, PG_INT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(sum == pg_strategy_size(s), "%s: allreduce afterwards gave %d", what, sum);
}

static int buf[64], out[64 * 8];
static pg_status allreduce4(pg_strategy *s) { return pg_allreduce(s, buf, out, 4, PG_INT32, PG_SUM); }
static pg_status allreduce5(pg_strategy *s) { return pg_allreduce(s, buf, out, 5, PG_INT32, PG_SUM); }
static pg_status allreduce_f(pg_strategy *s) { return pg_allreduce(s, buf, out, 4, PG_FLOAT32, PG_SUM); }
static pg_status allreduce_max(pg_strategy *s) { return pg_allreduce(s, buf, out, 4, PG_INT32, PG_MAX); }
static pg_status allreduce_null(pg_strategy *s) { return pg_allreduce(s, NULL, out, 4, PG_INT32, PG_SUM); }
static pg_status broadcast0(pg_strategy *s) { return pg_broadcast(s, buf, 4, PG_INT32, 0); }
static pg_status broadcast1(pg_strategy *s) { return pg_broadcast(s, buf, 4, PG_INT32, 1); }
static pg_status allgather4(pg_strategy *s) { return pg_allgather(s, buf, out, 4, PG_INT32); }
static pg_status iallreduce4(pg_strategy *s) {
  pg_work *w = NULL;
  pg_status st = pg_iallreduce(s, buf, out, 4, PG_INT32, PG_SUM, &w);
  if (w) pg_work_wait(w, -1), pg_work_free(w);
  return st;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "mismatch";
  pg_test_watchdog("test_faults");
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (strcmp(mode, "mismatch") == 0) setenv("PGS_DEBUG", "detail", 1);
  pg_strategy *s = NULL;
  if (pg_strategy_create("cpu", NULL, &s) != PG_OK) return 2;
  if (strcmp(mode, "kill") == 0) loop_until_fault(s, SIGKILL);
  if (strcmp(mode, "stop") == 0) loop_until_fault(s, SIGSTOP);
  if (strcmp(mode, "kill") == 0 || strcmp(mode, "stop") == 0) return 4;  /* the job should be gone */

  disagree(s, "another collective", broadcast0, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "another count", allreduce5, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "another dtype", allreduce_f, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "another op", allreduce_max, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "another root", broadcast1, broadcast0, PG_ERR_MISMATCH);
  disagree(s, "the nonblocking twin", iallreduce4, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "another collective of the same size", allgather4, allreduce4, PG_ERR_MISMATCH);
  disagree(s, "a bad argument on one rank", allreduce_null, allreduce4, PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_faults");
  MPI_Finalize();
  return failed;
}
