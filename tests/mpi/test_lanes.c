/* Point-to-point is never held behind a collective (docs/architecture.md,
 * "Running an operation"): MPI lets a rank receive before it joins a
 * collective that its peer started before sending. On 2 ranks, for a small
 * message and one past MPI's eager limit:
 *
 *   isend:    rank 0 starts an allreduce, then sends to rank 1 (a work it
 *             waits for, 20 s at most), then waits for the allreduce; rank 1
 *             receives (blocking), then joins the allreduce (nonblocking);
 *   send:     the same with a blocking send, and rank 1's allreduce blocking;
 *   irecv:    rank 0 starts an allreduce, then receives from rank 1 (a work
 *             it waits for, 20 s at most); rank 1 sends first (blocking).
 *
 *   test_lanes BACKEND     mpi, fairring, plain (a table with a blocking
 *                          allreduce only: its collectives run on the lane's
 *                          worker) or gloo (the plugin; skipped when absent)
 *
 * A send or receive still unfinished after 20 s (a bound that holds on a busy
 * machine) fails the test and ends the job (it was queued behind the
 * allreduce: the program would hang). */
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

enum { kTag = 5 };

static const size_t kSizes[] = {16, 1 << 18}; /* int32: 64 B and 1 MiB */

static int32_t value(size_t i) { return (int32_t)(3 * i + 7); }

/* A point-to-point work that has not finished in 20 s: the lanes failed; the
 * peer never gets its message, so the job ends here. */
static void wait_bounded(pg_work *w, const char *what) {
  const pg_status st = pg_work_wait(w, 20.0);
  if (st == PG_ERR_TIMEOUT) {
    PG_TEST_TRUE(0, "%s: not finished after 20 s: held behind the allreduce", what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  PG_TEST_STATUS(st, PG_OK);
  pg_work_free(w);
}

static void check_message(const int32_t *m, size_t n, const char *what) {
  for (size_t i = 0; i < n; ++i)
    if (!PG_TEST_TRUE(m[i] == value(i), "%s: element %zu is %d, expected %d", what, i, m[i], value(i))) return;
}

static void check_sum(const int32_t *y, size_t n, const char *what) {
  for (size_t i = 0; i < n; ++i) /* ranks 0 and 1 give i + 1 and i + 2 */
    if (!PG_TEST_TRUE(y[i] == (int32_t)(2 * i + 3), "%s: sum %zu is %d, expected %zu", what, i, y[i], 2 * i + 3)) return;
}

static void run(pg_strategy *s, const char *scenario, size_t n) {
  const int rank = pg_strategy_rank(s);
  int32_t *reduced = malloc(n * sizeof(int32_t)), *message = malloc(n * sizeof(int32_t));
  for (size_t i = 0; i < n; ++i) {
    reduced[i] = (int32_t)(i + 1 + (size_t)rank);
    message[i] = rank == (strcmp(scenario, "irecv") == 0 ? 1 : 0) ? value(i) : -1;
  }
  pg_test_step("%s, %zu elements", scenario, n);
  pg_work *all = NULL, *p2p = NULL;
  if (rank == 0) {
    PG_TEST_STATUS(pg_iallreduce(s, reduced, reduced, n, PG_INT32, PG_SUM, &all), PG_OK);
    if (strcmp(scenario, "isend") == 0) {
      PG_TEST_STATUS(pg_isend(s, message, n, PG_INT32, 1, kTag, &p2p), PG_OK);
      wait_bounded(p2p, "the send");
    } else if (strcmp(scenario, "send") == 0) {
      PG_TEST_STATUS(pg_send(s, message, n, PG_INT32, 1, kTag), PG_OK);
    } else {
      PG_TEST_STATUS(pg_irecv(s, message, n, PG_INT32, 1, kTag, &p2p), PG_OK);
      wait_bounded(p2p, "the receive");
      check_message(message, n, "received by rank 0");
    }
    PG_TEST_STATUS(pg_work_wait(all, -1), PG_OK);
    pg_work_free(all);
  } else {
    if (strcmp(scenario, "irecv") == 0) {
      PG_TEST_STATUS(pg_send(s, message, n, PG_INT32, 0, kTag), PG_OK);
    } else {
      PG_TEST_STATUS(pg_recv(s, message, n, PG_INT32, 0, kTag), PG_OK);
      check_message(message, n, "received by rank 1");
    }
    if (strcmp(scenario, "send") == 0) {
      PG_TEST_STATUS(pg_allreduce(s, reduced, reduced, n, PG_INT32, PG_SUM), PG_OK);
    } else {
      PG_TEST_STATUS(pg_iallreduce(s, reduced, reduced, n, PG_INT32, PG_SUM, &all), PG_OK);
      PG_TEST_STATUS(pg_work_wait(all, -1), PG_OK);
      pg_work_free(all);
    }
  }
  check_sum(reduced, n, scenario);
  free(reduced);
  free(message);
}

int main(int argc, char **argv) {
  int level = 0, size = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  pg_test_watchdog("test_lanes");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *backend = argc > 1 ? argv[1] : "mpi";
  if (size != 2 || level < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "test_lanes: needs 2 ranks and MPI_THREAD_MULTIPLE; skipped\n");
    MPI_Finalize();
    return PG_TEST_SKIP;
  }
  if (strcmp(backend, "plain") == 0) PG_TEST_STATUS(pg_test_register_plain(), PG_OK);
  pg_strategy *s = NULL;
  const pg_status made = pg_strategy_create("cpu", backend, &s);
  if (strcmp(backend, "gloo") == 0 && made == PG_ERR_UNKNOWN_BACKEND) {
    fprintf(stderr, "test_lanes: the gloo plugin is not built; skipped\n");
    MPI_Finalize();
    return PG_TEST_SKIP;
  }
  PG_TEST_STATUS(made, PG_OK);
  if (made == PG_OK) {
    static const char *const scenarios[] = {"isend", "send", "irecv"};
    for (size_t k = 0; k < sizeof scenarios / sizeof *scenarios; ++k)
      for (size_t z = 0; z < sizeof kSizes / sizeof *kSizes; ++z) run(s, scenarios[k], kSizes[z]);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_lanes");
  MPI_Finalize();
  return failed;
}
