/* A small allreduce timing loop for plugin backends (float32 SUM, out of place).
 *
 *     PGS_PLUGIN_PATH=<build>/plugins mpiexec -n 2 ./pg_plugin_bench gloo,mpi 1M,16M,64M
 *
 * Each timed iteration starts after a barrier; its time is the maximum over
 * ranks; a row reports the median. busbw = bytes / time * 2(P-1)/P, as
 * nccl-tests does for allreduce. Backends are interleaved per size. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pg_strategy.h"

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static size_t parse_size(const char *text) {
  char *end = NULL;
  size_t v = strtoull(text, &end, 10);
  if (*end == 'K') v <<= 10;
  if (*end == 'M') v <<= 20;
  if (*end == 'G') v <<= 30;
  return v;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char backends[256] = "gloo,mpi", sizes[256] = "1M,16M,64M";
  if (argc > 1) snprintf(backends, sizeof backends, "%s", argv[1]);
  if (argc > 2) snprintf(sizes, sizeof sizes, "%s", argv[2]);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  pg_strategy *strategies[8];
  const char *names[8];
  int count = 0;
  for (char *save = NULL, *name = strtok_r(backends, ",", &save); name && count < 8;
       name = strtok_r(NULL, ",", &save)) {
    if (pg_strategy_create("cpu", name, &strategies[count]) != PG_OK) {
      if (rank == 0) fprintf(stderr, "%s: %s\n", name, pg_last_error());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    names[count++] = name;
  }
  if (rank == 0) printf("%12s %10s %12s %10s %10s\n", "bytes", "backend", "time(us)", "algbw", "busbw");
  for (char *save = NULL, *item = strtok_r(sizes, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    const size_t bytes = parse_size(item), n = bytes / sizeof(float);
    const int iters = bytes >= ((size_t)32 << 20) ? 7 : bytes >= ((size_t)8 << 20) ? 11 : 31;
    float *send = (float *)malloc(bytes), *recv = (float *)malloc(bytes);
    for (size_t i = 0; i < n; ++i) send[i] = (float)(i % 5);
    double *times = (double *)calloc((size_t)count * iters, sizeof *times);
    for (int b = 0; b < count; ++b) /* warm-up */
      for (int w = 0; w < 2; ++w) pg_allreduce(strategies[b], send, recv, n, PG_FLOAT32, PG_SUM);
    for (int it = 0; it < iters; ++it)
      for (int b = 0; b < count; ++b) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        pg_status rc = pg_allreduce(strategies[b], send, recv, n, PG_FLOAT32, PG_SUM);
        double t = MPI_Wtime() - t0, tmax = 0;
        if (rc != PG_OK) fprintf(stderr, "%s: %s\n", names[b], pg_last_error());
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[b * iters + it] = tmax;
      }
    for (int b = 0; b < count; ++b) {
      qsort(times + b * iters, (size_t)iters, sizeof *times, by_value);
      double t = times[b * iters + iters / 2], algbw = (double)bytes / t / 1e9;
      if (rank == 0)
        printf("%12zu %10s %12.1f %10.2f %10.2f\n", bytes, names[b], t * 1e6, algbw,
               algbw * 2.0 * (size - 1) / size);
    }
    free(send); free(recv); free(times);
  }
  for (int b = 0; b < count; ++b) pg_strategy_destroy(strategies[b]);
  MPI_Finalize();
  return 0;
}
