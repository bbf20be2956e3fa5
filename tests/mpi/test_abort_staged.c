/* An aborted call leaves its staging buffers to MPI: run under
 * AddressSanitizer, it shows that nothing MPI may still write or read was
 * freed.
 *
 *   test_abort_staged CALL    (2 ranks on 2 virtual nodes: PGS_RANKS_PER_NODE=1)
 *
 * CALL is a blocking mpi-backend call that stages through a buffer of the
 * library's own: reduce_in_place (the root reduces from a copy of its
 * input), reduce_scatter_chunked (with PGS_MPI_CHUNK_COUNT: packed blocks and
 * an in-place result), reduce_scatterv_in_place (the result staged), and
 * alltoall_in_place (the input staged); with PGS_DEBUG=detail any of them
 * also exchanges fingerprints through buffers of the library's.
 *
 * Rank 0 enters CALL and a second thread aborts its strategy 300 ms later:
 * the call returns PG_ERR_ABORTED. Rank 1 enters CALL 1 s later, so that its
 * messages reach rank 0's buffers after rank 0's call returned; it finishes,
 * or learns of rank 0's abort (PG_ERR_BACKEND naming rank 0). Both ranks then
 * keep MPI busy for a while (MPI moves late messages during any call) before
 * the final barrier. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_test.h"

enum { kCount = 4096 }; /* doubles per block */

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
}

static void *abort_later(void *arg) {
  sleep_s(0.3);
  pg_strategy_abort(arg);
  return NULL;
}

/* CALL on s, in place where its name says so; buf holds size * kCount doubles. */
static pg_status call(pg_strategy *s, const char *name, double *buf, int *known) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  *known = 1;
  if (strcmp(name, "reduce_in_place") == 0)
    return pg_reduce(s, buf, rank == 0 ? buf : buf + kCount, kCount, PG_FLOAT64, PG_SUM, 0);
  if (strcmp(name, "reduce_scatter_chunked") == 0)
    return pg_reduce_scatter(s, buf, buf + (size_t)rank * kCount, kCount, PG_FLOAT64, PG_SUM);
  if (strcmp(name, "reduce_scatterv_in_place") == 0) {
    size_t counts[2] = {kCount, kCount / 2};
    return pg_reduce_scatterv(s, buf, buf + (rank == 0 ? 0 : counts[0]), counts, PG_FLOAT64, PG_SUM);
  }
  if (strcmp(name, "alltoall_in_place") == 0) return pg_alltoall(s, buf, buf, kCount, PG_FLOAT64);
  *known = 0;
  return PG_ERR_INVALID_ARGUMENT;
}

/* MPI moves messages that arrive late during any of its calls. */
static void keep_mpi_busy(double seconds) {
  const double until = MPI_Wtime() + seconds;
  while (MPI_Wtime() < until) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  pg_test_watchdog("test_abort_staged");
  const char *name = argc > 1 ? argv[1] : "";
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "mpi", &s), PG_OK);
  if (s && PG_TEST_TRUE(pg_strategy_size(s) == 2 && pg_strategy_node_count(s) == 2,
                        "runs on 2 ranks as 2 nodes (PGS_RANKS_PER_NODE=1)")) {
    const int rank = pg_strategy_rank(s);
    /* Reachable to the end (a static): the call's user buffer is the user's to keep. */
    static double *buf;
    buf = malloc(2 * kCount * sizeof *buf);
    for (size_t i = 0; i < 2 * kCount; ++i) buf[i] = rank + 1 + (double)(i % 5);
    int known = 0;
    pg_test_step("%s: rank 0 aborted, rank 1 late", name);
    if (rank == 0) {
      pthread_t thread;
      pthread_create(&thread, NULL, abort_later, s);
      const pg_status st = call(s, name, buf, &known);
      pthread_join(thread, NULL);
      PG_TEST_TRUE(st == PG_ERR_ABORTED, "%s ends aborted: %s: %s", name, pg_status_name(st), pg_last_error());
    } else {
      sleep_s(1.3);
      const pg_status st = call(s, name, buf, &known);
      PG_TEST_TRUE(st == PG_OK || (st == PG_ERR_BACKEND && strstr(pg_last_error(), "rank 0 aborted")),
                   "%s on rank 1: %s: %s", name, pg_status_name(st), pg_last_error());
    }
    PG_TEST_TRUE(known, "unknown call '%s'", name);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    keep_mpi_busy(1.0);
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_abort_staged");
  MPI_Finalize();
  return failed;
}
