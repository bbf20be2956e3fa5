/* Plugins found through PGS_PLUGIN_PATH: the ring example selected by the
 * argument and by PGS_BACKEND, with its results checked; and the loader's
 * errors: nothing found (the message lists where it looked), relative and
 * empty path entries, broken plugins, and a plugin missing on one rank.
 *
 * Directories come from the build (compile definitions):
 *   PG_TEST_PLUGIN_DIR  the build tree's plugin folder (libpg_backend_ring.so)
 *   PG_TEST_BROKEN_DIR  test plugins: noinit, initfails, wrongname, garbage, onerank,
 *                       and alias (a link to the ring plugin)
 *   PG_TEST_EMPTY_DIR   an existing folder with no plugin in it */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <pthread.h>

#include "pg_strategy.h"
#include "pg_test.h"

static int contains(const char *text, const char *part) { return text && strstr(text, part) != NULL; }

static void set_env(const char *name, const char *value) {
  if (value) setenv(name, value, 1);
  else unsetenv(name);
}

/* Every rank got the same status. */
static void check_same_status_everywhere(pg_status rc, const char *what) {
  int mine = (int)rc, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  PG_TEST_TRUE(lo == hi, "%s: ranks returned different statuses (%d..%d)", what, lo, hi);
}

static void check_ring(pg_strategy *s) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  PG_TEST_TRUE(strcmp(pg_strategy_backend(s), "ring") == 0, "backend is %s", pg_strategy_backend(s));

  /* Counts 0, 1, fewer than ranks, P*k+1, one that spans several segments. */
  const size_t counts[] = {0, 1, 2, (size_t)size * 7 + 1, (size_t)3 << 18 | 5};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; ++c) {
    const size_t n = counts[c];
    pg_test_step("ring allreduce count %zu", n);
    float *a = (float *)malloc((n + 1) * sizeof *a), *b = (float *)malloc((n + 1) * sizeof *b);
    int64_t *x = (int64_t *)malloc((n + 1) * sizeof *x);
    for (size_t i = 0; i < n; ++i) {
      a[i] = (float)(rank + (int)(i % 13));
      x[i] = ((int64_t)1 << 40) * rank + (int64_t)i;
    }
    PG_TEST_STATUS(pg_allreduce(s, a, b, n, PG_FLOAT32, PG_SUM), PG_OK); /* out of place */
    PG_TEST_STATUS(pg_allreduce(s, x, x, n, PG_INT64, PG_SUM), PG_OK);   /* in place */
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      if (b[i] != (float)(size * (size - 1) / 2 + size * (int)(i % 13))) ++wrong;
      if (x[i] != ((int64_t)1 << 40) * (size * (size - 1) / 2) + (int64_t)size * (int64_t)i) ++wrong;
    }
    PG_TEST_TRUE(wrong == 0, "ring allreduce: %zu wrong elements at count %zu", wrong, n);
    free(a); free(b); free(x);
  }

  /* Not implemented by ring: falls back to mpi. */
  pg_test_step("ring fallbacks");
  int32_t v = rank, mx = -1;
  PG_TEST_STATUS(pg_allreduce(s, &v, &mx, 1, PG_INT32, PG_MAX), PG_OK);
  PG_TEST_TRUE(mx == size - 1, "fallback MAX gave %d", (int)mx);
  double d = size > 1 ? (rank == 1 ? 2.5 : 0.0) : 2.5;
  PG_TEST_STATUS(pg_broadcast(s, &d, 1, PG_FLOAT64, size > 1 ? 1 : 0), PG_OK);
  PG_TEST_TRUE(d == 2.5, "fallback broadcast gave %g", d);
  char text[2048];
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(contains(text, "delegated") && contains(text, "broadcast"),
               "describe should list delegated operations: %s", text);
}

/* Several threads ask for the same plugin at once, each creating a strategy
 * on its own communicator: the plugin is loaded once (a second init would fail
 * to register its name again) and every create succeeds. */
enum { THREADS = 4 };
typedef struct thread_arg {
  MPI_Comm comm;
  pg_status status;
  char error[512];
} thread_arg;

static void *create_in_thread(void *p) {
  thread_arg *a = (thread_arg *)p;
  pg_strategy *s = NULL;
  a->status = pg_strategy_create_comm("cpu", "ring", a->comm, &s);
  snprintf(a->error, sizeof a->error, "%s", a->status == PG_OK ? "" : pg_last_error());
  if (s) {
    float v = 1.0f, sum = 0.0f;
    if (pg_allreduce(s, &v, &sum, 1, PG_FLOAT32, PG_SUM) != PG_OK || sum != (float)pg_strategy_size(s))
      a->status = PG_ERR_INTERNAL;
    pg_strategy_destroy(s);
  }
  return NULL;
}

static void check_concurrent_load(int thread_level) {
  pg_test_step("concurrent load");
  if (thread_level < MPI_THREAD_MULTIPLE) return;
  set_env("PGS_PLUGIN_PATH", PG_TEST_PLUGIN_DIR);
  set_env("PGS_BACKEND", NULL);
  /* The first create of the process runs alone. */
  pg_strategy *first = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "mpi", &first), PG_OK);
  pg_strategy_destroy(first);
  thread_arg args[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    MPI_Comm_dup(MPI_COMM_WORLD, &args[i].comm);
    args[i].status = PG_ERR_INTERNAL;
  }
  for (int i = 0; i < THREADS; ++i) pthread_create(&threads[i], NULL, create_in_thread, &args[i]);
  for (int i = 0; i < THREADS; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < THREADS; ++i) {
    PG_TEST_TRUE(args[i].status == PG_OK, "thread %d: %s: %s", i, pg_status_name(args[i].status),
                 args[i].error);
    MPI_Comm_free(&args[i].comm);
  }
}

static void check_load_by_argument(void) {
  pg_test_step("ring by argument");
  set_env("PGS_PLUGIN_PATH", PG_TEST_EMPTY_DIR ":" PG_TEST_PLUGIN_DIR); /* second entry has it */
  set_env("PGS_BACKEND", NULL);
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "ring", &s), PG_OK);
  if (s) {
    check_ring(s);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
}

static void check_load_by_env(void) {
  pg_test_step("ring by PGS_BACKEND");
  set_env("PGS_PLUGIN_PATH", PG_TEST_PLUGIN_DIR);
  set_env("PGS_BACKEND", "cpu:ring");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (s) {
    char text[2048];
    PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
    PG_TEST_TRUE(contains(text, "PGS_BACKEND"), "describe should say PGS_BACKEND chose: %s", text);
    check_ring(s);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  set_env("PGS_BACKEND", NULL);
}

static void check_not_found(void) {
  pg_test_step("plugin not found");
  set_env("PGS_PLUGIN_PATH", PG_TEST_EMPTY_DIR);
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "no_such_backend", &s), PG_ERR_UNKNOWN_BACKEND);
  PG_TEST_TRUE(s == NULL, "no strategy on failure");
  const char *msg = pg_last_error();
  PG_TEST_TRUE(contains(msg, PG_TEST_EMPTY_DIR "/libpg_backend_no_such_backend.so"),
               "the message should list where it looked: %s", msg);
  PG_TEST_TRUE(contains(msg, "mpi"), "the message should list the registered backends: %s", msg);

  pg_test_step("invalid names are never turned into paths");
  PG_TEST_STATUS(pg_strategy_create("cpu", "../ring", &s), PG_ERR_UNKNOWN_BACKEND);
  PG_TEST_STATUS(pg_strategy_create("cpu", "Ring", &s), PG_ERR_UNKNOWN_BACKEND);
}

static void check_bad_path(void) {
  pg_strategy *s = NULL;
  pg_test_step("relative PGS_PLUGIN_PATH entry");
  set_env("PGS_PLUGIN_PATH", PG_TEST_PLUGIN_DIR ":relative/dir");
  PG_TEST_STATUS(pg_strategy_create("cpu", "ring", &s), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_TRUE(contains(pg_last_error(), "PGS_PLUGIN_PATH") && contains(pg_last_error(), "relative/dir"),
               "the message should name the variable and the entry: %s", pg_last_error());
  pg_test_step("empty PGS_PLUGIN_PATH entry");
  set_env("PGS_PLUGIN_PATH", PG_TEST_PLUGIN_DIR "::" PG_TEST_EMPTY_DIR);
  PG_TEST_STATUS(pg_strategy_create("cpu", "ring", &s), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_TRUE(contains(pg_last_error(), "PGS_PLUGIN_PATH"), "message: %s", pg_last_error());
  set_env("PGS_PLUGIN_PATH", NULL);
}

static void check_broken(const char *name, const char *expected_part) {
  pg_test_step("broken plugin %s", name);
  pg_strategy *s = NULL;
  pg_status rc = pg_strategy_create("cpu", name, &s);
  PG_TEST_TRUE(rc == PG_ERR_PLUGIN, "plugin %s: %s, expected PG_ERR_PLUGIN: %s", name,
               pg_status_name(rc), pg_last_error());
  PG_TEST_TRUE(s == NULL, "no strategy on failure");
  char file[256];
  snprintf(file, sizeof file, "libpg_backend_%s.so", name);
  PG_TEST_TRUE(contains(pg_last_error(), file), "the message should name the file: %s",
               pg_last_error());
  PG_TEST_TRUE(contains(pg_last_error(), expected_part), "the message should say '%s': %s",
               expected_part, pg_last_error());
  check_same_status_everywhere(rc, name);
}

static void check_broken_plugins(void) {
  set_env("PGS_PLUGIN_PATH", PG_TEST_BROKEN_DIR);
  check_broken("noinit", "pg_backend_plugin_init");
  check_broken("initfails", "PG_ERR_INVALID_ARGUMENT"); /* what its init returned... */
  check_broken("initfails", "Init-Fails");              /* ...and the error it set */
  check_broken("wrongname", "wrongname_other");
  check_broken("garbage", "cannot load");                /* dlopen's error */
  check_broken("noinit", "pg_backend_plugin_init");     /* the same answer again */
  check_broken("alias", "already loaded");               /* a link to the ring plugin */
  set_env("PGS_PLUGIN_PATH", NULL);
}

static void check_missing_on_one_rank(void) {
  pg_test_step("plugin missing on rank 0");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  set_env("PGS_PLUGIN_PATH", rank == 0 ? PG_TEST_EMPTY_DIR : PG_TEST_BROKEN_DIR);
  pg_strategy *s = NULL;
  pg_status rc = pg_strategy_create("cpu", "onerank", &s);
  PG_TEST_TRUE(rc == PG_ERR_UNKNOWN_BACKEND, "got %s, expected PG_ERR_UNKNOWN_BACKEND on every rank: %s",
               pg_status_name(rc), pg_last_error());
  PG_TEST_TRUE(s == NULL, "no strategy on failure");
  check_same_status_everywhere(rc, "missing on one rank");
  if (size > 1)
    PG_TEST_TRUE(contains(pg_last_error(), "rank 0"), "the message should name rank 0: %s",
                 pg_last_error());
  PG_TEST_TRUE(contains(pg_last_error(), "libpg_backend_onerank.so"),
               "the message should say what rank 0 looked for: %s", pg_last_error());

  pg_test_step("plugin found on every rank afterwards");
  set_env("PGS_PLUGIN_PATH", PG_TEST_BROKEN_DIR);
  PG_TEST_STATUS(pg_strategy_create("cpu", "onerank", &s), PG_OK);
  if (s) {
    int32_t v = 1, out = 0;
    PG_TEST_STATUS(pg_allreduce(s, &v, &out, 1, PG_INT32, PG_SUM), PG_OK);
    PG_TEST_TRUE(out == size, "allreduce on a backend without operations gave %d", (int)out);
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  }
  set_env("PGS_PLUGIN_PATH", NULL);
}

int main(int argc, char **argv) {
  int level = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  pg_test_watchdog("test_plugin_load");
  check_not_found();
  check_concurrent_load(level);
  check_load_by_argument();
  check_load_by_env();
  check_bad_path();
  check_broken_plugins();
  check_missing_on_one_rank();
  int rc = pg_test_verdict(MPI_COMM_WORLD, "test_plugin_load");
  MPI_Finalize();
  return rc;
}
