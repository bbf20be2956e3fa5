/* Nonblocking and blocking calls interleaved where the nonblocking ones take
 * different paths: a small allreduce (fairring's fast path, a native start), a
 * large one (on irregular layouts the leaders algorithm), a small one again,
 * then a blocking allreduce, the last rank arriving late. Every rank must
 * finish with the right sums, whichever calls its backend starts natively and
 * whichever it runs on the progress thread. Then the same with the works
 * waited for in reverse order, and waited for before the blocking call.
 *
 *   test_mixed_order BACKEND [funneled]
 *
 * Then, with fairring's works that move only when tested: rank 0 starts two
 * small allreduces and waits for a message rank 1 sends once both have
 * finished there (pg_irecv's work, then a blocking pg_recv), and starts two
 * on a duplicate of the strategy before a blocking allreduce on the first:
 * a rank that waits for anything moves the works it started. Last, two large
 * allreduces that some ranks move further than others before the second
 * starts.
 *
 * BACKEND "ordered" is a table backend registered here whose nonblocking
 * allreduces move only when tested and only in start order (as fairring's
 * fast path does), and whose broadcast has no nonblocking entry: an
 * ibroadcast then waits on the progress thread while an allreduce started
 * before it is the caller's, and the allreduce queued after it waits for that
 * one. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_backend.h"
#include "pg_test.h"

enum { kSmall = 16, kLarge = 1 << 20 }; /* floats: 64 B and 4 MiB */

static void late(int rank, int size) {
  if (rank != size - 1) return;
  const struct timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, NULL);
}

/* Rank r contributes r + 1 + i % 7 to element i: sums are exact in float. */
static void fill(float *x, size_t n, int rank) {
  for (size_t i = 0; i < n; ++i) x[i] = (float)(rank + 1 + (int)(i % 7));
}

static int check_sum(const float *y, size_t n, int size, const char *what) {
  for (size_t i = 0; i < n; ++i) {
    const float want = (float)(size * (size + 1) / 2 + size * (int)(i % 7));
    if (!PG_TEST_TRUE(y[i] == want, "%s: element %zu is %g, expected %g", what, i, y[i], want)) return 0;
  }
  return 1;
}

/* `reverse`: wait for the works last to first; `unwaited`: the blocking call
 * comes before any wait. */
static void run_order(pg_strategy *s, int reverse, const char *name) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  float *in_small = malloc(kSmall * sizeof(float)), *in_large = malloc(kLarge * sizeof(float));
  float *out[4];
  for (int k = 0; k < 4; ++k) out[k] = malloc((k == 1 ? kLarge : kSmall) * sizeof(float));
  fill(in_small, kSmall, rank);
  fill(in_large, kLarge, rank);
  pg_work *w[3] = {NULL, NULL, NULL};

  pg_test_step("%s: small, large, small nonblocking, then a blocking allreduce", name);
  late(rank, size);
  PG_TEST_STATUS(pg_iallreduce(s, in_small, out[0], kSmall, PG_FLOAT32, PG_SUM, &w[0]), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, in_large, out[1], kLarge, PG_FLOAT32, PG_SUM, &w[1]), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, in_small, out[2], kSmall, PG_FLOAT32, PG_SUM, &w[2]), PG_OK);
  PG_TEST_STATUS(pg_allreduce(s, in_small, out[3], kSmall, PG_FLOAT32, PG_SUM), PG_OK);
  for (int k = 0; k < 3; ++k) {
    pg_work *x = w[reverse ? 2 - k : k];
    PG_TEST_STATUS(pg_work_wait(x, 60.0), PG_OK);
    PG_TEST_STATUS(pg_work_free(x), PG_OK);
  }
  check_sum(out[0], kSmall, size, "first small");
  check_sum(out[1], kLarge, size, "large");
  check_sum(out[2], kSmall, size, "second small");
  check_sum(out[3], kSmall, size, "blocking");

  pg_test_step("%s: the same, waited for before the blocking call", name);
  late(rank, size);
  PG_TEST_STATUS(pg_iallreduce(s, in_small, out[0], kSmall, PG_FLOAT32, PG_SUM, &w[0]), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, in_large, out[1], kLarge, PG_FLOAT32, PG_SUM, &w[1]), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, in_small, out[2], kSmall, PG_FLOAT32, PG_SUM, &w[2]), PG_OK);
  for (int k = 0; k < 3; ++k) PG_TEST_STATUS(pg_work_wait(w[reverse ? 2 - k : k], 60.0), PG_OK);
  PG_TEST_STATUS(pg_allreduce(s, in_small, out[3], kSmall, PG_FLOAT32, PG_SUM), PG_OK);
  for (int k = 0; k < 3; ++k) PG_TEST_STATUS(pg_work_free(w[k]), PG_OK);
  check_sum(out[1], kLarge, size, "large (waited)");
  check_sum(out[2], kSmall, size, "second small (waited)");

  free(in_small);
  free(in_large);
  for (int k = 0; k < 4; ++k) free(out[k]);
}

/* Rank 0 waits for something else while rank 1 waits for rank 0's started
 * works: a point-to-point work, a blocking receive, another strategy. */
static void run_waits_elsewhere(pg_strategy *s) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  float x[kSmall], y[2][kSmall];
  fill(x, kSmall, rank);
  pg_work *w[2] = {NULL, NULL}, *r = NULL;
  int token = 0;
  for (int blocking = 0; blocking < 2; ++blocking) {
    pg_test_step("two started allreduces, then %s a message sent once they finished", blocking ? "pg_recv" : "a work for");
    late(rank, size);  /* rank 0's works wait for the last rank's: they are not finished at start */
    for (int k = 0; k < 2; ++k) PG_TEST_STATUS(pg_iallreduce(s, x, y[k], kSmall, PG_FLOAT32, PG_SUM, &w[k]), PG_OK);
    if (rank == 0) {
      if (blocking) {
        PG_TEST_STATUS(pg_recv(s, &token, 1, PG_INT32, 1, 7), PG_OK);
      } else {
        PG_TEST_STATUS(pg_irecv(s, &token, 1, PG_INT32, 1, 7, &r), PG_OK);
        PG_TEST_STATUS(pg_work_wait(r, 60.0), PG_OK);
        PG_TEST_STATUS(pg_work_free(r), PG_OK);
      }
      PG_TEST_TRUE(token == 42 + blocking, "the message: %d", token);
    }
    for (int k = 0; k < 2; ++k) PG_TEST_STATUS(pg_work_wait(w[k], 60.0), PG_OK);
    if (rank == 1) {
      token = 42 + blocking;
      PG_TEST_STATUS(pg_send(s, &token, 1, PG_INT32, 0, 7), PG_OK);
    }
    for (int k = 0; k < 2; ++k) {
      check_sum(y[k], kSmall, size, "started allreduce");
      PG_TEST_STATUS(pg_work_free(w[k]), PG_OK);
    }
  }

  pg_test_step("two started allreduces on a duplicate, then a blocking allreduce on the first strategy");
  pg_strategy *d = NULL;
  PG_TEST_STATUS(pg_strategy_create_comm("cpu", pg_strategy_backend(s), MPI_COMM_WORLD, &d), PG_OK);
  if (!d) return;
  float z[kSmall];
  late(rank, size);
  for (int k = 0; k < 2; ++k) PG_TEST_STATUS(pg_iallreduce(d, x, y[k], kSmall, PG_FLOAT32, PG_SUM, &w[k]), PG_OK);
  if (rank == 0) PG_TEST_STATUS(pg_allreduce(s, x, z, kSmall, PG_FLOAT32, PG_SUM), PG_OK);
  for (int k = 0; k < 2; ++k) PG_TEST_STATUS(pg_work_wait(w[k], 60.0), PG_OK);
  if (rank != 0) PG_TEST_STATUS(pg_allreduce(s, x, z, kSmall, PG_FLOAT32, PG_SUM), PG_OK);
  check_sum(z, kSmall, size, "blocking allreduce on the first strategy");
  for (int k = 0; k < 2; ++k) {
    check_sum(y[k], kSmall, size, "started allreduce on the duplicate");
    PG_TEST_STATUS(pg_work_free(w[k]), PG_OK);
  }
  PG_TEST_STATUS(pg_strategy_destroy(d), PG_OK);
}

/* Two large started allreduces that the ranks move unequally: every rank but
 * rank 0 tests the first for a while before it starts the second (on
 * irregular layouts the first's node step then finishes and its next step
 * starts there first, while rank 0 starts the second before that); waited
 * for last to first. Every rank's MPI calls must still match. */
static void run_unequal_progress(pg_strategy *s) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  float *in = malloc(kLarge * sizeof(float)), *out[2] = {malloc(kLarge * sizeof(float)), malloc(kLarge * sizeof(float))};
  fill(in, kLarge, rank);
  pg_work *w[2] = {NULL, NULL};
  pg_test_step("two large started allreduces, the first tested for 50 ms before the second starts on ranks 1 and up");
  PG_TEST_STATUS(pg_iallreduce(s, in, out[0], kLarge, PG_FLOAT32, PG_SUM, &w[0]), PG_OK);
  if (rank != 0) {
    const double until = MPI_Wtime() + 0.05;
    int done = 0;
    while (!done && MPI_Wtime() < until) PG_TEST_STATUS(pg_work_test(w[0], &done), PG_OK);
  }
  PG_TEST_STATUS(pg_iallreduce(s, in, out[1], kLarge, PG_FLOAT32, PG_SUM, &w[1]), PG_OK);
  for (int k = 1; k >= 0; --k) {
    PG_TEST_STATUS(pg_work_wait(w[k], 60.0), PG_OK);
    PG_TEST_STATUS(pg_work_free(w[k]), PG_OK);
    check_sum(out[k], kLarge, size, k ? "second" : "first");
  }
  free(in);
  free(out[0]);
  free(out[1]);
}

/* The "ordered" backend: request t finishes only once request t - 1 has. */
struct ordered {
  MPI_Comm comm;
  unsigned long started, finished;
};
struct ordered_request {
  unsigned long t;
  MPI_Request mpi;
};

static pg_status ordered_create(const pg_backend_context *ctx, void *user, void **state) {
  (void)user;
  struct ordered *o = calloc(1, sizeof *o);
  if (!o) return PG_ERR_NO_MEMORY;
  o->comm = ctx->comm;
  *state = o;
  return PG_OK;
}

static void ordered_destroy(void *state) { free(state); }

static pg_status ordered_iallreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                                    pg_op op, void **request) {
  struct ordered *o = state;
  if (dtype != PG_FLOAT32 || op != PG_SUM) return PG_ERR_UNSUPPORTED;
  struct ordered_request *r = malloc(sizeof *r);
  if (!r) return PG_ERR_NO_MEMORY;
  r->t = ++o->started;
  if (MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, MPI_FLOAT, MPI_SUM, o->comm, &r->mpi) !=
      MPI_SUCCESS) {
    free(r);
    return PG_ERR_BACKEND;
  }
  *request = r;
  return PG_OK;
}

static pg_status ordered_test(void *state, void *request, int *done) {
  struct ordered *o = state;
  struct ordered_request *r = request;
  *done = 0;
  if (o->finished + 1 < r->t) return PG_OK; /* the one before has not finished here */
  if (MPI_Test(&r->mpi, done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return PG_ERR_BACKEND;
  if (*done) o->finished = r->t;
  return PG_OK;
}

static void ordered_request_free(void *state, void *request) {
  (void)state;
  free(request);
}

static pg_status ordered_allreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                                   pg_op op) {
  void *request = NULL;
  pg_status st = ordered_iallreduce(state, send, recv, count, dtype, op, &request);
  for (int done = 0; st == PG_OK && !done;) st = ordered_test(state, request, &done);
  free(request);
  return st;
}

static pg_status ordered_broadcast(void *state, void *buf, size_t count, pg_dtype dtype, int root) {
  const struct ordered *o = state;
  return MPI_Bcast(buf, (int)(count * (size_t)pg_dtype_size(dtype)), MPI_BYTE, root, o->comm) == MPI_SUCCESS
             ? PG_OK
             : PG_ERR_BACKEND;
}

static void register_ordered(void) {
  pg_backend_ops ops = pg_backend_ops_init("ordered", PG_DEVICE_CPU);
  ops.create = ordered_create;
  ops.destroy = ordered_destroy;
  ops.allreduce = ordered_allreduce;
  ops.broadcast = ordered_broadcast;
  ops.iallreduce = ordered_iallreduce;
  ops.test = ordered_test;
  ops.request_free = ordered_request_free;
  PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
}

/* An allreduce the caller starts, an ibroadcast queued behind it, an
 * allreduce queued behind that, then a blocking allreduce. */
static void run_queued(pg_strategy *s) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  float x[kSmall], y[kSmall], z[kSmall], b[kSmall];
  fill(x, kSmall, rank);
  for (int i = 0; i < kSmall; ++i) b[i] = rank == 0 ? (float)(100 + i) : 0.0f;
  pg_work *w[3] = {NULL, NULL, NULL};
  pg_test_step("ordered: iallreduce, ibroadcast (queued), iallreduce (queued), then a blocking allreduce");
  late(rank, size);
  PG_TEST_STATUS(pg_iallreduce(s, x, y, kSmall, PG_FLOAT32, PG_SUM, &w[0]), PG_OK);
  PG_TEST_STATUS(pg_ibroadcast(s, b, kSmall, PG_FLOAT32, 0, &w[1]), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, x, z, kSmall, PG_FLOAT32, PG_SUM, &w[2]), PG_OK);
  float blocking[kSmall];
  PG_TEST_STATUS(pg_allreduce(s, x, blocking, kSmall, PG_FLOAT32, PG_SUM), PG_OK);
  for (int k = 2; k >= 0; --k) {
    PG_TEST_STATUS(pg_work_wait(w[k], 60.0), PG_OK);
    PG_TEST_STATUS(pg_work_free(w[k]), PG_OK);
  }
  check_sum(y, kSmall, size, "first allreduce");
  check_sum(z, kSmall, size, "queued allreduce");
  check_sum(blocking, kSmall, size, "blocking allreduce");
  for (int i = 0; i < kSmall; ++i)
    if (!PG_TEST_TRUE(b[i] == (float)(100 + i), "broadcast element %d: %g", i, b[i])) break;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, argc > 2 && strcmp(argv[2], "funneled") == 0 ? MPI_THREAD_FUNNELED
                                                                               : MPI_THREAD_MULTIPLE,
                  &provided);
  pg_test_watchdog("test_mixed_order");
  const char *backend = argc > 1 ? argv[1] : "fairring";
  const int ordered = strcmp(backend, "ordered") == 0;
  if (ordered) register_ordered();
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
  if (s && ordered) {
    run_queued(s);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  } else if (s) {
    run_order(s, 0, backend);
    run_order(s, 1, backend);
    run_waits_elsewhere(s);
    run_unequal_progress(s);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_mixed_order");
  MPI_Finalize();
  return failed;
}
