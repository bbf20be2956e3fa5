/* Bad input: every case returns the documented status with a message naming
 * the bad value, and nothing breaks: the strategy stays usable afterwards. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_backend.h" /* pg_dtype_to_double, pg_dtype_from_double */
#include "pg_test.h"

static void expect_message(const char *needle) {
  PG_TEST_TRUE(strstr(pg_last_error(), needle) != NULL, "message '%s' does not mention '%s'",
               pg_last_error(), needle);
}

/* Sets `variable` to `value` (and leaves it set): creating a strategy on the CPU
 * with `backend` fails with PG_ERR_INVALID_ARGUMENT and a message that mentions
 * `needle` and, unless NULL, `other_needle`. */
static void expect_bad_setting(const char *backend, const char *variable, const char *value, const char *needle,
                               const char *other_needle) {
  pg_strategy *s = NULL;
  setenv(variable, value, 1);
  pg_status got = pg_strategy_create("cpu", backend, &s);
  PG_TEST_TRUE(got == PG_ERR_INVALID_ARGUMENT,
               "%s='%s': pg_strategy_create returned %s, expected PG_ERR_INVALID_ARGUMENT", variable, value,
               pg_status_name(got));
  expect_message(needle);
  if (other_needle) expect_message(other_needle);
}

/* With `variable` set to `value` (unset again after), a fairring strategy on
 * the CPU describes itself with `needle` in its text. */
static void expect_fairring_describes(const char *variable, const char *value, const char *needle) {
  pg_strategy *s = NULL;
  char text[4096];
  setenv(variable, value, 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &s), PG_OK);
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, needle) != NULL, "%s=%s: describe has no '%s': %s", variable, value, needle, text);
  pg_strategy_destroy(s);
  unsetenv(variable);
}

int main(void) {
  pg_test_watchdog("test_errors");
  pg_strategy *s = NULL, *bad = (pg_strategy *)0x1;

  /* Creation: device syntax, unknown backend, unsupported pair, no CUDA. */
  PG_TEST_STATUS(pg_strategy_create("gpu", NULL, &bad), PG_ERR_INVALID_ARGUMENT);
  expect_message("'gpu'");
  PG_TEST_TRUE(bad == NULL, "a failed create must leave *out NULL");
  PG_TEST_STATUS(pg_strategy_create("cuda:x", NULL, &s), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_create(NULL, NULL, &s), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, NULL), PG_ERR_INVALID_ARGUMENT);
  /* pg_mpi_init: a thread level MPI does not know, then MPI started already. */
  int provided = -1;
  PG_TEST_STATUS(pg_mpi_init(42, &provided), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_mpi_init(MPI_THREAD_MULTIPLE, &provided), PG_ERR_STATE);
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairing", &s), PG_ERR_UNKNOWN_BACKEND);
  expect_message("'fairing'");
  expect_message("mpi");  /* the registered names are listed */
  PG_TEST_STATUS(pg_strategy_create("cpu", "Bad/Name", &s), PG_ERR_UNKNOWN_BACKEND);
  PG_TEST_STATUS(pg_strategy_create("cpu", "nccl", &s), PG_ERR_UNSUPPORTED);
  expect_message("nccl");
  PG_TEST_STATUS(pg_strategy_create("cuda", "mpi", &s), PG_ERR_UNSUPPORTED);
  /* This machine has no GPU (and the build may have no CUDA): unavailable, saying which. */
  pg_status cuda = pg_strategy_create("cuda", NULL, &s);
  if (cuda == PG_OK) {
    pg_strategy_destroy(s);
  } else {
    PG_TEST_TRUE(cuda == PG_ERR_UNAVAILABLE, "cuda without a GPU: %s", pg_status_name(cuda));
    PG_TEST_TRUE(strstr(pg_last_error(), "CUDA") || strstr(pg_last_error(), "GPU"),
                 "the message should say why: %s", pg_last_error());
  }
  PG_TEST_TRUE(pg_default_backend("cuda:3") && strcmp(pg_default_backend("cuda:3"), "nccl") == 0,
               "default for cuda");
  PG_TEST_TRUE(pg_default_backend("tpu") == NULL, "no default for an unknown device");

  /* The capability table and the element conversions, as the kernels round. */
  PG_TEST_TRUE(pg_op_supported(PG_FLOAT16, PG_AVG) && !pg_op_supported(PG_INT32, PG_AVG) &&
                   pg_op_supported(PG_UINT8, PG_BXOR) && !pg_op_supported(PG_FLOAT32, PG_BAND) &&
                   !pg_op_supported((pg_dtype)42, PG_SUM) && !pg_op_supported(PG_INT8, (pg_op)-1),
               "pg_op_supported follows the capability table");
  const double wide[3] = {1.5, 65504.0, 200.0};
  uint16_t half[3];
  int8_t bytes[3];
  double back[3];
  PG_TEST_STATUS(pg_dtype_from_double(PG_FLOAT16, wide, half, 3), PG_OK);
  PG_TEST_STATUS(pg_dtype_to_double(PG_FLOAT16, half, back, 3), PG_OK);
  PG_TEST_TRUE(half[0] == 0x3e00 && back[0] == 1.5 && back[1] == 65504.0, "float16: 0x%x %g %g", half[0], back[0],
               back[1]);
  PG_TEST_STATUS(pg_dtype_from_double(PG_INT8, wide, bytes, 3), PG_OK);
  PG_TEST_TRUE(bytes[2] == -56, "int8 wraps: 200 -> %d", bytes[2]);
  PG_TEST_STATUS(pg_dtype_to_double((pg_dtype)42, half, back, 1), PG_ERR_INVALID_ARGUMENT);
  expect_message("42");
  PG_TEST_STATUS(pg_dtype_from_double(PG_FLOAT32, NULL, back, 1), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_dtype_to_double(PG_FLOAT32, NULL, NULL, 0), PG_OK);

  /* Malformed environment values name the variable and the value. */
  expect_bad_setting(NULL, "PGS_BACKEND", "cpu:mpi,gpu:nccl", "PGS_BACKEND", "gpu:nccl");
  setenv("PGS_BACKEND", "cpu:mpi,cuda:nccl", 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  PG_TEST_TRUE(s && strcmp(pg_strategy_backend(s), "mpi") == 0, "map selects mpi");
  char text[4096];
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, "PGS_BACKEND") != NULL, "describe names the rule: %s", text);
  pg_strategy_destroy(s);
  unsetenv("PGS_BACKEND");
  expect_bad_setting(NULL, "PGS_TIMEOUT", "-3", "PGS_TIMEOUT", NULL);
  unsetenv("PGS_TIMEOUT");

  /* The flight recorder's folder must be one this process can write in. */
  expect_bad_setting(NULL, "PGS_TRACE", "/no/such/folder", "PGS_TRACE='/no/such/folder'", "an existing folder");
  expect_bad_setting(NULL, "PGS_TRACE", "/proc/self/status", "not a folder", NULL);
  unsetenv("PGS_TRACE");
  expect_bad_setting(NULL, "PGS_TRACE_ENTRIES", "lots", "PGS_TRACE_ENTRIES='lots'", "16 to 1048576");
  unsetenv("PGS_TRACE_ENTRIES");
  PG_TEST_STATUS(pg_trace_dump(), PG_ERR_STATE);

  /* The wait rule: named in describe, by PGS_WAIT or by the ranks and CPUs
   * of this host (every rank of this test shares one host). */
  expect_bad_setting(NULL, "PGS_WAIT", "sleep", "PGS_WAIT='sleep'", "auto, spin, yield");
  setenv("PGS_WAIT", "yield", 1);
  setenv("PGS_WAIT_BUDGET", "250", 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, "wait=yield 250 us then nap (PGS_WAIT)") != NULL, "describe: %s", text);
  pg_strategy_destroy(s);
  setenv("PGS_WAIT", "spin", 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, "wait=spin 250 us then nap (PGS_WAIT)") != NULL, "describe: %s", text);
  pg_strategy_destroy(s);
  unsetenv("PGS_WAIT");
  unsetenv("PGS_WAIT_BUDGET");
  {
    cpu_set_t mine, all;
    PG_TEST_TRUE(sched_getaffinity(0, sizeof mine, &mine) == 0, "sched_getaffinity");
    MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char expected[128];
    snprintf(expected, sizeof expected, "wait=%s 10000 us%s then nap (%d ranks on %d CPUs of this host)",
             size > CPU_COUNT(&all) ? "yield" : "spin 20 us, yield to", size > CPU_COUNT(&all) ? "" : ",", size,
             CPU_COUNT(&all));
    PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
    PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
    PG_TEST_TRUE(strstr(text, expected) != NULL, "describe has '%s': %s", expected, text);
    /* A split leaves the host's other ranks running: yielding, once chosen, stays. */
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pg_strategy *sub = NULL;
    PG_TEST_STATUS(pg_strategy_split(s, rank < 2 ? 0 : 1, rank, &sub), PG_OK);
    if (sub) {
      PG_TEST_STATUS(pg_strategy_describe(sub, text, sizeof text), PG_OK);
      PG_TEST_TRUE(strstr(text, size > CPU_COUNT(&all) ? "wait=yield" : "wait=spin") != NULL,
                   "the split's rule: %s", text);
      pg_strategy_destroy(sub);
    }
    pg_strategy_destroy(s);
  }

  /* fairring's algorithm forced by name: an unknown name, and one this layout
   * cannot run (one rank per node leaves nothing to reduce in shared memory). */
  expect_bad_setting("fairring", "PGS_FAIRRING_ALGO", "fastest", "PGS_FAIRRING_ALGO='fastest'",
                     "auto, fast, flat, hierarchical, leaders");
  setenv("PGS_RANKS_PER_NODE", "1", 1);
  expect_bad_setting("fairring", "PGS_FAIRRING_ALGO", "hierarchical",
                     "PGS_FAIRRING_ALGO='hierarchical' cannot run here", "can use: auto, flat, leaders");
  expect_fairring_describes("PGS_FAIRRING_ALGO", "leaders", "allreduce: leaders at every size (PGS_FAIRRING_ALGO)");
  unsetenv("PGS_RANKS_PER_NODE");

  /* How blocks pass between cores, as set (nothing left to time), and a bad value. */
  expect_bad_setting("fairring", "PGS_FAIRRING_REDUCE", "register", "PGS_FAIRRING_REDUCE='register'",
                     "auto, buffer, slot");
  setenv("PGS_FAIRRING_REDUCE", "slot", 1);
  setenv("PGS_FAIRRING_PULL", "memcpy", 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &s), PG_OK);
  PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, "blocks reduced in the slot, pulled with memcpy") != NULL, "describe: %s", text);
  /* On one node of two ranks where allreduces split is timed as well (the
   * way being set does not stop that), unless the ranks wait for cores. */
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (world == 2) {
    const int waits = strstr(text, "wait=yield") != NULL;
    const char *why = strstr(text, waits ? "allreduces split from 8 KiB (one node of two ranks: a split reads"
                                         : "(one node of two ranks: a 4 KiB allreduce split took ");
    PG_TEST_TRUE(why != NULL, "describe says why allreduces split where they do: %s", text);
    if (why && !waits)  /* 4 KiB where the split was faster, else 8 KiB, saying so */
      PG_TEST_TRUE(strstr(text, "allreduces split from 4 KiB (one node of two ranks") != NULL ||
                       (strstr(text, "allreduces split from 8 KiB (one node of two ranks") != NULL &&
                        strstr(why, "timed here, not 5 % less)") != NULL),
                   "describe: %s", text);
    /* Where the fast path stops: timed the same way (1 MiB or 256 KiB, and why). */
    PG_TEST_TRUE(waits ? strstr(text, "fast path up to 256 KiB (not timed: the default)") != NULL
                       : (strstr(text, "fast path up to 1 MiB (a 512 KiB allreduce took ") != NULL ||
                          strstr(text, "fast path up to 256 KiB (a 512 KiB allreduce took ") != NULL),
                 "describe says where the fast path stops and why: %s", text);
  }
  pg_strategy_destroy(s);
  unsetenv("PGS_FAIRRING_REDUCE");
  unsetenv("PGS_FAIRRING_PULL");
  if (world >= 2) /* as given, nothing timed */
    expect_fairring_describes("PGS_FAIRRING_FAST_BYTES", "64K", "fast path up to 64 KiB (PGS_FAIRRING_FAST_BYTES)");

  /* What a rank's strategy knows, key by key; an unknown key lists them. */
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  char settings[4096];
  PG_TEST_STATUS(pg_strategy_info(s, "settings", settings, sizeof settings), PG_OK);
  PG_TEST_TRUE(strstr(settings, "PGS_TIMEOUT unset (default: 0 (off))") && strstr(settings, "PGS_FAIRRING_ALGO") &&
                   strstr(settings, "PGS_MPI_CHUNK_COUNT"),
               "settings: %s", settings);
  PG_TEST_STATUS(pg_strategy_info(s, "backend:cuda", text, sizeof text), PG_OK);
  PG_TEST_TRUE(strcmp(text, "nccl (device default)") == 0, "backend:cuda: %s", text);
  PG_TEST_STATUS(pg_strategy_info(s, "nodes", text, sizeof text), PG_OK);
  PG_TEST_TRUE(strcmp(text, "shared-memory domains") == 0, "nodes: %s", text);
  PG_TEST_STATUS(pg_strategy_info(s, "host", text, sizeof text), PG_OK);
  PG_TEST_TRUE(text[0] != '\0', "a host name");
  PG_TEST_STATUS(pg_strategy_info(s, "hostname", text, sizeof text), PG_ERR_INVALID_ARGUMENT);
  expect_message("'hostname'");
  expect_message("host, machine, binding, gpu, nic, launcher");
  PG_TEST_STATUS(pg_strategy_info(s, NULL, text, sizeof text), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_info(NULL, "host", text, sizeof text), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_info(s, "host", NULL, 8), PG_ERR_INVALID_ARGUMENT);
  pg_strategy_destroy(s);

  /* A bad value on one rank only fails every rank, naming that rank. */
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (world_size > 1) {
    if (world_rank == world_size - 1) setenv("PGS_LOG", "loud", 1);
    PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_ERR_INVALID_ARGUMENT);
    char rank_text[32];
    snprintf(rank_text, sizeof rank_text, "rank %d", world_size - 1);
    expect_message(rank_text);
    expect_message("PGS_LOG");
    unsetenv("PGS_LOG");
    /* Ranks that disagree on a schedule-changing value: a mismatch everywhere. */
    if (world_rank == 0) setenv("PGS_RANKS_PER_NODE", "1", 1);
    PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_ERR_MISMATCH);
    expect_message("PGS_RANKS_PER_NODE");
    unsetenv("PGS_RANKS_PER_NODE");
  }

  /* Collectives: the failing call returns at once, the strategy stays usable. */
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  float a[64] = {0}, b[64] = {0};
  PG_TEST_STATUS(pg_allreduce(NULL, a, b, 1, PG_FLOAT32, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_allreduce(s, NULL, b, 1, PG_FLOAT32, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  expect_message("sendbuf");
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, (pg_dtype)42, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  expect_message("42");
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, PG_FLOAT32, (pg_op)-1), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, PG_INT32, PG_AVG), PG_ERR_UNSUPPORTED);
  expect_message("avg");
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, PG_FLOAT32, PG_BXOR), PG_ERR_UNSUPPORTED);
  PG_TEST_STATUS(pg_allreduce(s, a, a + 1, 4, PG_FLOAT32, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  expect_message("overlap");
  PG_TEST_STATUS(pg_allreduce(s, a, b, SIZE_MAX / 2, PG_FLOAT32, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  expect_message("overflow");
  PG_TEST_STATUS(pg_iallreduce(s, a, b, 1, PG_FLOAT32, PG_SUM, NULL), PG_ERR_INVALID_ARGUMENT);
  expect_message("work is NULL");
  PG_TEST_STATUS(pg_broadcast(s, a, 1, PG_FLOAT32, size), PG_ERR_INVALID_ARGUMENT);
  expect_message("root");
  PG_TEST_STATUS(pg_broadcast(s, a, 1, PG_FLOAT32, -1), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_send(s, a, 1, PG_FLOAT32, size + 3, 0), PG_ERR_INVALID_ARGUMENT);
  expect_message("peer");
  PG_TEST_STATUS(pg_send(s, a, 1, PG_FLOAT32, 0, -5), PG_ERR_INVALID_ARGUMENT);
  expect_message("tag");
  /* allgather: only the documented in-place layout may overlap. */
  if (size > 1)
    PG_TEST_STATUS(pg_allgather(s, b + (rank == 0 ? 1 : 0), b, 1, PG_FLOAT32), PG_ERR_INVALID_ARGUMENT);
  /* Root-only buffers may be NULL elsewhere. */
  a[0] = 1.0f;
  PG_TEST_STATUS(pg_reduce(s, a, rank == 0 ? b : NULL, 1, PG_FLOAT32, PG_SUM, 0), PG_OK);
  if (rank == 0) PG_TEST_TRUE(b[0] == (float)size, "reduce result %g", b[0]);

  /* Queries on NULL. */
  PG_TEST_TRUE(pg_strategy_rank(NULL) == -1 && pg_strategy_backend(NULL) == NULL, "NULL queries");
  PG_TEST_STATUS(pg_strategy_describe(NULL, text, sizeof text), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_STATUS(pg_strategy_destroy(NULL), PG_OK);
  PG_TEST_STATUS(pg_work_free(NULL), PG_OK);
  PG_TEST_STATUS(pg_strategy_set_stream(s, NULL), PG_ERR_UNSUPPORTED);
  PG_TEST_STATUS(pg_mem_free(s, a), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_TRUE(strcmp(pg_status_name((pg_status)99), "PG_STATUS_UNKNOWN") == 0, "unknown status name");

  /* Truncation of describe and backends_list. */
  char tiny[4];
  PG_TEST_STATUS(pg_backends_list(tiny, sizeof tiny), PG_OK);
  PG_TEST_TRUE(strlen(tiny) == 3, "truncated to len-1 characters: '%s'", tiny);
  PG_TEST_STATUS(pg_backends_list(text, sizeof text), PG_OK);
  PG_TEST_TRUE(strstr(text, "mpi") && strstr(text, "nccl"), "backends: %s", text);

  /* Still usable after all of the above. */
  a[0] = (float)rank;
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, PG_FLOAT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(b[0] == (float)(size * (size - 1) / 2), "allreduce after errors: %g", b[0]);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);

  /* PGS_DEBUG=detail: mismatched collectives fail on every rank, run nothing,
   * and leave the strategy usable; a bad argument on one rank fails all. */
  setenv("PGS_DEBUG", "detail", 1);
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (size > 1) {
    PG_TEST_STATUS(pg_allreduce(s, a, b, rank == 0 ? 2 : 1, PG_FLOAT32, PG_SUM), PG_ERR_MISMATCH);
    expect_message("count=2");
    PG_TEST_STATUS(pg_broadcast(s, a, 1, PG_FLOAT32, rank == 0 ? size : 0), PG_ERR_MISMATCH);
    PG_TEST_STATUS(pg_allreduce(s, rank == 1 ? NULL : a, b, 1, PG_FLOAT32, PG_SUM), PG_ERR_INVALID_ARGUMENT);
    expect_message("rank 1");
    pg_work *w = NULL;
    PG_TEST_STATUS(pg_iallreduce(s, a, b, 1, PG_FLOAT32, PG_SUM, rank == 1 ? NULL : &w),
                   PG_ERR_INVALID_ARGUMENT);
    expect_message("work is NULL");
    PG_TEST_TRUE(w == NULL, "no work when a rank's arguments were refused");
  }
  a[0] = 2.0f;
  PG_TEST_STATUS(pg_allreduce(s, a, b, 1, PG_FLOAT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(b[0] == 2.0f * size, "allreduce after a mismatch: %g", b[0]);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  unsetenv("PGS_DEBUG");

  return pg_test_verdict(MPI_COMM_WORLD, "test_errors");
}
