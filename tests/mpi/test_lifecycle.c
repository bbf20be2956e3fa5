/* Split (including a reversed sub-communicator), two strategies used from two
 * threads at once, MPI ownership, and destroy after the application's
 * MPI_Finalize.
 *   test_lifecycle            the application initializes and finalizes MPI
 *   test_lifecycle owned      the library initializes MPI and finalizes it at exit
 *   test_lifecycle forked     the same, and a child forked after create exits
 *                             normally: its exit does nothing of the parent's */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pg_test.h"

struct job {
  pg_strategy *s;
  int rounds;
  int ok;
};

static void *hammer(void *arg) {
  struct job *j = arg;
  int size = pg_strategy_size(j->s), rank = pg_strategy_rank(j->s);
  j->ok = 1;
  for (int i = 0; i < j->rounds; ++i) {
    long v = rank + i, sum = 0;
    if (pg_allreduce(j->s, &v, &sum, 1, PG_INT64, PG_SUM) != PG_OK ||
        sum != (long)size * (size - 1) / 2 + (long)size * i)
      j->ok = 0;
  }
  return NULL;
}

static void check_split(pg_strategy *s) {
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  pg_strategy *rev = NULL, *half = NULL, *none = (pg_strategy *)0x1;
  /* Reversed: key = -rank. */
  PG_TEST_STATUS(pg_strategy_split(s, 0, -rank, &rev), PG_OK);
  if (rev) {
    PG_TEST_TRUE(pg_strategy_rank(rev) == size - 1 - rank, "reversed rank %d", pg_strategy_rank(rev));
    PG_TEST_TRUE(strcmp(pg_strategy_backend(rev), pg_strategy_backend(s)) == 0, "same backend");
    int v[3] = {rank, rank, rank}, all[3 * 8];
    PG_TEST_STATUS(pg_allgather(rev, v, all, 3, PG_INT32), PG_OK);
    for (int q = 0; q < size && size <= 8; ++q)
      PG_TEST_TRUE(all[3 * q] == size - 1 - q, "reversed allgather block %d: %d", q, all[3 * q]);
    PG_TEST_STATUS(pg_strategy_destroy(rev), PG_OK);
  }
  /* Even and odd ranks; the last rank joins none. */
  int color = rank == size - 1 && size > 2 ? -1 : rank % 2;
  PG_TEST_STATUS(pg_strategy_split(s, color, rank, color < 0 ? &none : &half), PG_OK);
  if (color < 0) {
    PG_TEST_TRUE(none == NULL, "a negative color gives NULL");
  } else if (half) {
    int members = 0;
    for (int r = 0; r < size; ++r) members += (r % 2 == color) && !(r == size - 1 && size > 2);
    PG_TEST_TRUE(pg_strategy_size(half) == members, "split size %d, expected %d", pg_strategy_size(half), members);
    int one = 1, count = 0;
    PG_TEST_STATUS(pg_allreduce(half, &one, &count, 1, PG_INT32, PG_SUM), PG_OK);
    PG_TEST_TRUE(count == members, "split allreduce %d", count);
    PG_TEST_STATUS(pg_strategy_destroy(half), PG_OK);
  }
}

/* Every rank forks a child that exits at once, through exit() and so the
 * library's exit handlers; then uses s and a fairring strategy made before
 * the fork. A child that ran the parent's destroy and MPI_Finalize would
 * hang in their collective calls (or disturb the parent's MPI). */
static void check_fork(pg_strategy *s) {
  pg_test_step("fork");
  pg_strategy *f = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &f), PG_OK);
  const int size = pg_strategy_size(s);
  long v = 1, sum = 0;
  PG_TEST_STATUS(pg_allreduce(f, &v, &sum, 1, PG_INT64, PG_SUM), PG_OK);
  fflush(stdout);
  fflush(stderr);
  const pid_t child = fork();
  if (child == 0) exit(0);
  PG_TEST_TRUE(child > 0, "fork failed");
  int status = -1, waited_ms = 0;
  pid_t got = 0;
  while (child > 0 && (got = waitpid(child, &status, WNOHANG)) == 0 && waited_ms < 10000) {
    const struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
    waited_ms += 10;
  }
  if (child > 0 && got == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    PG_TEST_TRUE(0, "the forked child did not exit within 10 s: its exit ran the parent's strategies");
  } else if (child > 0) {
    PG_TEST_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the forked child ended with status %#x", status);
  }
  pg_test_step("after the fork");
  for (int i = 0; i < 3; ++i) {
    v = i + pg_strategy_rank(s);
    PG_TEST_STATUS(pg_allreduce(s, &v, &sum, 1, PG_INT64, PG_SUM), PG_OK);
    PG_TEST_TRUE(sum == (long)size * i + (long)size * (size - 1) / 2, "allreduce after the fork: %ld", sum);
    PG_TEST_STATUS(pg_allreduce(f, &v, &sum, 1, PG_INT64, PG_SUM), PG_OK);
    PG_TEST_TRUE(sum == (long)size * i + (long)size * (size - 1) / 2, "fairring allreduce after the fork: %ld", sum);
  }
  PG_TEST_STATUS(pg_strategy_destroy(f), PG_OK);
}

int main(int argc, char **argv) {
  pg_test_watchdog("test_lifecycle");
  const int forked = argc > 1 && strcmp(argv[1], "forked") == 0;
  const int owned = forked || (argc > 1 && strcmp(argv[1], "owned") == 0);
  int provided = 0, flag = 0;
  if (!owned) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);

  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  MPI_Initialized(&flag);
  PG_TEST_TRUE(flag, "MPI is initialized after create");
  if (s) check_split(s);

  /* Library-allocated buffers work like any other and are freed once. */
  float *buf = NULL;
  PG_TEST_STATUS(pg_mem_alloc(s, 1000 * sizeof(float), (void **)&buf), PG_OK);
  if (buf) {
    for (int i = 0; i < 1000; ++i) buf[i] = 1.0f;
    PG_TEST_STATUS(pg_allreduce(s, buf, buf, 1000, PG_FLOAT32, PG_SUM), PG_OK);
    PG_TEST_TRUE(buf[999] == (float)pg_strategy_size(s), "allreduce in pg_mem_alloc memory: %g", buf[999]);
    PG_TEST_STATUS(pg_mem_free(s, buf), PG_OK);
    PG_TEST_STATUS(pg_mem_free(s, buf), PG_ERR_INVALID_ARGUMENT);  /* not twice */
  }

  /* Two strategies on different communicators, used from two threads at once. */
  MPI_Query_thread(&provided);
  if (provided == MPI_THREAD_MULTIPLE && s) {
    pg_strategy *t = NULL;
    PG_TEST_STATUS(pg_strategy_create_comm("cpu", "mpi", MPI_COMM_WORLD, &t), PG_OK);
    struct job a = {s, 50, 0}, b = {t, 50, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, hammer, &a);
    pthread_create(&tb, NULL, hammer, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    PG_TEST_TRUE(a.ok && b.ok, "concurrent strategies: %d %d", a.ok, b.ok);
    PG_TEST_STATUS(pg_strategy_destroy(t), PG_OK);
  }

  if (forked && s) check_fork(s);

  int failed = pg_test_verdict(MPI_COMM_WORLD, forked ? "test_lifecycle forked"
                                               : owned ? "test_lifecycle owned" : "test_lifecycle");
  if (owned) {
    /* s stays alive: the library destroys it and finalizes MPI at exit. */
    return failed;
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  /* The application owns MPI: the library must not finalize it. */
  MPI_Finalized(&flag);
  if (!PG_TEST_TRUE(!flag, "the library finalized the application's MPI")) return 1;
  pg_strategy *late = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &late), PG_OK);
  MPI_Finalize();
  /* After MPI_Finalize: calls are refused, destroy frees memory and makes no MPI call. */
  int one = 1, sum = 0;
  if (pg_allreduce(late, &one, &sum, 1, PG_INT32, PG_SUM) != PG_ERR_STATE) failed = 1;
  if (pg_strategy_destroy(late) != PG_OK) failed = 1;
  return failed;
}
