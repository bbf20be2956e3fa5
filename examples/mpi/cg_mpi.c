/* An MPI program that knows nothing of pgstrategy: conjugate gradients on the
 * 1-D Poisson problem -u'' = 1 on (0,1), u(0) = u(1) = 0, over n points split
 * into blocks of rows, one per rank (halo exchange with MPI_Sendrecv, dot
 * products with MPI_Allreduce), checked against the exact solution
 * u(x) = x(1-x)/2. Run it unchanged, its collectives through pgstrategy:
 *
 *   mpiexec -n 4 pgs-mpi ./cg_mpi [n=4096]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double dot(const double *a, const double *b, int n) {
  double local = 0, global = 0;
  for (int i = 0; i < n; ++i) local += a[i] * b[i];
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global;
}

/* y = A x for A = tridiag(-1, 2, -1) / h^2, x's halo from the neighbours. */
static void apply(const double *x, double *y, int n, int rank, int size, double h2) {
  double left = 0, right = 0;
  const int lo = rank > 0 ? rank - 1 : MPI_PROC_NULL, hi = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(&x[n - 1], 1, MPI_DOUBLE, hi, 0, &left, 1, MPI_DOUBLE, lo, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(&x[0], 1, MPI_DOUBLE, lo, 1, &right, 1, MPI_DOUBLE, hi, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  for (int i = 0; i < n; ++i) {
    const double l = i > 0 ? x[i - 1] : left, r = i < n - 1 ? x[i + 1] : right;
    y[i] = (2 * x[i] - l - r) / h2;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int total = argc > 1 ? atoi(argv[1]) : 4096;
  MPI_Bcast(&total, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (total < size) {
    if (rank == 0) fprintf(stderr, "cg_mpi: n=%d is below the %d ranks\n", total, size);
    MPI_Finalize();
    return 2;
  }
  /* Rank r holds rows [first, first + n). */
  const int n = total / size + (rank < total % size), first = rank * (total / size) + (rank < total % size ? rank : total % size);
  const double h = 1.0 / (total + 1), h2 = h * h;
  double *u = calloc(n, sizeof *u), *r = malloc(n * sizeof *r), *p = malloc(n * sizeof *p), *q = malloc(n * sizeof *q);
  for (int i = 0; i < n; ++i) r[i] = p[i] = 1.0; /* b - A*0 */
  double rr = dot(r, r, n);
  const double stop = 1e-20 * rr;
  int it = 0;
  for (; it < 4 * total && rr > stop; ++it) {
    apply(p, q, n, rank, size, h2);
    const double alpha = rr / dot(p, q, n);
    for (int i = 0; i < n; ++i) u[i] += alpha * p[i], r[i] -= alpha * q[i];
    const double next = dot(r, r, n);
    for (int i = 0; i < n; ++i) p[i] = r[i] + next / rr * p[i];
    rr = next;
  }
  double err = 0, worst = 0;
  for (int i = 0; i < n; ++i) {
    const double x = (first + i + 1) * h;
    err = fmax(err, fabs(u[i] - x * (1 - x) / 2));
  }
  MPI_Reduce(&err, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  const int ok = worst < 1e-6;
  if (rank == 0) printf("cg_mpi: n=%d on %d ranks, %d iterations, max error %.2e: %s\n", total, size, it, worst,
                        ok ? "OK" : "WRONG");
  free(u), free(r), free(p), free(q);
  MPI_Finalize();
  return ok ? 0 : 1;
}
