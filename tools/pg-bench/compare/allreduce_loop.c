/* A plain MPI_Allreduce loop (float32 sum), the baseline any MPI can run: the
 * comparison scripts next to it build it with each MPI's own mpicc. For each
 * size from `from` to `to` bytes (times `factor`), out of place and in place:
 * `reps` repetitions of `iters` calls back to back after a barrier, timed as
 * the slowest rank; prints the medians of the time per call (us) and busbw
 * (GB/s; for allreduce busbw = algbw * 2(P-1)/P).
 *
 *   mpiexec -n 2 allreduce_loop [iters=10] [reps=5] [from=1M] [to=256M] [factor=4]   (sizes in bytes)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iters = argc > 1 ? atoi(argv[1]) : 10, reps = argc > 2 ? atoi(argv[2]) : 5;
  const size_t from = argc > 3 ? strtoull(argv[3], NULL, 10) : (size_t)1 << 20;
  const size_t to = argc > 4 ? strtoull(argv[4], NULL, 10) : (size_t)256 << 20;
  const size_t factor = argc > 5 ? strtoull(argv[5], NULL, 10) : 4;
  if (iters < 1 || reps < 1 || reps > 64 || from < sizeof(float) || factor < 2) {
    if (rank == 0) fprintf(stderr, "usage: allreduce_loop [iters>=1] [reps 1..64] [from>=4] [to] [factor>=2]\n");
    MPI_Finalize();
    return 2;
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (rank == 0)
    printf("# %.*s\n# bytes  oop_us  ip_us  oop_busbw  ip_busbw (GB/s; medians of %d)\n", (int)strcspn(version, "\n"),
           version, reps);
  for (size_t bytes = from; bytes <= to; bytes *= factor) {
    const int count = (int)(bytes / sizeof(float));
    float *send = malloc(bytes), *recv = malloc(bytes);
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)(i % 7);
    double median[2];
    for (int in_place = 0; in_place < 2; ++in_place) {
      double seconds[64];
      for (int r = 0; r < reps; ++r) {
        for (int i = 0; i < (iters < 10 ? iters : 10); ++i) /* warm-up */
          MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; i < iters; ++i)
          MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t = (MPI_Wtime() - t) / iters;
        MPI_Allreduce(&t, &seconds[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      }
      qsort(seconds, (size_t)reps, sizeof seconds[0], by_value);
      median[in_place] = seconds[reps / 2];
    }
    const double bus = 2.0 * (size - 1) / size / 1e9 * (double)bytes;
    if (rank == 0)
      printf("%10zu %10.2f %10.2f %8.2f %8.2f\n", bytes, median[0] * 1e6, median[1] * 1e6, bus / median[0],
             bus / median[1]);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
