/* pg_strategy_abort from another thread ends a call blocked on a peer that
 * does not come, and the peers of the aborted rank learn of it:
 *   test_abort BACKEND COUNT blocking|work|mem_alloc|split [late|blocked]
 * late (the default): rank 0 enters an allreduce of COUNT doubles (blocking,
 * or a work it waits for) that rank 1 joins only 2 s later; a second thread
 * of rank 0 aborts the strategy after 300 ms. The call returns PG_ERR_ABORTED
 * within 1 s of the abort, later calls return PG_ERR_STATE, and destroy
 * returns at once. Rank 1 then enters the allreduce: it learns of rank 0's
 * abort (the strategy's alarm, docs/errors.md) and returns PG_ERR_BACKEND
 * naming rank 0 within 1 s, with no PGS_TIMEOUT (across nodes its first call
 * may still finish with what rank 0 sent before the abort: then its next
 * one); its later calls return PG_ERR_STATE and its destroy does not wait
 * for rank 0.
 * blocked: rank 1 is in the allreduce first, and rank 0 aborts 300 ms later
 * without entering it: rank 1's call returns PG_ERR_BACKEND naming rank 0
 * within 1 s of the abort.
 * mem_alloc (in place of blocking|work, with blocked): rank 1's call is a
 * pg_mem_alloc made after rank 0's abort (blocked in MPI's window allocation
 * it could not learn of it): it returns PG_ERR_BACKEND naming rank 0; split,
 * the same with pg_strategy_split (blocked in MPI_Comm_split).
 * Run on one node (the node's shared word) and on nodes of one rank
 * (PGS_RANKS_PER_NODE=1: a notice over MPI). The buffer stays allocated: MPI
 * may still use it (the contract of pg_strategy_abort). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_test.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
}

struct aborter {
  pg_strategy *s;
  double delay, at;
  pg_status status;
};

static void *abort_later(void *arg) {
  struct aborter *a = arg;
  sleep_s(a->delay);
  a->at = now();
  a->status = pg_strategy_abort(a->s);
  return NULL;
}

/* The allreduce, blocking or as a work waited for. */
static pg_status allreduce(pg_strategy *s, double *buf, size_t count, int work) {
  if (!work) return pg_allreduce(s, buf, buf, count, PG_FLOAT64, PG_SUM);
  pg_work *w = NULL;
  pg_status st = pg_iallreduce(s, buf, buf, count, PG_FLOAT64, PG_SUM, &w);
  if (st != PG_OK) return st;
  st = pg_work_wait(w, -1);
  pg_status freed = pg_work_free(w);
  PG_TEST_TRUE(freed == PG_OK, "the finished work is freed: %s", pg_status_name(freed));
  return st;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  pg_test_watchdog("test_abort");
  if (argc < 4) {
    PG_TEST_TRUE(0, "usage: test_abort BACKEND COUNT blocking|work");
    return pg_test_verdict(MPI_COMM_WORLD, "test_abort");
  }
  char *end = NULL;
  const size_t count = (size_t)strtoull(argv[2], &end, 10);
  const int work = strcmp(argv[3], "work") == 0, mem_alloc = strcmp(argv[3], "mem_alloc") == 0,
            split = strcmp(argv[3], "split") == 0;
  const int blocked = argc > 4 && strcmp(argv[4], "blocked") == 0;
  if (!PG_TEST_TRUE(*end == '\0' && count > 0 && (work || mem_alloc || split || strcmp(argv[3], "blocking") == 0),
                    "usage: test_abort BACKEND COUNT blocking|work|mem_alloc|split (COUNT a positive number): got %s %s %s", argv[1],
                    argv[2], argv[3]))
    return pg_test_verdict(MPI_COMM_WORLD, "test_abort");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", argv[1], &s), PG_OK);
  /* Kept to the end (a static: reachable at exit): MPI may still use it. */
  static double *buf;
  buf = calloc(count, sizeof *buf);
  PG_TEST_TRUE(buf != NULL, "%zu doubles allocated", count);
  if (s && buf) {
    const int rank = pg_strategy_rank(s);
    if (blocked) {
      pg_test_step("allreduce of %zu on %s, %s, while rank 0 aborts", count, argv[1], argv[3]);
      MPI_Barrier(MPI_COMM_WORLD);
      const double entered = now();
      if (rank == 0) {
        sleep_s(0.3);
        PG_TEST_STATUS(pg_strategy_abort(s), PG_OK);
      } else if (mem_alloc) {
        sleep_s(0.6);
        void *p = NULL;
        const pg_status st = pg_mem_alloc(s, count * sizeof(double), &p);
        PG_TEST_TRUE(st == PG_ERR_BACKEND && strstr(pg_last_error(), "rank 0 aborted") && p == NULL,
                     "rank 1 learns of rank 0's abort: %s: %s", pg_status_name(st), pg_last_error());
      } else if (split) {
        sleep_s(0.6);
        pg_strategy *part = NULL;
        const pg_status st = pg_strategy_split(s, 0, 0, &part);
        PG_TEST_TRUE(st == PG_ERR_BACKEND && strstr(pg_last_error(), "rank 0 aborted") && part == NULL,
                     "rank 1 learns of rank 0's abort: %s: %s", pg_status_name(st), pg_last_error());
      } else {
        const pg_status st = allreduce(s, buf, count, work);
        PG_TEST_TRUE(st == PG_ERR_BACKEND && strstr(pg_last_error(), "rank 0 aborted"),
                     "rank 1 learns of rank 0's abort: %s: %s", pg_status_name(st), pg_last_error());
        PG_TEST_TRUE(now() - entered < 0.3 + 1.0, "within 1 s of the abort: %.3f s after it",
                     now() - entered - 0.3);
      }
    } else if (rank == 0) {
      struct aborter a = {s, 0.3, 0, PG_OK};
      pg_test_step("allreduce of %zu on %s, %s, aborted from another thread", count, argv[1], argv[3]);
      pthread_t thread;
      pthread_create(&thread, NULL, abort_later, &a);
      const pg_status st = allreduce(s, buf, count, work);
      const double returned = now();
      pthread_join(thread, NULL);
      PG_TEST_STATUS(a.status, PG_OK);
      PG_TEST_TRUE(st == PG_ERR_ABORTED, "the call ends aborted: %s: %s", pg_status_name(st), pg_last_error());
      PG_TEST_TRUE(returned - a.at < 1.0, "within 1 s of the abort: %.3f s", returned - a.at);
    } else {
      sleep_s(2);
      pg_test_step("allreduce of %zu on %s, %s, after rank 0 aborted", count, argv[1], argv[3]);
      double entered = now();
      pg_status st = allreduce(s, buf, count, work);
      if (st == PG_OK && pg_strategy_node_count(s) > 1) {
        /* Across nodes the call may finish with what rank 0 sent before its
         * abort (MPI delivers it); the next one cannot. */
        entered = now();
        st = allreduce(s, buf, count, work);
      }
      PG_TEST_TRUE(st == PG_ERR_BACKEND && strstr(pg_last_error(), "rank 0 aborted"),
                   "rank 1 learns of rank 0's abort: %s: %s", pg_status_name(st), pg_last_error());
      PG_TEST_TRUE(now() - entered < 1.0, "within 1 s: %.3f s", now() - entered);
    }
    pg_test_step("after the abort");
    PG_TEST_STATUS(pg_allreduce(s, buf, buf, count, PG_FLOAT64, PG_SUM), PG_ERR_STATE);
    PG_TEST_TRUE(strstr(pg_last_error(), "pg_strategy_abort") != NULL, "the message says why: %s", pg_last_error());
    PG_TEST_STATUS(pg_strategy_abort(s), PG_OK); /* a second abort does nothing */
    PG_TEST_TRUE(pg_strategy_size(s) == 2, "the local queries still answer");
    const double destroying = now();
    PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
    PG_TEST_TRUE(now() - destroying < 1.0, "destroy after abort does not wait: %.3f s", now() - destroying);
  }
  PG_TEST_STATUS(pg_strategy_abort(NULL), PG_ERR_INVALID_ARGUMENT);
  const int failed = pg_test_verdict(MPI_COMM_WORLD, "test_abort");
  MPI_Finalize();
  return failed;
}
