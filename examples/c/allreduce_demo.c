/* The quick-start job: every rank asks for the CPU default strategy, runs a few
 * collectives and checks them, and rank 0 prints what happened.
 *
 *   mpiexec -n 4 ./allreduce_demo [count]
 */
#include <stdio.h>
#include <stdlib.h>

#include "pg_strategy.h"

#define CHECK(call)                                                               \
  do {                                                                            \
    pg_status st_ = (call);                                                       \
    if (st_ != PG_OK) {                                                           \
      fprintf(stderr, "%s failed: %s: %s\n", #call, pg_status_name(st_), pg_last_error()); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

int main(int argc, char **argv) {
  size_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 1u << 20;
  pg_strategy *s = NULL;
  /* NULL backend: PGS_BACKEND if set, else the device default (mpi for cpu). */
  CHECK(pg_strategy_create("cpu", NULL, &s));
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);

  char description[512];
  CHECK(pg_strategy_describe(s, description, sizeof description));
  if (rank == 0) printf("strategy: %s\n", description);

  /* allreduce: element i of rank r is r + i; the sum over ranks is known. */
  float *data = malloc(count * sizeof *data);
  for (size_t i = 0; i < count; ++i) data[i] = (float)(rank + (int)(i % 1000));
  double t0 = MPI_Wtime();
  CHECK(pg_allreduce(s, data, data, count, PG_FLOAT32, PG_SUM));
  double seconds = MPI_Wtime() - t0;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float expected = (float)(size * (size - 1) / 2 + size * (int)(i % 1000));
    if (data[i] != expected) ++wrong;
  }

  /* broadcast from the last rank, and a barrier. */
  int token = rank == size - 1 ? 42 : -1;
  CHECK(pg_broadcast(s, &token, 1, PG_INT32, size - 1));
  CHECK(pg_barrier(s));

  unsigned long long bad = wrong + (token != 42), total_bad = 0;
  MPI_Allreduce(&bad, &total_bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("allreduce of %zu floats over %d ranks: %.3f ms, %llu wrong elements\n", count, size,
           seconds * 1e3, total_bad);
    printf("%s\n", total_bad == 0 ? "OK" : "FAILED");
  }
  free(data);
  CHECK(pg_strategy_destroy(s));
  return total_bad == 0 ? 0 : 1;
}
