/* A plain MPI_Allreduce loop (float32 sum), the baseline any MPI can run:
 * other-mpis.sh, next to it, builds it with each MPI's own mpicc. For each
 * size from 1 MiB to 256 MiB (x4), out of place and in place: `reps`
 * repetitions of `iters` timed calls, each after a barrier and timed as the
 * slowest rank; prints the median busbw (GB/s; for allreduce busbw = algbw *
 * 2(P-1)/P).
 *
 *   mpiexec -n 2 allreduce_loop [iters] [reps]
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
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (rank == 0) printf("# %.*s\n# bytes  oop_busbw  ip_busbw (GB/s, median of %d)\n", (int)strcspn(version, "\n"), version, reps);
  for (size_t bytes = (size_t)1 << 20; bytes <= (size_t)256 << 20; bytes *= 4) {
    const int count = (int)(bytes / sizeof(float));
    float *send = malloc(bytes), *recv = malloc(bytes);
    for (int i = 0; i < count; ++i) send[i] = recv[i] = (float)(i % 7);
    double median[2];
    for (int in_place = 0; in_place < 2; ++in_place) {
      double busbw[64];
      for (int r = 0; r < reps && r < 64; ++r) {
        MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);  /* warm-up */
        double total = 0;
        for (int i = 0; i < iters; ++i) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t = MPI_Wtime();
          MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          t = MPI_Wtime() - t;
          double slowest = 0;
          MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          total += slowest;
        }
        busbw[r] = (double)bytes / (total / iters) * 2.0 * (size - 1) / size / 1e9;
      }
      qsort(busbw, (size_t)(reps < 64 ? reps : 64), sizeof busbw[0], by_value);
      median[in_place] = busbw[(reps < 64 ? reps : 64) / 2];
    }
    if (rank == 0) printf("%10zu %8.2f %8.2f\n", bytes, median[0], median[1]);
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return 0;
}
