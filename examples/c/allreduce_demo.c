/* The quick-start job. Every rank creates two CPU strategies: the default one
 * (backend NULL: PGS_BACKEND if set, else the device default, mpi) and one
 * with the fairring backend. Both run the same allreduce on a few sizes and
 * every result is checked; rank 0 prints the times side by side. A broadcast
 * and a barrier on each strategy are checked too. Exit status 0 when every
 * check passed on every rank, 1 otherwise.
 *
 *   mpiexec -n 2 ./allreduce_demo              64 KiB, 4 MiB and 64 MiB of float32
 *   mpiexec -n 2 ./allreduce_demo 1000000 ...  these element counts instead
 *
 * Each time is the median over RUNS calls, after WARMUP untimed ones. Every
 * call starts after a barrier, and its time is that of the slowest rank.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pg_strategy.h"

enum { WARMUP = 2, RUNS = 7, MAX_SIZES = 16 };

/* A failed call means the job cannot go on. Returning on this rank alone could
 * leave the others waiting in a collective, so the whole job is stopped. */
#define CHECK(call)                                                                  \
  do {                                                                               \
    pg_status st_ = (call);                                                          \
    if (st_ != PG_OK) {                                                              \
      fprintf(stderr, "%s failed: %s: %s\n", #call, pg_status_name(st_), pg_last_error()); \
      stop_job();                                                                    \
    }                                                                                \
  } while (0)

static void stop_job(void) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* The input of rank r at element i is r + i % 1024, so the sum over `size`
 * ranks is known exactly (small whole numbers are exact in float32). */
static float input(int rank, size_t i) { return (float)(rank + (int)(i % 1024)); }
static float expected_sum(int size, size_t i) {
  return (float)(size * (size - 1) / 2 + size * (int)(i % 1024));
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Times RUNS allreduces of `count` floats (after WARMUP untimed ones) and
 * returns the median time of the slowest rank, in seconds. Adds the number of
 * wrong elements this rank received to *wrong. */
static double time_allreduce(pg_strategy *s, const float *send, float *recv, size_t count,
                             unsigned long long *wrong) {
  int size = pg_strategy_size(s);
  double times[RUNS];
  for (int run = -WARMUP; run < RUNS; ++run) {
    for (size_t i = 0; i < count; ++i) recv[i] = -1.0f; /* no stale result can pass */
    CHECK(pg_barrier(s));
    double t0 = MPI_Wtime();
    CHECK(pg_allreduce(s, send, recv, count, PG_FLOAT32, PG_SUM));
    double mine = MPI_Wtime() - t0, slowest = 0.0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (run >= 0) times[run] = slowest;
    for (size_t i = 0; i < count; ++i)
      if (recv[i] != expected_sum(size, i)) ++*wrong;
  }
  qsort(times, RUNS, sizeof times[0], compare_doubles);
  return times[RUNS / 2];
}

/* Broadcast from the last rank, then a barrier; returns 1 if the value is wrong. */
static int check_broadcast(pg_strategy *s) {
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  int token = rank == size - 1 ? 42 : -1;
  CHECK(pg_broadcast(s, &token, 1, PG_INT32, size - 1));
  CHECK(pg_barrier(s));
  return token != 42;
}

/* "64 KiB", "4 MiB", or plain bytes when the size is not a whole number of those. */
static void format_bytes(size_t bytes, char *buf, size_t len) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    snprintf(buf, len, "%zu MiB", bytes >> 20);
  else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0)
    snprintf(buf, len, "%zu KiB", bytes >> 10);
  else
    snprintf(buf, len, "%zu B", bytes);
}

/* Reads the element counts given on the command line into counts; returns how
 * many, or 0 when one is not a whole number above 0 or there are too many. */
static int read_counts(int argc, char **argv, size_t *counts) {
  if (argc - 1 > MAX_SIZES) return 0;
  for (int k = 1; k < argc; ++k) {
    char *end = NULL;
    unsigned long long value = strtoull(argv[k], &end, 10);
    if (argv[k][0] < '0' || argv[k][0] > '9' || *end != '\0' || value == 0) return 0;
    counts[k - 1] = (size_t)value;
  }
  return argc - 1;
}

int main(int argc, char **argv) {
  size_t counts[MAX_SIZES] = {(64u << 10) / 4, (4u << 20) / 4, (64u << 20) / 4};
  int nsizes = 3;
  if (argc > 1 && (nsizes = read_counts(argc, argv, counts)) == 0) {
    fprintf(stderr, "usage: %s [COUNT...]: up to %d element counts, each a whole number above 0\n",
            argv[0], MAX_SIZES);
    return 2;
  }
  size_t max_count = 1;
  for (int k = 0; k < nsizes; ++k)
    if (counts[k] > max_count) max_count = counts[k];

  /* Both calls are collective: every rank gets the same status. */
  pg_strategy *deflt = NULL, *fairring = NULL;
  CHECK(pg_strategy_create("cpu", NULL, &deflt));
  CHECK(pg_strategy_create("cpu", "fairring", &fairring));
  int rank = pg_strategy_rank(deflt), size = pg_strategy_size(deflt);

  if (rank == 0) {
    char description[4096];
    CHECK(pg_strategy_describe(deflt, description, sizeof description));
    printf("default strategy: %s\n", description);
    CHECK(pg_strategy_describe(fairring, description, sizeof description));
    printf("fairring strategy: %s\n\n", description);
  }

  /* Ordinary memory for both. Buffers from pg_mem_alloc would let fairring
   * skip a copy on large messages; see pg_strategy.h. */
  float *send = malloc(max_count * sizeof *send);
  float *recv = malloc(max_count * sizeof *recv);
  if (!send || !recv) {
    fprintf(stderr, "rank %d: out of memory for %zu floats\n", rank, max_count);
    stop_job();
  }
  for (size_t i = 0; i < max_count; ++i) send[i] = input(rank, i);

  const char *name = pg_strategy_backend(deflt);
  if (rank == 0) {
    printf("allreduce (float32, sum) over %d ranks: median of %d calls, slowest rank;"
           " speed-up = %s time / fairring time\n", size, RUNS, name);
    printf("%10s %12s %12s %10s\n", "size", name, "fairring", "speed-up");
  }
  unsigned long long wrong = 0;
  for (int k = 0; k < nsizes; ++k) {
    double t_default = time_allreduce(deflt, send, recv, counts[k], &wrong);
    double t_fairring = time_allreduce(fairring, send, recv, counts[k], &wrong);
    if (rank == 0) {
      char bytes[32];
      format_bytes(counts[k] * sizeof(float), bytes, sizeof bytes);
      printf("%10s %9.3f ms %9.3f ms %9.2fx\n", bytes, t_default * 1e3, t_fairring * 1e3,
             t_default / t_fairring);
    }
  }
  free(send);
  free(recv);

  int broadcast_bad = check_broadcast(deflt) + check_broadcast(fairring);

  /* Every rank learns the totals, so all of them agree on the verdict. */
  unsigned long long bad[2] = {wrong, (unsigned long long)broadcast_bad}, total[2] = {0, 0};
  MPI_Allreduce(bad, total, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("\n%llu wrong elements, %llu wrong broadcasts\n", total[0], total[1]);
    printf("%s\n", total[0] == 0 && total[1] == 0 ? "OK" : "FAILED");
  }
  CHECK(pg_strategy_destroy(fairring));
  CHECK(pg_strategy_destroy(deflt));
  return total[0] == 0 && total[1] == 0 ? 0 : 1;
}
