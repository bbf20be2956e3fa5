/* Defects found by a bad-input and fault campaign, each checked here:
 * - pg_mem_alloc beyond what the node has fails on every rank (MPICH's
 *   MPI_Alloc_mem used to report success with an unusable pointer);
 * - a blocking call on one rank and its nonblocking twin on another is a
 *   mismatch under PGS_DEBUG=detail (it used to deadlock), and the strategy
 *   stays usable;
 * - pg_work_wait with an infinite or huge timeout waits, NaN is an argument
 *   error (both used to return PG_ERR_TIMEOUT at once on the progress thread);
 * - a count that runs past the end of memory and a backend name with a raw
 *   newline are refused with a clear, one-line message;
 * - after MPI_Finalize, split and unfinished work return PG_ERR_STATE (MPICH
 *   used to end the process). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

static void memory(pg_strategy *s, int rank) {
  pg_test_step("pg_mem_alloc of 64 GiB on the last rank");
  const int last = pg_strategy_size(s) - 1;
  void *p = (void *)0x1;
  pg_status st = pg_mem_alloc(s, rank == last ? (size_t)64 << 30 : 4096, &p);
  PG_TEST_TRUE(st == PG_ERR_NO_MEMORY, "every rank fails: %s: %s", pg_status_name(st), pg_last_error());
  PG_TEST_TRUE(p == NULL, "no pointer on failure: %p", p);
  /* Nothing is left behind: a normal allocation works and is usable. */
  PG_TEST_STATUS(pg_mem_alloc(s, 1 << 20, &p), PG_OK);
  if (p) memset(p, 1, 1 << 20);
  PG_TEST_STATUS(pg_mem_free(s, p), PG_OK);
}

static void twins(void) {
  pg_test_step("blocking call against its nonblocking twin under PGS_DEBUG=detail");
  setenv("PGS_DEBUG", "detail", 1);
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  unsetenv("PGS_DEBUG");
  if (!s) return;
  int x = 1, y = 0;
  pg_work *w = NULL;
  pg_status st = pg_strategy_rank(s) == 0 ? pg_iallreduce(s, &x, &y, 1, PG_INT32, PG_SUM, &w)
                                          : pg_allreduce(s, &x, &y, 1, PG_INT32, PG_SUM);
  PG_TEST_TRUE(st == PG_ERR_MISMATCH, "mixed twins: %s: %s", pg_status_name(st), pg_last_error());
  PG_TEST_TRUE(strstr(pg_last_error(), "iallreduce") != NULL, "the message names the twin: %s", pg_last_error());
  PG_TEST_TRUE(w == NULL, "no work on a mismatch");
  /* Still usable. */
  PG_TEST_STATUS(pg_allreduce(s, &x, &y, 1, PG_INT32, PG_SUM), PG_OK);
  PG_TEST_TRUE(y == pg_strategy_size(s), "allreduce after the mismatch: %d", y);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
}

static void waits(void) {
  pg_test_step("pg_work_wait with infinite, huge and NaN timeouts");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "plain", &s), PG_OK);
  if (!s) return;
  const double timeouts[] = {INFINITY, 1e300, 9.3e9};
  for (int i = 0; i < 3; ++i) {
    int x = 1, y = 0;
    pg_work *w = NULL;
    PG_TEST_STATUS(pg_iallreduce(s, &x, &y, 1, PG_INT32, PG_SUM, &w), PG_OK);
    if (!w) continue;
    PG_TEST_STATUS(pg_work_wait(w, NAN), PG_ERR_INVALID_ARGUMENT);
    PG_TEST_STATUS(pg_work_wait(w, timeouts[i]), PG_OK);
    PG_TEST_TRUE(y == pg_strategy_size(s), "timeout %g: result %d", timeouts[i], y);
    PG_TEST_STATUS(pg_work_free(w), PG_OK);
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
}

static void bad_input(pg_strategy *s) {
  pg_test_step("a count past the end of memory, a backend name with a newline");
  char byte = 0;
  PG_TEST_STATUS(pg_allreduce(s, &byte, &byte, SIZE_MAX, PG_INT8, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  PG_TEST_TRUE(strstr(pg_last_error(), "past the end") != NULL, "%s", pg_last_error());
  char out[8];
  PG_TEST_STATUS(pg_allreduce(s, &byte, out, SIZE_MAX / 2, PG_INT8, PG_SUM), PG_ERR_INVALID_ARGUMENT);
  pg_strategy *t = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "ring\nEVIL", &t), PG_ERR_UNKNOWN_BACKEND);
  PG_TEST_TRUE(strchr(pg_last_error(), '\n') == NULL && strstr(pg_last_error(), "ring\\nEVIL") != NULL,
               "the name is quoted on one line: %s", pg_last_error());
}

static void after_finalize(pg_strategy *s) {
  pg_test_step("split and unfinished work after MPI_Finalize");
  int x = 1, y = 0;
  pg_work *w = NULL;
  PG_TEST_STATUS(pg_iallreduce(s, &x, &y, 1, PG_INT32, PG_SUM, &w), PG_OK);
  /* The verdict first: nothing can be agreed once MPI is gone. */
  MPI_Finalize();
  pg_strategy *sub = NULL;
  int ok = pg_strategy_split(s, 0, 0, &sub) == PG_ERR_STATE && sub == NULL;
  int done = 0;
  ok = ok && pg_work_test(w, &done) == PG_ERR_STATE && done == 1;
  ok = ok && pg_work_wait(w, -1) == PG_ERR_STATE && strstr(pg_last_error(), "finalized") != NULL;
  ok = ok && pg_work_free(w) == PG_OK && pg_strategy_destroy(s) == PG_OK;
  if (!ok) fprintf(stderr, "FAIL after MPI_Finalize: %s\n", pg_last_error());
  exit(ok ? 0 : 1);
}

int main(int argc, char **argv) {
  pg_test_watchdog("test_reliability");
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  PG_TEST_STATUS(pg_test_register_plain(), PG_OK);

  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (!s) return 1;
  const int rank = pg_strategy_rank(s);
  memory(s, rank);
  if (pg_strategy_size(s) > 1) twins();
  waits();
  bad_input(s);
  if (pg_test_verdict(MPI_COMM_WORLD, "test_reliability") != 0) return 1;
  after_finalize(s);
  return 0;
}
