/* Nonblocking and blocking calls interleaved where the nonblocking ones take
 * different paths: a small allreduce (fairring's fast path, a native start), a
 * large one (on irregular layouts the leaders algorithm), a small one again,
 * then a blocking allreduce, the last rank arriving late. Every rank must
 * finish with the right sums, whichever calls its backend starts natively and
 * whichever it runs on the progress thread. Then the same with the works
 * waited for in reverse order, and with one started but never waited for
 * before a blocking call. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, argc > 2 && strcmp(argv[2], "funneled") == 0 ? MPI_THREAD_FUNNELED
                                                                               : MPI_THREAD_MULTIPLE,
                  &provided);
  pg_test_watchdog("test_mixed_order");
  const char *backend = argc > 1 ? argv[1] : "fairring";
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
  if (s) {
    run_order(s, 0, backend);
    run_order(s, 1, backend);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_mixed_order");
  MPI_Finalize();
  return failed;
}
