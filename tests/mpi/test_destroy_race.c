/* pg_strategy_abort racing pg_strategy_destroy, and destroy after
 * MPI_Finalize (include/pg_strategy.h, pg_strategy_abort):
 *
 *   test_destroy_race BACKEND race       40 rounds: create a strategy, run an
 *       allreduce, then one thread destroys it (after 0-2 ms, so that a peer
 *       waits in its destroy meanwhile) while a second aborts it after a delay
 *       each rank draws (0-4 ms: before destroy, while it waits for its peers,
 *       while it frees). Every call returns, on every rank: an abort
 *       before destroy has begun to free with the peers makes destroy go on
 *       alone; an abort after that is a no-op. The next round's allreduce checks
 *       that every rank is still in step.
 *   test_destroy_race BACKEND finalized  MPI_THREAD_FUNNELED: abort, then
 *       MPI_Finalize, then destroy, which must make no MPI call (MPICH ends the
 *       job when one is made after MPI_Finalize). Each rank checks alone.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_test.h"

enum { kRounds = 40 };

struct aborter {
  pg_strategy *s;
  long delay_ns;
  pg_status status;
};

static void sleep_ns(long ns) {
  struct timespec t = {0, ns};
  while (nanosleep(&t, &t) != 0) {
  }
}

static void *abort_later(void *arg) {
  struct aborter *a = arg;
  sleep_ns(a->delay_ns);
  a->status = pg_strategy_abort(a->s);
  return NULL;
}

static void race(const char *backend, int rank) {
  unsigned seed = 12345u + 977u * (unsigned)rank;
  for (int round = 0; round < kRounds; ++round) {
    pg_test_step("round %d", round);
    pg_strategy *s = NULL;
    PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
    if (!s) return;
    double x = rank + 1.0;
    PG_TEST_STATUS(pg_allreduce(s, &x, &x, 1, PG_FLOAT64, PG_SUM), PG_OK);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    PG_TEST_TRUE(x == size * (size + 1) / 2.0, "round %d: sum %g", round, x);
    seed = seed * 1103515245u + 12345u;
    struct aborter a = {s, (long)((seed >> 8) % 4000000u), PG_OK};
    seed = seed * 1103515245u + 12345u;
    pthread_t thread;
    pthread_create(&thread, NULL, abort_later, &a);
    sleep_ns((long)((seed >> 8) % 2000000u));  /* a peer waits in its destroy meanwhile */
    const pg_status destroyed = pg_strategy_destroy(s);
    pthread_join(thread, NULL);
    PG_TEST_TRUE(destroyed == PG_OK, "round %d: destroy returned %s: %s", round, pg_status_name(destroyed),
                 pg_last_error());
    PG_TEST_STATUS(a.status, PG_OK);
  }
}

static int finalized(const char *backend, int rank) {
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
  double x = 1.0;
  PG_TEST_STATUS(pg_allreduce(s, &x, &x, 1, PG_FLOAT64, PG_SUM), PG_OK);
  PG_TEST_STATUS(pg_strategy_abort(s), PG_OK);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  const int failures = pg_test_failures();
  fprintf(stderr, "rank %d: test_destroy_race finalized: %s\n", rank, failures ? "FAILED" : "passed");
  return failures != 0;
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : "mpi";
  const char *mode = argc > 2 ? argv[2] : "race";
  const int funneled = strcmp(mode, "finalized") == 0;
  int level = 0, rank = 0;
  MPI_Init_thread(&argc, &argv, funneled ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE, &level);
  pg_test_watchdog("test_destroy_race");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (funneled) return finalized(backend, rank);
  if (level < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "test_destroy_race: needs MPI_THREAD_MULTIPLE; skipped\n");
    MPI_Finalize();
    return PG_TEST_SKIP;
  }
  race(backend, rank);
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_destroy_race");
  MPI_Finalize();
  return failed;
}
