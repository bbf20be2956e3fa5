/* The gloo plugin checked against the mpi backend: allreduce for every dtype
 * and op it implements, broadcast from every root, allgather in and out of
 * place, barrier; the pairs it refuses (AVG, fp16/bf16, bitwise) and the
 * operations it lacks give the same results through the fallback.
 * PG_TEST_PLUGIN_DIR is the build tree's plugin folder. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pg_strategy.h"
#include "pg_test.h"

static size_t dtype_size(pg_dtype t) {
  switch (t) {
    case PG_INT8: case PG_UINT8: return 1;
    case PG_FLOAT16: case PG_BFLOAT16: return 2;
    case PG_INT32: case PG_UINT32: case PG_FLOAT32: return 4;
    default: return 8;
  }
}

static const char *dtype_name(pg_dtype t) {
  static const char *names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "float16", "bfloat16", "float32", "float64"};
  return names[t];
}

/* Element i of rank r, small enough that every op is exact in every type:
 * values 1..3, so a product over 3 ranks is at most 27. */
static void fill(void *buf, size_t n, pg_dtype t, int rank, int salt) {
  for (size_t i = 0; i < n; ++i) {
    int v = 1 + (int)((i * 7 + (size_t)rank * 3 + (size_t)salt) % 3);
    switch (t) {
      case PG_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
      case PG_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
      case PG_INT32: ((int32_t *)buf)[i] = v; break;
      case PG_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
      case PG_INT64: ((int64_t *)buf)[i] = v; break;
      case PG_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
      /* 1.0, 2.0, 3.0 in IEEE half and bfloat16 */
      case PG_FLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(v == 1 ? 0x3C00 : v == 2 ? 0x4000 : 0x4200); break;
      case PG_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(v == 1 ? 0x3F80 : v == 2 ? 0x4000 : 0x4040); break;
      case PG_FLOAT32: ((float *)buf)[i] = (float)v; break;
      case PG_FLOAT64: ((double *)buf)[i] = (double)v; break;
    }
  }
}

static void compare_allreduce(pg_strategy *g, pg_strategy *m, pg_dtype t, pg_op op, size_t n,
                              int in_place) {
  pg_test_step("allreduce %s op %d count %zu%s", dtype_name(t), (int)op, n, in_place ? " in place" : "");
  const size_t bytes = n * dtype_size(t) + 1;
  char *send = (char *)malloc(bytes), *got = (char *)malloc(bytes), *want = (char *)malloc(bytes);
  const int rank = pg_strategy_rank(g);
  fill(send, n, t, rank, (int)op);
  pg_status rc;
  if (in_place) {
    memcpy(got, send, bytes);
    rc = pg_allreduce(g, got, got, n, t, op);
  } else {
    rc = pg_allreduce(g, send, got, n, t, op);
  }
  PG_TEST_TRUE(rc == PG_OK, "gloo allreduce %s op %d count %zu: %s: %s", dtype_name(t), (int)op, n,
               pg_status_name(rc), pg_last_error());
  PG_TEST_STATUS(pg_allreduce(m, send, want, n, t, op), PG_OK);
  PG_TEST_TRUE(rc != PG_OK || memcmp(got, want, n * dtype_size(t)) == 0,
               "gloo allreduce %s op %d count %zu%s differs from mpi", dtype_name(t), (int)op, n,
               in_place ? " in place" : "");
  free(send); free(got); free(want);
}

static void check_allreduce(pg_strategy *g, pg_strategy *m) {
  const int size = pg_strategy_size(g);
  const size_t counts[] = {0, 1, (size_t)size * 3 + 1, 100003};
  const pg_dtype native[] = {PG_INT8, PG_UINT8, PG_INT32, PG_UINT32, PG_INT64, PG_UINT64,
                             PG_FLOAT32, PG_FLOAT64};
  const pg_op ops[] = {PG_SUM, PG_PROD, PG_MIN, PG_MAX};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c)
    for (size_t d = 0; d < sizeof native / sizeof *native; ++d)
      for (size_t o = 0; o < sizeof ops / sizeof *ops; ++o)
        compare_allreduce(g, m, native[d], ops[o], counts[c], (int)((c + d + o) % 2));

  /* Refused by gloo, run by the fallback. */
  compare_allreduce(g, m, PG_FLOAT32, PG_AVG, 1001, 0);
  compare_allreduce(g, m, PG_FLOAT64, PG_AVG, 1001, 1);
  compare_allreduce(g, m, PG_FLOAT16, PG_SUM, 1001, 0);
  compare_allreduce(g, m, PG_BFLOAT16, PG_MAX, 1001, 1);
  compare_allreduce(g, m, PG_INT32, PG_BAND, 1001, 0);
  compare_allreduce(g, m, PG_UINT64, PG_BXOR, 1001, 1);
}

static void check_broadcast(pg_strategy *g) {
  const int rank = pg_strategy_rank(g), size = pg_strategy_size(g);
  const size_t counts[] = {0, 1, 4099, 1 << 20};
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
  const size_t counts[] = {0, 1, 333, 1 << 18};
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
