/*
 * linked_in.c — the same ring backend, linked into the application and
 * registered at run time with pg_backend_register, instead of loaded as a plugin.
 *
 *     mpiexec -n 4 ./pg_ring_linked_in
 *
 * ring.c is compiled into this program; its pg_backend_plugin_init() fills a
 * pg_backend_ops table and calls pg_backend_register(). After that, "ring" is a
 * backend name like "mpi": no PGS_PLUGIN_PATH, no shared library to find.
 */
#include <stdio.h>

#include <mpi.h>

#include "pg_backend.h"

pg_status pg_backend_plugin_init(void); /* in ring.c */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);

  /* Registration is local and thread-safe; do it on every rank, before the
   * first strategy that names the backend. */
  if (pg_backend_plugin_init() != PG_OK) {
    fprintf(stderr, "pg_backend_register: %s\n", pg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  pg_strategy *s = NULL;
  if (pg_strategy_create("cpu", "ring", &s) != PG_OK) {
    fprintf(stderr, "pg_strategy_create: %s\n", pg_last_error());
    MPI_Finalize();
    return 1;
  }
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  double value = rank + 1.0, sum = 0.0;
  pg_status rc = pg_allreduce(s, &value, &sum, 1, PG_FLOAT64, PG_SUM);
  if (rank == 0)
    printf("backend %s: sum of 1..%d = %g (%s)\n", pg_strategy_backend(s), size, sum,
           pg_status_name(rc));
  pg_strategy_destroy(s);
  MPI_Finalize();
  return rc == PG_OK && sum == size * (size + 1) / 2.0 ? 0 : 1;
}
