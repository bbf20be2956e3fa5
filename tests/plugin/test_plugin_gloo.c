/* What the gloo plugin adds beyond the conformance suite (test_collectives
 * runs every collective x dtype x op on it, tests/plugin/CMakeLists.txt):
 * messages large enough for many TCP chunks, broadcast from every root, a
 * second strategy on a reversed communicator, describe's list of what gloo
 * lacks, nonblocking calls on the progress thread, and GLOO_SOCKET_IFNAME.
 * PG_TEST_PLUGIN_DIR is the build tree's plugin folder. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pg_strategy.h"
#include "pg_test.h"

/* gloo's allreduce against the mpi backend's, bit for bit (small integers:
 * exact in every order). */
static void compare_allreduce(pg_strategy *g, pg_strategy *m, pg_dtype t, pg_op op, size_t n,
                              int in_place) {
  pg_test_step("allreduce %s %s count %zu%s", pg_dtype_name(t), pg_op_name(op), n, in_place ? " in place" : "");
  const size_t es = pg_dtype_size(t), bytes = n * es + 1;
  char *send = (char *)malloc(bytes), *got = (char *)malloc(bytes), *want = (char *)malloc(bytes);
  const int rank = pg_strategy_rank(g);
  for (size_t i = 0; i < n; ++i) {
    const int v = 1 + (int)((i * 7 + (size_t)rank * 3) % 3);
    if (t == PG_FLOAT32) ((float *)send)[i] = (float)v;
    else ((int64_t *)send)[i] = v;
  }
  memcpy(got, send, bytes);
  pg_status rc = pg_allreduce(g, in_place ? got : send, got, n, t, op);
  PG_TEST_TRUE(rc == PG_OK, "gloo allreduce %s count %zu: %s: %s", pg_dtype_name(t), n, pg_status_name(rc),
               pg_last_error());
  PG_TEST_STATUS(pg_allreduce(m, send, want, n, t, op), PG_OK);
  PG_TEST_TRUE(rc != PG_OK || memcmp(got, want, n * es) == 0, "gloo allreduce %s %s count %zu%s differs from mpi",
               pg_dtype_name(t), pg_op_name(op), n, in_place ? " in place" : "");
  free(send); free(got); free(want);
}

static void check_allreduce(pg_strategy *g, pg_strategy *m) {
  compare_allreduce(g, m, PG_FLOAT32, PG_SUM, 100003, 0);
  compare_allreduce(g, m, PG_INT64, PG_MAX, 100003, 1);
}

static void check_broadcast(pg_strategy *g) {
  const int rank = pg_strategy_rank(g), size = pg_strategy_size(g);
  const size_t counts[] = {4099, 1 << 20};
  for (int root = 0; root < size; ++root)
    for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c) {
      const size_t n = counts[c];
      pg_test_step("broadcast root %d count %zu", root, n);
      double *buf = (double *)malloc((n + 1) * sizeof *buf);
      for (size_t i = 0; i < n; ++i) buf[i] = rank == root ? (double)(root * 1000003 + i) : -1.0;
      PG_TEST_STATUS(pg_broadcast(g, buf, n, PG_FLOAT64, root), PG_OK);
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += buf[i] != (double)(root * 1000003 + i);
      PG_TEST_TRUE(wrong == 0, "broadcast root %d count %zu: %zu wrong", root, n, wrong);
      free(buf);
    }
  /* Another dtype: bytes are bytes. */
  uint16_t h[5];
  for (int i = 0; i < 5; ++i) h[i] = (uint16_t)(rank == 0 ? 0x3C00 + i : 0);
  PG_TEST_STATUS(pg_broadcast(g, h, 5, PG_FLOAT16, 0), PG_OK);
  PG_TEST_TRUE(h[4] == 0x3C04, "fp16 broadcast");
}

static void check_allgather(pg_strategy *g) {
  const int rank = pg_strategy_rank(g), size = pg_strategy_size(g);
  const size_t counts[] = {333, 1 << 18};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c)
    for (int in_place = 0; in_place < 2; ++in_place) {
      const size_t n = counts[c];
      pg_test_step("allgather count %zu%s", n, in_place ? " in place" : "");
      int32_t *out = (int32_t *)malloc(((size_t)size * n + 1) * sizeof *out);
      int32_t *mine = in_place ? out + (size_t)rank * n : (int32_t *)malloc((n + 1) * sizeof *mine);
      for (size_t i = 0; i < (size_t)size * n; ++i) out[i] = -1;
      for (size_t i = 0; i < n; ++i) mine[i] = rank * 1000000 + (int32_t)i;
      PG_TEST_STATUS(pg_allgather(g, mine, out, n, PG_INT32), PG_OK);
      size_t wrong = 0;
      for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < n; ++i) wrong += out[(size_t)r * n + i] != r * 1000000 + (int32_t)i;
      PG_TEST_TRUE(wrong == 0, "allgather count %zu%s: %zu wrong", n, in_place ? " in place" : "",
                   wrong);
      if (!in_place) free(mine);
      free(out);
    }
}

static void check_fallbacks(pg_strategy *g) {
  pg_test_step("operations gloo lacks");
  const int rank = pg_strategy_rank(g), size = pg_strategy_size(g);
  int64_t v = rank + 1, sum = 0;
  PG_TEST_STATUS(pg_reduce(g, &v, &sum, 1, PG_INT64, PG_SUM, 0), PG_OK);
  if (rank == 0) PG_TEST_TRUE(sum == (int64_t)size * (size + 1) / 2, "reduce gave %lld", (long long)sum);
  int32_t *all = (int32_t *)malloc((size_t)size * sizeof *all), one = -1;
  for (int r = 0; r < size; ++r) all[r] = r * r;
  PG_TEST_STATUS(pg_scatter(g, all, &one, 1, PG_INT32, 0), PG_OK);
  PG_TEST_TRUE(one == rank * rank, "scatter gave %d", (int)one);
  free(all);
  char text[2048];
  PG_TEST_STATUS(pg_strategy_describe(g, text, sizeof text), PG_OK);
  const char *delegated = strstr(text, "delegated");
  PG_TEST_TRUE(delegated && strstr(delegated, "reduce") && strstr(delegated, "scatter") &&
                    !strstr(delegated, "broadcast") && !strstr(delegated, "barrier"),
               "describe should list exactly what gloo lacks: %s", text);
}

/* Nonblocking calls on gloo run on the library's progress thread (at
 * MPI_THREAD_MULTIPLE) or inline; either way in order with blocking calls. */
static void check_nonblocking(pg_strategy *g) {
  pg_test_step("nonblocking");
  const int rank = pg_strategy_rank(g), size = pg_strategy_size(g);
  enum { N = 70001 };
  float *a = (float *)malloc(N * sizeof *a), *b = (float *)malloc(N * sizeof *b);
  for (int i = 0; i < N; ++i) a[i] = (float)(rank + i % 3);
  pg_work *w1 = NULL, *w2 = NULL;
  PG_TEST_STATUS(pg_iallreduce(g, a, a, N, PG_FLOAT32, PG_SUM, &w1), PG_OK);
  int32_t root_value = rank == 0 ? 42 : 0;
  PG_TEST_STATUS(pg_ibroadcast(g, &root_value, 1, PG_INT32, 0, &w2), PG_OK);
  PG_TEST_STATUS(pg_work_wait(w1, -1), PG_OK);
  PG_TEST_STATUS(pg_work_wait(w2, -1), PG_OK);
  PG_TEST_STATUS(pg_work_free(w1), PG_OK);
  PG_TEST_STATUS(pg_work_free(w2), PG_OK);
  PG_TEST_STATUS(pg_allreduce(g, a, b, N, PG_FLOAT32, PG_MAX), PG_OK); /* blocking, after */
  int wrong = root_value != 42;
  for (int i = 0; i < N; ++i) wrong += a[i] != (float)(size * (size - 1) / 2 + size * (i % 3)) || b[i] != a[i];
  PG_TEST_TRUE(wrong == 0, "nonblocking: %d wrong", wrong);
  free(a); free(b);
}

/* GLOO_SOCKET_IFNAME picks the interface; a bad one fails create on every rank. */
static void check_iface(pg_strategy *m) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  pg_strategy *s = NULL;
  pg_test_step("GLOO_SOCKET_IFNAME=lo");
  setenv("GLOO_SOCKET_IFNAME", "lo,eth0", 1); /* the first entry is used */
  PG_TEST_STATUS(pg_strategy_create("cpu", "gloo", &s), PG_OK);
  if (s) {
    compare_allreduce(s, m, PG_FLOAT64, PG_SUM, 1000, 0);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    s = NULL;
  }
  if (size > 1) { /* one rank needs no connection at all */
    pg_test_step("GLOO_SOCKET_IFNAME=no_such_iface9");
    setenv("GLOO_SOCKET_IFNAME", "no_such_iface9", 1);
    pg_status rc = pg_strategy_create("cpu", "gloo", &s);
    PG_TEST_TRUE(rc == PG_ERR_BACKEND, "create on a missing interface: %s: %s", pg_status_name(rc),
                 pg_last_error());
    PG_TEST_TRUE(s == NULL, "no strategy on failure");
    int mine = (int)rc, lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    PG_TEST_TRUE(lo == hi, "ranks returned different statuses (%d..%d)", lo, hi);
  }
  unsetenv("GLOO_SOCKET_IFNAME");
}

int main(int argc, char **argv) {
  int level = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  pg_test_watchdog("test_plugin_gloo");
  setenv("PGS_PLUGIN_PATH", PG_TEST_PLUGIN_DIR, 1);

  pg_strategy *g = NULL, *m = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "gloo", &g), PG_OK);
  PG_TEST_STATUS(pg_strategy_create("cpu", "mpi", &m), PG_OK);
  if (g && m) {
    PG_TEST_TRUE(strcmp(pg_strategy_backend(g), "gloo") == 0, "backend %s", pg_strategy_backend(g));
    check_allreduce(g, m);
    check_broadcast(g);
    check_allgather(g);
    pg_test_step("barrier");
    for (int i = 0; i < 5; ++i) PG_TEST_STATUS(pg_barrier(g), PG_OK);
    check_fallbacks(g);
    check_nonblocking(g);

    /* A second gloo strategy on a reversed communicator, used alongside the first. */
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    pg_strategy *r = NULL;
    PG_TEST_STATUS(pg_strategy_create_comm("cpu", "gloo", reversed, &r), PG_OK);
    if (r) {
      PG_TEST_TRUE(pg_strategy_rank(r) == size - 1 - rank, "rank on the reversed communicator");
      check_allgather(r);
      check_broadcast(r);
      compare_allreduce(r, m, PG_FLOAT32, PG_SUM, 4097, 0);
      PG_TEST_STATUS(pg_strategy_destroy(r), PG_OK);
    }
    MPI_Comm_free(&reversed);
    compare_allreduce(g, m, PG_INT64, PG_SUM, 4097, 1);
    check_iface(m);
  }
  PG_TEST_STATUS(pg_strategy_destroy(g), PG_OK);
  PG_TEST_STATUS(pg_strategy_destroy(m), PG_OK);

  int rc = pg_test_verdict(MPI_COMM_WORLD, "test_plugin_gloo");
  MPI_Finalize();
  return rc;
}
