/* Jobs for the flight recorder's tests (check_trace.sh runs them with
 * PGS_TRACE set, then reads the dumps with pg-trace):
 *
 *   trace_job hang        3 allreduces; then every rank but the last enters a
 *                         4th while the last sleeps (PGS_TIMEOUT ends the job)
 *   trace_job straggler   10 allreduces; rank 1 sleeps 50 ms before each
 *   trace_job mismatch    2 allreduces; then rank 0 broadcasts while the others
 *                         allreduce, and all meet at a barrier (PGS_TIMEOUT or
 *                         MPI ends it)
 *   trace_job signal      200 allreduces; every rank sends itself SIGUSR1 at
 *                         the 100th and checks that its dump appears; all
 *                         results checked
 *   trace_job many N      N allreduces, results checked (the ring buffer)
 *   trace_job backend B   allreduce, reduce_scatter and allgather on backend B
 *                         ("plain": a table backend), results checked
 *   trace_job shared      fairring's allreduces of 16 KiB and 256 KiB from a
 *                         pg_mem_alloc buffer, out of place, results checked
 *                         (the larger one's input is read in place)
 *   trace_job subgroup    ranks 0 and 1 trace a strategy on a sub-communicator
 *                         first; then every rank traces one on the world
 *   trace_job concurrent  dumps from every side at once: two threads ask for
 *                         dumps and send SIGUSR1 while strategies are made and
 *                         destroyed (each destroy dumps); then the last rank
 *                         sleeps and the watchdog (PGS_TIMEOUT) ends the job
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* count elements of rank + i; the sum over ranks is known. */
static void allreduce_checked(pg_strategy *s, size_t count) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  double *data = malloc(count * sizeof *data);
  for (size_t i = 0; i < count; ++i) data[i] = rank + (double)i;
  PG_TEST_STATUS(pg_allreduce(s, data, data, count, PG_FLOAT64, PG_SUM), PG_OK);
  for (size_t i = 0; i < count; ++i)
    if (!PG_TEST_TRUE(data[i] == size * (size - 1) / 2.0 + size * (double)i, "element %zu: %g", i, data[i])) break;
  free(data);
}

/* Whether this rank's dump in PGS_TRACE says `text`, within `ms` milliseconds. */
static int dump_says(const char *text, int ms) {
  const char *dir = getenv("PGS_TRACE");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char suffix[64];
  snprintf(suffix, sizeof suffix, "-rank%d.json", rank);
  for (int waited = 0; waited <= ms; waited += 10) {
    char command[1024];
    snprintf(command, sizeof command, "grep -qs '%s' %s/pgstrategy-*%s", text, dir, suffix);
    if (system(command) == 0) return 1;
    sleep_ms(10);
  }
  return 0;
}

/* Ranks 0 and 1 trace a strategy of their own before the world's: the
 * world strategy's creation then meets ranks that have a job name and one
 * that has none. */
static void trace_pair(void) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm pair = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
  if (pair == MPI_COMM_NULL) return;
  pg_strategy *t = NULL;
  PG_TEST_STATUS(pg_strategy_create_comm("cpu", "mpi", pair, &t), PG_OK);
  if (t) {
    allreduce_checked(t, 4);
    PG_TEST_STATUS(pg_strategy_destroy(t), PG_OK);
  }
  MPI_Comm_free(&pair);
}

static volatile int g_stop;

static void *dump_often(void *unused) {
  (void)unused;
  for (int i = 0; !g_stop; ++i) {
    pg_trace_dump();
    if (i % 4 == 0) kill(getpid(), SIGUSR1);
  }
  return NULL;
}

int main(int argc, char **argv) {
  pg_test_watchdog("trace_job");
  const char *mode = argc > 1 ? argv[1] : "";
  const int subgroup = strcmp(mode, "subgroup") == 0;
  if (subgroup) {
    MPI_Init(&argc, &argv);
    trace_pair();
  }
  const char *backend = strcmp(mode, "backend") == 0 && argc > 2 ? argv[2]
                        : strcmp(mode, "shared") == 0              ? "fairring"
                                                                   : NULL;
  if (backend && strcmp(backend, "plain") == 0) PG_TEST_STATUS(pg_test_register_plain(), PG_OK);
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
  if (!s) return 1;
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  double x = 1;

  if (strcmp(mode, "hang") == 0) {
    for (int i = 0; i < 3; ++i) allreduce_checked(s, 4);
    if (rank == size - 1) sleep_ms(60000);  /* never arrives; the watchdog ends the job */
    allreduce_checked(s, 4);
  } else if (strcmp(mode, "straggler") == 0) {
    for (int i = 0; i < 10; ++i) {
      if (rank == 1) sleep_ms(50);
      allreduce_checked(s, 16);
    }
  } else if (strcmp(mode, "mismatch") == 0) {
    for (int i = 0; i < 2; ++i) allreduce_checked(s, 4);
    if (rank == 0) pg_broadcast(s, &x, 1, PG_FLOAT64, 0);
    else pg_allreduce(s, &x, &x, 1, PG_FLOAT64, PG_SUM);
    /* A rank MPI let through waits in the next collective: the watchdog ends the job. */
    pg_barrier(s);
  } else if (strcmp(mode, "signal") == 0) {
    for (int i = 0; i < 200; ++i) {
      if (i == 100) {
        kill(getpid(), SIGUSR1);
        PG_TEST_TRUE(dump_says("\"reason\":\"signal\"", 5000), "a dump after SIGUSR1");
      }
      allreduce_checked(s, 8);
    }
  } else if (subgroup) {
    allreduce_checked(s, 4);
  } else if (strcmp(mode, "concurrent") == 0) {
    pthread_t threads[2];
    for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, dump_often, NULL);
    for (int i = 0; i < 20; ++i) {
      pg_strategy *t = NULL;
      PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &t), PG_OK);
      if (!t) break;
      allreduce_checked(t, 4);
      PG_TEST_STATUS(pg_strategy_destroy(t), PG_OK);
    }
    if (rank == size - 1) sleep_ms(60000); /* never arrives; the watchdog dumps and ends the job */
    allreduce_checked(s, 4);
  } else if (strcmp(mode, "many") == 0) {
    const int n = argc > 2 ? atoi(argv[2]) : 50;
    for (int i = 0; i < n; ++i) allreduce_checked(s, 2);
  } else if (strcmp(mode, "shared") == 0) {
    const size_t counts[] = {2048, 32768}; /* doubles */
    double *send = NULL, *recv = malloc(32768 * sizeof *recv);
    PG_TEST_STATUS(pg_mem_alloc(s, 32768 * sizeof *send, (void **)&send), PG_OK);
    for (int k = 0; k < 2 && send; ++k) {
      for (size_t i = 0; i < counts[k]; ++i) send[i] = rank + (double)i;
      PG_TEST_STATUS(pg_allreduce(s, send, recv, counts[k], PG_FLOAT64, PG_SUM), PG_OK);
      for (size_t i = 0; i < counts[k]; ++i)
        if (!PG_TEST_TRUE(recv[i] == size * (size - 1) / 2.0 + size * (double)i, "element %zu", i)) break;
    }
    if (send) PG_TEST_STATUS(pg_mem_free(s, send), PG_OK);
    free(recv);
  } else if (backend) {
    /* 64 KiB: fairring's fast path by default, or the algorithm PGS_FAIRRING_ALGO forces. */
    const size_t n = 8192;
    double *send = malloc(n * size * sizeof *send), *recv = malloc(n * size * sizeof *recv);
    for (size_t i = 0; i < n * size; ++i) send[i] = rank + (double)i;
    allreduce_checked(s, n);
    PG_TEST_STATUS(pg_reduce_scatter(s, send, recv, n, PG_FLOAT64, PG_SUM), PG_OK);
    for (size_t i = 0; i < n; ++i)
      if (!PG_TEST_TRUE(recv[i] == size * (size - 1) / 2.0 + size * (double)(rank * n + i), "reduce_scatter %zu", i))
        break;
    PG_TEST_STATUS(pg_allgather(s, send, recv, n, PG_FLOAT64), PG_OK);
    for (int r = 0; r < size; ++r)
      if (!PG_TEST_TRUE(recv[r * n + 1] == r + 1.0, "allgather block %d", r)) break;
    free(send);
    free(recv);
  } else {
    fprintf(stderr, "usage: trace_job hang|straggler|mismatch|signal|many N|backend NAME|shared|subgroup|concurrent\n");
    return 2;
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "trace_job");
  if (subgroup) MPI_Finalize();
  return failed;
}
