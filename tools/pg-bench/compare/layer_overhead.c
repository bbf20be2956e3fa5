/* What the MPI layer adds to a call, inside one process, alternated in rounds
 * so that both sides of each difference see the same machine:
 *   passed: MPI_Allreduce on MPI_COMM_SELF (the layer passes it: one rank)
 *           against PMPI_Allreduce on MPI_COMM_SELF;
 *   routed: MPI_Allreduce on MPI_COMM_WORLD (the layer routes it through its
 *           strategy) against pg_allreduce on a strategy of the same backend
 *           this program makes itself.
 * 8-byte allreduce (one double). Run it under pgs-mpi (mpi-layer.sh does):
 *   mpiexec -n 2 pgs-mpi layer_overhead [iters=20000] [rounds=5]
 * Prints the medians over rounds (us per call) and the differences. */
#include <mpi.h>
#include <pg_strategy.h>
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { PMPI_SELF, LAYER_SELF, PG_WORLD, LAYER_WORLD, KINDS };

static double run(int kind, pg_strategy *s, int iters) {
  double x = 1, y = 0;
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    switch (kind) {
      case PMPI_SELF: PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF); break;
      case LAYER_SELF: MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF); break;
      case PG_WORLD: pg_allreduce(s, &x, &y, 1, PG_FLOAT64, PG_SUM); break;
      case LAYER_WORLD: MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    }
  }
  double mine = (MPI_Wtime() - t) / iters, slowest = 0;
  PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest * 1e6;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int iters = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 5;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (iters < 1 || rounds < 1 || rounds > 64) {
    if (rank == 0) fprintf(stderr, "usage: layer_overhead [iters>=1] [rounds 1..64]\n");
    MPI_Finalize();
    return 2;
  }
  const char *backend = getenv("PGS_BACKEND");
  pg_strategy *s = NULL;
  if (pg_strategy_create_comm("cpu", backend && *backend ? backend : "fairring", MPI_COMM_WORLD, &s) != PG_OK) {
    if (rank == 0) fprintf(stderr, "layer_overhead: %s\n", pg_last_error());
    MPI_Finalize();
    return 1;
  }
  double t[KINDS][64];
  for (int k = 0; k < KINDS; ++k) run(k, s, iters / 10 + 1); /* warm-up, and the layer's strategy made */
  for (int r = 0; r < rounds; ++r)
    for (int k = 0; k < KINDS; ++k) t[k][r] = run(k, s, iters);
  double median[KINDS];
  for (int k = 0; k < KINDS; ++k) {
    qsort(t[k], (size_t)rounds, sizeof(double), by_value);
    median[k] = t[k][rounds / 2];
  }
  if (rank == 0) {
    printf("# 8-byte allreduce, us per call, medians of %d rounds of %d calls\n", rounds, iters);
    printf("passed: PMPI on MPI_COMM_SELF %.3f, MPI (through the layer) %.3f: the layer adds %.3f\n",
           median[PMPI_SELF], median[LAYER_SELF], median[LAYER_SELF] - median[PMPI_SELF]);
    printf("routed: pg_allreduce %.3f, MPI_Allreduce (through the layer) %.3f: the layer adds %.3f\n",
           median[PG_WORLD], median[LAYER_WORLD], median[LAYER_WORLD] - median[PG_WORLD]);
  }
  pg_strategy_destroy(s);
  MPI_Finalize();
  return 0;
}
