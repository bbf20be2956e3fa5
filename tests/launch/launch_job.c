/* A job that leaves MPI to the library, for the launch tests (label launch):
 * started as plain copies (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), under
 * torchrun --no-python, or under mpiexec. Creates a CPU strategy (the backend:
 * PGS_BACKEND, else mpi), checks that its rank and size are the ones RANK and
 * WORLD_SIZE give, runs collectives against exact values, and prints
 *
 *   launch_job: rank R of N, node K of M, backend B: OK
 *
 * Options make one rank misbehave while the others run allreduces without end,
 * so that only the bootstrap can end them:
 *   --die R     rank R kills itself (SIGKILL) in the middle of the allreduces
 *   --abort R   rank R calls MPI_Abort(MPI_COMM_WORLD, 7)
 *   --hold S    every rank runs allreduces for S seconds before finishing
 *   --big       also a 16 MiB allreduce, checked (across hosts: bytes on the links)
 *   --fork      every rank forks a child that lingers 5 s (a data loader's
 *               worker): it must not keep a dead rank's connections open
 *   --mpi-first the program calls MPI_Init itself before the library can
 * Exit status 0 when every check passed on every rank. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_strategy.h"

static int failures = 0;

#define EXPECT(cond, ...)                     \
  do {                                        \
    if (!(cond)) {                            \
      fprintf(stderr, "launch_job: FAILED: "); \
      fprintf(stderr, __VA_ARGS__);           \
      fprintf(stderr, "\n");                  \
      ++failures;                             \
    }                                         \
  } while (0)

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

/* Allreduces until the process is ended from outside. */
static void spin(pg_strategy *s, int rank, int die, int abort_rank) {
  int value = 1, sum = 0;
  for (long i = 0;; ++i) {
    if (i == 50 && rank == die) {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      printf("launch_job: rank %d kills itself at %ld.%09ld\n", rank, (long)now.tv_sec, now.tv_nsec);
      fflush(stdout);
      kill(getpid(), SIGKILL);
    }
    if (i == 50 && rank == abort_rank) {
      printf("launch_job: rank %d calls MPI_Abort\n", rank);
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 7);
    }
    if (pg_allreduce(s, &value, &sum, 1, PG_INT32, PG_SUM) != PG_OK) {
      fprintf(stderr, "launch_job: allreduce failed: %s\n", pg_last_error());
      exit(3);
    }
  }
}

int main(int argc, char **argv) {
  int die = -1, abort_rank = -1, mpi_first = 0, big = 0, fork_child = 0;
  double hold = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--die") && i + 1 < argc) die = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--abort") && i + 1 < argc) abort_rank = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--hold") && i + 1 < argc) hold = atof(argv[++i]);
    else if (!strcmp(argv[i], "--mpi-first")) mpi_first = 1;
    else if (!strcmp(argv[i], "--big")) big = 1;
    else if (!strcmp(argv[i], "--fork")) fork_child = 1;
    else {
      fprintf(stderr, "usage: %s [--die R] [--abort R] [--hold S] [--big] [--fork] [--mpi-first]\n", argv[0]);
      return 2;
    }
  }
  if (mpi_first) MPI_Init(&argc, &argv);
  setvbuf(stdout, NULL, _IOLBF, 0);

  pg_strategy *s = NULL;
  pg_status st = pg_strategy_create("cpu", NULL, &s);
  if (st != PG_OK) {
    fprintf(stderr, "launch_job: pg_strategy_create failed: %s: %s\n", pg_status_name(st), pg_last_error());
    return 1;
  }
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  if (fork_child && fork() == 0) {
    sleep(5);
    _exit(0);
  }
  /* Without an MPI launcher the job is the one RANK and WORLD_SIZE describe; under one, they are not read. */
  char launcher[64] = "";
  pg_mpi_launcher(launcher, sizeof launcher);
  if (!launcher[0]) {
    EXPECT(rank == env_int("RANK", rank), "rank %d, RANK=%s", rank, getenv("RANK"));
    EXPECT(size == env_int("WORLD_SIZE", size), "size %d, WORLD_SIZE=%s", size, getenv("WORLD_SIZE"));
    /* The bootstrap's PMI variables are gone once MPI is up. */
    EXPECT(!getenv("PMI_FD"), "PMI_FD is still set: %s", getenv("PMI_FD"));
  }

  enum { N = 4096 };
  static int in[N], out[N];
  for (int i = 0; i < N; ++i) in[i] = rank * N + i;
  st = pg_allreduce(s, in, out, N, PG_INT32, PG_SUM);
  EXPECT(st == PG_OK, "allreduce: %s", pg_last_error());
  for (int i = 0; i < N && st == PG_OK; ++i)
    if (out[i] != N * size * (size - 1) / 2 + size * i) {
      EXPECT(0, "allreduce element %d is %d", i, out[i]);
      break;
    }
  if (big) {
    const size_t n = (size_t)4 << 20;
    int *v = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; ++i) v[i] = rank + (int)(i % 1000);
    EXPECT(pg_allreduce(s, v, v, n, PG_INT32, PG_SUM) == PG_OK, "big allreduce: %s", pg_last_error());
    for (size_t i = 0; i < n; ++i)
      if (v[i] != size * (size - 1) / 2 + size * (int)(i % 1000)) {
        EXPECT(0, "big allreduce element %zu is %d", i, v[i]);
        break;
      }
    free(v);
  }
  int token = rank == size - 1 ? 4242 : -1;
  EXPECT(pg_broadcast(s, &token, 1, PG_INT32, size - 1) == PG_OK && token == 4242, "broadcast gave %d", token);
  int *all = malloc(sizeof(int) * (size_t)size);
  EXPECT(pg_allgather(s, &rank, all, 1, PG_INT32) == PG_OK, "allgather: %s", pg_last_error());
  for (int r = 0; r < size; ++r) EXPECT(all[r] == r, "allgather[%d] is %d", r, all[r]);
  free(all);
  EXPECT(pg_barrier(s) == PG_OK, "barrier: %s", pg_last_error());

  if (die >= 0 || abort_rank >= 0) spin(s, rank, die, abort_rank);
  /* Rank 0's clock decides, so every rank makes the same number of calls. */
  const double end = MPI_Wtime() + hold;
  for (int more = hold > 0;;) {
    int going = rank == 0 && MPI_Wtime() < end;
    if (!more || pg_allreduce(s, &going, &more, 1, PG_INT32, PG_SUM) != PG_OK || !more) break;
  }

  int failed = 0;
  MPI_Allreduce(&failures, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  char backend[64];
  snprintf(backend, sizeof backend, "%s", pg_strategy_backend(s));
  printf("launch_job: rank %d of %d, node %d of %d, backend %s: %s\n", rank, size, pg_strategy_node_rank(s),
         pg_strategy_node_count(s), backend, failed ? "FAILED" : "OK");
  pg_strategy_destroy(s);
  if (mpi_first) MPI_Finalize();
  return failed ? 1 : 0;
}
