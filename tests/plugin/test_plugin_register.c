/* Backends registered at run time with pg_backend_register: a table defined
 * here that implements allreduce only (checked), the operations it lacks and
 * the pairs it refuses running on the default backend (checked against
 * analytic results), and every registration error. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pg_backend.h"
#include "pg_test.h"

/* --- a backend with allreduce only ------------------------------------------ */

typedef struct only_state {
  MPI_Comm comm;
  int calls; /* allreduce calls that ran here */
} only_state;

static int g_creates, g_destroys;
static int g_allreduce_runs; /* allreduce calls this backend ran itself */

static pg_status only_create(const pg_backend_context *ctx, void *user_data, void **state) {
  only_state *st = (only_state *)calloc(1, sizeof *st);
  if (!st) return PG_ERR_NO_MEMORY;
  st->comm = ctx->comm;
  *(int *)user_data += 1;
  *state = st;
  ++g_creates;
  return PG_OK;
}

static void only_destroy(void *state) {
  ++g_destroys;
  free(state);
}

/* SUM on int32 and float64 only; everything else is refused before communicating. */
static pg_status only_allreduce(void *state, const void *send, void *recv, size_t count,
                                pg_dtype dtype, pg_op op) {
  only_state *st = (only_state *)state;
  if (op != PG_SUM || (dtype != PG_INT32 && dtype != PG_FLOAT64)) return PG_ERR_UNSUPPORTED;
  MPI_Datatype type = dtype == PG_INT32 ? MPI_INT32_T : MPI_DOUBLE;
  ++st->calls;
  ++g_allreduce_runs;
  if (count > (size_t)INT32_MAX) return PG_ERR_UNSUPPORTED;
  int rc = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, type, MPI_SUM,
                         st->comm);
  return rc == MPI_SUCCESS ? PG_OK : PG_ERR_BACKEND;
}

/* An allreduce that returns g_returned at once: a status, or a value that is none. */
static int g_returned;
static pg_status returns_status(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                                pg_op op) {
  (void)state, (void)send, (void)recv, (void)count, (void)dtype, (void)op;
  return (pg_status)g_returned;
}

static int g_user_data_creates;

static pg_backend_ops base_table(const char *name) {
  pg_backend_ops ops = pg_backend_ops_init(name, PG_DEVICE_CPU);
  ops.user_data = &g_user_data_creates;
  ops.create = only_create;
  ops.destroy = only_destroy;
  return ops;
}

/* A create that fails on the last rank only. */
static pg_status failing_create(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)user_data;
  *state = NULL;
  if (ctx->rank != ctx->size - 1) return PG_OK;
  ctx->log(PG_LOG_ERROR, "no widget on this node");  /* the reason reaches the message */
  return PG_ERR_UNAVAILABLE;
}

/* An operation that must never be called (set beyond a small struct_size). */
static pg_status must_not_run(void *state, void *buf, size_t count, pg_dtype dtype, int root) {
  (void)state; (void)buf; (void)count; (void)dtype; (void)root;
  fprintf(stderr, "an entry beyond struct_size was called\n");
  abort();
}

static int contains(const char *text, const char *part) { return text && strstr(text, part) != NULL; }

/* --- the uneven entries ------------------------------------------------------ */

static int g_alltoallv_runs;       /* alltoallv calls the table ran itself */
static const size_t *g_caller_counts; /* the caller's array: the table must get a copy */
static int g_gatherv_null_elsewhere = 1; /* gatherv's arrays were NULL on the non-roots */

/* alltoallv of int32 through MPI_Alltoallv (small counts only). */
static pg_status table_alltoallv(void *state, const void *send, const size_t *sendcounts, const size_t *sdispls,
                                 void *recv, const size_t *recvcounts, const size_t *rdispls, pg_dtype dtype) {
  only_state *st = (only_state *)state;
  if (dtype != PG_INT32) return PG_ERR_UNSUPPORTED;
  int size = 0;
  MPI_Comm_size(st->comm, &size);
  int sc[64], sd[64], rc[64], rd[64];
  if (size > 64) return PG_ERR_UNSUPPORTED;
  for (int r = 0; r < size; ++r)
    sc[r] = (int)sendcounts[r], sd[r] = (int)sdispls[r], rc[r] = (int)recvcounts[r], rd[r] = (int)rdispls[r];
  if (sendcounts == g_caller_counts || recvcounts == g_caller_counts) return PG_ERR_INTERNAL;
  ++g_alltoallv_runs;
  return MPI_Alltoallv(send, sc, sd, MPI_INT32_T, recv, rc, rd, MPI_INT32_T, st->comm) == MPI_SUCCESS ? PG_OK
                                                                                                 : PG_ERR_BACKEND;
}

/* gatherv declined (after checking the arrays it got): runs on the default backend. */
static pg_status table_gatherv(void *state, const void *send, size_t sendcount, void *recv, const size_t *recvcounts,
                               const size_t *displs, pg_dtype dtype, int root) {
  only_state *st = (only_state *)state;
  int rank = 0;
  MPI_Comm_rank(st->comm, &rank);
  (void)send, (void)sendcount, (void)recv, (void)dtype;
  if (rank != root && (recvcounts || displs)) g_gatherv_null_elsewhere = 0;
  return PG_ERR_UNSUPPORTED;
}

/* --- registration errors ----------------------------------------------------- */

static void check_registration_errors(void) {
  pg_test_step("registration errors");
  PG_TEST_STATUS(pg_backend_register(NULL), PG_ERR_INVALID_ARGUMENT);

  const char *bad_names[] = {"", "UPPER", "a/b", "../x", "with-dash", "with space"};
  for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; ++i) {
    pg_backend_ops ops = base_table(bad_names[i]);
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
    PG_TEST_TRUE(contains(pg_last_error(), "[a-z0-9_]"), "message for '%s' should say what is accepted: %s",
                 bad_names[i], pg_last_error());
  }
  {
    pg_backend_ops ops = base_table(NULL);
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
  }
  char name64[65], name63[64];
  memset(name64, 'a', 64); name64[64] = '\0';
  memset(name63, 'b', 63); name63[63] = '\0';
  {
    pg_backend_ops ops = base_table(name64);
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
    ops = base_table(name63);
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  {
    /* The name is copied: the caller's buffer may change afterwards. */
    char name[] = "copied_name";
    pg_backend_ops ops = base_table(name);
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
    name[0] = 'X';
    ops = base_table("copied_name");
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT); /* duplicate */
    PG_TEST_TRUE(contains(pg_last_error(), "copied_name"), "duplicate message: %s", pg_last_error());
  }
  {
    pg_backend_ops ops = base_table("mpi"); /* a built-in */
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
    ops = base_table("nccl"); /* registered in every build */
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
  }
  {
    pg_backend_ops ops = base_table("no_create");
    ops.create = NULL;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
    ops = base_table("no_devices");
    ops.devices = 0;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_INVALID_ARGUMENT);
  }
  {
    pg_backend_ops ops = base_table("abi_future");
    ops.abi_version = PG_BACKEND_ABI_VERSION + 1;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_PLUGIN);
    char mine[16], theirs[16];
    snprintf(mine, sizeof mine, "%d", PG_BACKEND_ABI_VERSION);
    snprintf(theirs, sizeof theirs, "%d", PG_BACKEND_ABI_VERSION + 1);
    PG_TEST_TRUE(contains(pg_last_error(), mine) && contains(pg_last_error(), theirs),
                 "the ABI message should name versions %s and %s: %s", theirs, mine, pg_last_error());
    ops.abi_version = 0;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_ERR_PLUGIN);
  }
  {
    /* A table from a newer header: larger, with something set beyond what this
     * library knows → refused; the same size with a zero tail → accepted. */
    const size_t extra = 4 * sizeof(void *);
    unsigned char *big = (unsigned char *)calloc(1, sizeof(pg_backend_ops) + extra);
    pg_backend_ops ops = base_table("bigger_nonzero");
    ops.struct_size = sizeof ops + extra;
    memcpy(big, &ops, sizeof ops);
    big[sizeof ops + 3] = 1;
    PG_TEST_STATUS(pg_backend_register((const pg_backend_ops *)big), PG_ERR_PLUGIN);
    PG_TEST_TRUE(contains(pg_last_error(), "struct_size") || contains(pg_last_error(), "version"),
                 "the size message should name both versions: %s", pg_last_error());
    ops = base_table("bigger_zero");
    ops.struct_size = sizeof ops + extra;
    memset(big, 0, sizeof ops + extra);
    memcpy(big, &ops, sizeof ops);
    PG_TEST_STATUS(pg_backend_register((const pg_backend_ops *)big), PG_OK);
    free(big);
  }
  {
    /* A table from an older, smaller header: entries beyond struct_size are not
     * read (here: garbage that must never be called). */
    pg_backend_ops ops = base_table("smaller_table");
    ops.allreduce = only_allreduce;
    ops.struct_size = offsetof(pg_backend_ops, allreduce) + sizeof ops.allreduce;
    ops.broadcast = must_not_run;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  {
    /* Built against the header before the uneven entries: they are not read. */
    pg_backend_ops ops = base_table("before_uneven");
    ops.struct_size = offsetof(pg_backend_ops, allgatherv);
    ops.allgatherv = (pg_status(*)(void *, const void *, size_t, void *, const size_t *, const size_t *,
                                   pg_dtype))must_not_run;
    ops.alltoallv = (pg_status(*)(void *, const void *, const size_t *, const size_t *, void *, const size_t *,
                                  const size_t *, pg_dtype))must_not_run;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
    ops = base_table("uneven_table");
    ops.alltoallv = table_alltoallv;
    ops.gatherv = table_gatherv;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  {
    pg_backend_ops ops = base_table("cuda_only");
    ops.devices = PG_DEVICE_CUDA;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  {
    pg_backend_ops ops = base_table("returns_status");
    ops.allreduce = returns_status;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  {
    pg_backend_ops ops = base_table("fails_on_last");
    ops.create = failing_create;
    ops.destroy = NULL;
    PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);
  }
  /* Refused tables left nothing behind. */
  char list[4096];
  PG_TEST_STATUS(pg_backends_list(list, sizeof list), PG_OK);
  PG_TEST_TRUE(!contains(list, "abi_future") && !contains(list, "bigger_nonzero") &&
                    !contains(list, "no_create") && !contains(list, "no_devices") &&
                    !contains(list, name64),
               "refused tables are listed: %s", list);
  PG_TEST_TRUE(contains(list, "bigger_zero") && contains(list, "smaller_table") &&
                    contains(list, "copied_name") && contains(list, name63),
               "accepted tables are missing: %s", list);
}

/* --- using the registered backend ---------------------------------------------- */

static void check_only_allreduce(MPI_Comm comm, const char *what) {
  pg_test_step("only_allreduce on %s", what);
  pg_strategy *s = NULL;
  int creates_before = g_user_data_creates;
  PG_TEST_STATUS(pg_strategy_create_comm("cpu", "only_allreduce", comm, &s), PG_OK);
  if (!s) return;
  PG_TEST_TRUE(g_user_data_creates == creates_before + 1, "create did not get user_data");
  PG_TEST_TRUE(strcmp(pg_strategy_backend(s), "only_allreduce") == 0, "backend is %s",
               pg_strategy_backend(s));
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  int my_rank = -1;
  MPI_Comm_rank(comm, &my_rank);
  PG_TEST_TRUE(rank == my_rank, "rank %d, expected %d", rank, my_rank);

  char text[2048];
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(contains(text, "delegated") && contains(text, "broadcast") &&
                    contains(text, "allgather") && contains(text, "barrier"),
               "describe should list the delegated operations: %s", text);
  PG_TEST_TRUE(!contains(strstr(text, "delegated"), "allreduce"),
               "allreduce is implemented, not delegated: %s", text);

  /* Implemented: int32 and float64 SUM, counts 0, 1, P*k+1, large; in and out of place. */
  const size_t counts[] = {0, 1, (size_t)size * 5 + 1, 100003};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c) {
    size_t n = counts[c];
    int32_t *a = (int32_t *)malloc((n + 1) * sizeof *a), *b = (int32_t *)malloc((n + 1) * sizeof *b);
    double *x = (double *)malloc((n + 1) * sizeof *x);
    for (size_t i = 0; i < n; ++i) { a[i] = rank + (int32_t)(i % 11); x[i] = rank * 0.5 + (double)(i % 3); }
    PG_TEST_STATUS(pg_allreduce(s, a, b, n, PG_INT32, PG_SUM), PG_OK);
    PG_TEST_STATUS(pg_allreduce(s, x, x, n, PG_FLOAT64, PG_SUM), PG_OK);
    int wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      if (b[i] != size * (size - 1) / 2 + size * (int32_t)(i % 11)) ++wrong;
      if (x[i] != 0.5 * size * (size - 1) / 2 + size * (double)(i % 3)) ++wrong;
    }
    PG_TEST_TRUE(wrong == 0, "%d wrong elements at count %zu", wrong, n);
    free(a); free(b); free(x);
  }

  /* Refused pairs fall back: int32 MAX, float32 SUM, float64 AVG. */
  int32_t mx = rank, mx_out = -1;
  PG_TEST_STATUS(pg_allreduce(s, &mx, &mx_out, 1, PG_INT32, PG_MAX), PG_OK);
  PG_TEST_TRUE(mx_out == size - 1, "fallback MAX gave %d", (int)mx_out);
  float f[3] = {1.0f, 2.0f, (float)rank};
  PG_TEST_STATUS(pg_allreduce(s, f, f, 3, PG_FLOAT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(f[0] == size && f[1] == 2.0f * size && f[2] == size * (size - 1) / 2.0f,
               "fallback float32 SUM gave %g %g %g", f[0], f[1], f[2]);
  double avg = rank, avg_out = -1;
  PG_TEST_STATUS(pg_allreduce(s, &avg, &avg_out, 1, PG_FLOAT64, PG_AVG), PG_OK);
  PG_TEST_TRUE(avg_out == (size - 1) / 2.0, "fallback AVG gave %g", avg_out);

  /* Declining one pair delegates that call only: the pairs the backend
   * implements still run on it. */
  int runs = g_allreduce_runs;
  int32_t one = 1, total = 0;
  PG_TEST_STATUS(pg_allreduce(s, &one, &total, 1, PG_INT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(total == size, "allreduce after a fallback gave %d", (int)total);
  PG_TEST_TRUE(g_allreduce_runs == runs + 1,
               "after one declined pair, int32 SUM no longer runs on the backend that implements it");

  /* Missing operations fall back, with their results checked. */
  enum { N = 37 };
  int64_t bc[N];
  for (int root = 0; root < size; ++root) {
    for (int i = 0; i < N; ++i) bc[i] = rank == root ? 1000 * root + i : -1;
    PG_TEST_STATUS(pg_broadcast(s, bc, N, PG_INT64, root), PG_OK);
    int wrong = 0;
    for (int i = 0; i < N; ++i) wrong += bc[i] != 1000 * root + i;
    PG_TEST_TRUE(wrong == 0, "fallback broadcast from %d: %d wrong", root, wrong);
  }
  int32_t *gathered = (int32_t *)malloc((size_t)size * N * sizeof *gathered);
  int32_t mine[N];
  for (int i = 0; i < N; ++i) mine[i] = rank * 100 + i;
  PG_TEST_STATUS(pg_allgather(s, mine, gathered, N, PG_INT32), PG_OK);
  int wrong = 0;
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < N; ++i) wrong += gathered[r * N + i] != r * 100 + i;
  PG_TEST_TRUE(wrong == 0, "fallback allgather: %d wrong", wrong);
  free(gathered);
  double red = rank + 1, red_out = 0;
  PG_TEST_STATUS(pg_reduce(s, &red, &red_out, 1, PG_FLOAT64, PG_SUM, size - 1), PG_OK);
  if (rank == size - 1)
    PG_TEST_TRUE(red_out == size * (size + 1) / 2.0, "fallback reduce gave %g", red_out);
  PG_TEST_STATUS(pg_barrier(s), PG_OK);

  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(contains(text, "reduce") && contains(text, "barrier"),
               "describe after fallbacks: %s", text);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
}

static void check_other_backends(void) {
  pg_strategy *s = NULL;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  pg_test_step("smaller_table");
  PG_TEST_STATUS(pg_strategy_create("cpu", "smaller_table", &s), PG_OK);
  if (s) {
    int32_t v = 2, out = 0;
    PG_TEST_STATUS(pg_allreduce(s, &v, &out, 1, PG_INT32, PG_SUM), PG_OK);
    PG_TEST_TRUE(out == 2 * size, "allreduce gave %d", (int)out);
    int32_t b = pg_strategy_rank(s) == 0 ? 7 : 0;
    PG_TEST_STATUS(pg_broadcast(s, &b, 1, PG_INT32, 0), PG_OK); /* NULL for the library */
    PG_TEST_TRUE(b == 7, "broadcast gave %d", (int)b);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    s = NULL;
  }

  /* The uneven collectives: on a table without the entries (built before
   * them) they run on the default backend; a table's own alltoallv runs on it,
   * with the library's copy of the arrays; a declined gatherv falls back. */
  const char *uneven_tables[] = {"before_uneven", "uneven_table"};
  for (int t = 0; t < 2; ++t) {
    pg_test_step("uneven collectives on %s", uneven_tables[t]);
    PG_TEST_STATUS(pg_strategy_create("cpu", uneven_tables[t], &s), PG_OK);
    if (!s) continue;
    const int rank = pg_strategy_rank(s);
    enum { MAXP = 16 };
    int32_t send[MAXP * MAXP], recv[MAXP * MAXP];
    size_t sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
    if (size > MAXP) break;
    /* Rank q sends q + r + 1 elements (value 100 q + r) to rank r. */
    size_t at = 0, from = 0;
    for (int r = 0; r < size; ++r) {
      sc[r] = (size_t)(rank + r + 1), sd[r] = at;
      rc[r] = (size_t)(r + rank + 1), rd[r] = from;
      for (size_t i = 0; i < sc[r]; ++i) send[at + i] = 100 * rank + r;
      at += sc[r], from += rc[r];
    }
    const int runs = g_alltoallv_runs;
    g_caller_counts = sc;
    PG_TEST_STATUS(pg_alltoallv(s, send, sc, sd, recv, rc, rd, PG_INT32), PG_OK);
    int wrong = 0;
    for (int q = 0; q < size; ++q)
      for (size_t i = 0; i < rc[q]; ++i) wrong += recv[rd[q] + i] != 100 * q + rank;
    PG_TEST_TRUE(wrong == 0, "alltoallv on %s: %d wrong", uneven_tables[t], wrong);
    PG_TEST_TRUE(g_alltoallv_runs == runs + (t == 1), "alltoallv ran %d times on the table (expected %d)",
                 g_alltoallv_runs - runs, t == 1);
    int32_t mine[2] = {rank, rank}, all[2 * MAXP];
    size_t counts[MAXP], displs[MAXP];
    for (int r = 0; r < size; ++r) counts[r] = 2, displs[r] = 2 * (size_t)(size - 1 - r);
    const int root = size - 1;
    PG_TEST_STATUS(pg_gatherv(s, mine, 2, all, rank == root ? counts : NULL, rank == root ? displs : NULL, PG_INT32,
                              root),
                   PG_OK);
    if (rank == root)
      for (int q = 0; q < size; ++q)
        PG_TEST_TRUE(all[displs[q]] == q && all[displs[q] + 1] == q, "gatherv on %s: block %d", uneven_tables[t], q);
    PG_TEST_TRUE(g_gatherv_null_elsewhere, "gatherv's arrays reach the table on a rank other than the root");
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    s = NULL;
  }

  /* A table's failure reaches the caller with its own status (PG_ERR_ABORTED
   * included: a table may implement abort); a value that is no status is
   * PG_ERR_BACKEND saying so. Each rank alone (MPI_COMM_SELF): a failure on a
   * strategy of several ranks would also reach the peers (docs/errors.md). */
  const struct {
    int returned;
    pg_status expected;
    const char *message;
  } failures[] = {{PG_ERR_ABORTED, PG_ERR_ABORTED, "allreduce failed with PG_ERR_ABORTED"},
                  {PG_ERR_TIMEOUT, PG_ERR_TIMEOUT, "allreduce failed with PG_ERR_TIMEOUT"},
                  {PG_ERR_ABORTED + 1, PG_ERR_BACKEND, "returned 13, which is not a pg_status"},
                  {-1, PG_ERR_BACKEND, "returned -1, which is not a pg_status"}};
  for (size_t i = 0; i < sizeof failures / sizeof *failures; ++i) {
    pg_test_step("a table's allreduce returns %d", failures[i].returned);
    g_returned = failures[i].returned;
    PG_TEST_STATUS(pg_strategy_create_comm("cpu", "returns_status", MPI_COMM_SELF, &s), PG_OK);
    if (!s) continue;
    int32_t v = 1, out = 0;
    PG_TEST_STATUS(pg_allreduce(s, &v, &out, 1, PG_INT32, PG_SUM), failures[i].expected);
    PG_TEST_TRUE(contains(pg_last_error(), "backend 'returns_status': ") && contains(pg_last_error(), failures[i].message),
                 "the message should say '%s': %s", failures[i].message, pg_last_error());
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    s = NULL;
  }

  pg_test_step("bigger_zero");
  PG_TEST_STATUS(pg_strategy_create("cpu", "bigger_zero", &s), PG_OK);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  s = NULL;

  pg_test_step("cuda_only on cpu");
  PG_TEST_STATUS(pg_strategy_create("cpu", "cuda_only", &s), PG_ERR_UNSUPPORTED);
  PG_TEST_TRUE(s == NULL, "no strategy on failure");

  pg_test_step("refused table is not a backend");
  PG_TEST_STATUS(pg_strategy_create("cpu", "abi_future", &s), PG_ERR_UNKNOWN_BACKEND);

  pg_test_step("create fails on the last rank");
  pg_status rc = pg_strategy_create("cpu", "fails_on_last", &s);
  PG_TEST_TRUE(rc != PG_OK, "create failing on one rank succeeded on this rank");
  int mine = (int)rc, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  PG_TEST_TRUE(lo == hi, "ranks returned different statuses (%d..%d)", lo, hi);
  char rank_text[32];
  snprintf(rank_text, sizeof rank_text, "rank %d", size - 1);
  if (size > 1)
    PG_TEST_TRUE(contains(pg_last_error(), rank_text), "message should name %s: %s", rank_text,
                 pg_last_error());
  PG_TEST_TRUE(contains(pg_last_error(), "no widget on this node"),
               "message should carry the backend's logged reason: %s", pg_last_error());
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  pg_test_watchdog("test_plugin_register");

  check_registration_errors();

  pg_backend_ops ops = base_table("only_allreduce");
  ops.allreduce = only_allreduce;
  PG_TEST_STATUS(pg_backend_register(&ops), PG_OK);

  check_only_allreduce(MPI_COMM_WORLD, "MPI_COMM_WORLD");
  /* A reversed communicator. */
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
  check_only_allreduce(reversed, "a reversed communicator");
  MPI_Comm_free(&reversed);
  PG_TEST_TRUE(g_creates == g_destroys, "%d creates but %d destroys", g_creates, g_destroys);

  check_other_backends();

  int rc = pg_test_verdict(MPI_COMM_WORLD, "test_plugin_register");
  MPI_Finalize();
  return rc;
}
