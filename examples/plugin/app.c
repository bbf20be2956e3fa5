/*
 * app.c — an application that uses a backend chosen at run time.
 *
 *     PGS_PLUGIN_PATH=$PWD PGS_BACKEND=cpu:ring mpiexec -n 4 ./pg_ring_app
 *     PGS_PLUGIN_PATH=$PWD mpiexec -n 4 ./pg_ring_app ring
 *
 * The code does not know about the ring backend: the name comes from the
 * command line or from PGS_BACKEND, and the library loads libpg_backend_ring.so
 * from PGS_PLUGIN_PATH the first time a strategy asks for it.
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "pg_strategy.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *backend = argc > 1 ? argv[1] : NULL; /* NULL: PGS_BACKEND, then "mpi" */

  pg_strategy *s = NULL;
  if (pg_strategy_create("cpu", backend, &s) != PG_OK) {
    /* Every rank fails together, with the same status; the message says why. */
    fprintf(stderr, "pg_strategy_create: %s\n", pg_last_error());
    MPI_Finalize();
    return 1;
  }
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);

  /* Allreduce runs on the chosen backend (ring implements float32 SUM)... */
  enum { N = 1000003 };
  float *x = (float *)malloc(N * sizeof *x);
  for (int i = 0; i < N; ++i) x[i] = (float)(rank + i % 7);
  pg_status rc = pg_allreduce(s, x, x, N, PG_FLOAT32, PG_SUM);

  /* ...and the same call with PG_MAX, which ring does not implement, runs on
   * the default backend: the application does not have to care. */
  int local_max = rank, global_max = -1;
  if (rc == PG_OK) rc = pg_allreduce(s, &local_max, &global_max, 1, PG_INT32, PG_MAX);

  int wrong = 0;
  for (int i = 0; rc == PG_OK && i < N; ++i)
    if (x[i] != (float)(size * (size - 1) / 2 + size * (i % 7))) ++wrong;
  if (global_max != size - 1) ++wrong;

  if (rank == 0) {
    char text[4096];
    pg_strategy_describe(s, text, sizeof text);
    printf("%s\nallreduce: %s, %d wrong elements\n", text, pg_status_name(rc), wrong);
  }
  free(x);
  pg_strategy_destroy(s);
  MPI_Finalize();
  return rc == PG_OK && wrong == 0 ? 0 : 1;
}
