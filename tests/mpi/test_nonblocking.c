/* Nonblocking twins: results, ordering with blocking calls, pg_work_wait's
 * timeout (the work stays valid), pg_work_free on unfinished work, and a
 * backend without native nonblocking entries (progress thread). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

static void check_backend(const char *backend) {
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", backend, &s), PG_OK);
  if (!s) return;
  const int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  enum { N = 257 };
  double x[N], y[N], g[N * 4], z[N];
  for (int i = 0; i < N; ++i) x[i] = rank + i;

  pg_test_step("%s: iallreduce, then a blocking call", backend);
  pg_work *w1 = NULL, *w2 = NULL, *w3 = NULL;
  PG_TEST_STATUS(pg_iallreduce(s, x, y, N, PG_FLOAT64, PG_SUM, &w1), PG_OK);
  int root_value = rank == 0 ? 7 : 0;
  PG_TEST_STATUS(pg_ibroadcast(s, &root_value, 1, PG_INT32, 0, &w2), PG_OK);
  PG_TEST_STATUS(pg_iallgather(s, x, g, N, PG_FLOAT64, &w3), PG_OK);
  /* A blocking call after started work runs after it. */
  for (int i = 0; i < N; ++i) z[i] = 1.0;
  PG_TEST_STATUS(pg_allreduce(s, z, z, N, PG_FLOAT64, PG_SUM), PG_OK);
  PG_TEST_STATUS(pg_work_wait(w1, -1), PG_OK);
  PG_TEST_STATUS(pg_work_wait(w2, 30.0), PG_OK);
  int done = 0;
  PG_TEST_STATUS(pg_work_wait(w3, -1), PG_OK);
  PG_TEST_STATUS(pg_work_test(w3, &done), PG_OK);
  PG_TEST_TRUE(done == 1, "finished work tests done");
  for (int i = 0; i < N; ++i) {
    double want = size * (size - 1) / 2.0 + (double)size * i;
    if (!PG_TEST_TRUE(y[i] == want && z[i] == size, "%s: element %d: %g / %g", backend, i, y[i], z[i])) break;
  }
  for (int q = 0; q < size && size <= 4; ++q)
    PG_TEST_TRUE(g[q * N + 5] == q + 5, "%s: allgather block %d", backend, q);
  PG_TEST_TRUE(root_value == 7, "ibroadcast: %d", root_value);
  PG_TEST_STATUS(pg_work_free(w1), PG_OK);
  PG_TEST_STATUS(pg_work_free(w2), PG_OK);
  PG_TEST_STATUS(pg_work_free(w3), PG_OK);

  pg_test_step("%s: queue state differs between ranks", backend);
  /* One rank waits for its first work before starting the second, the others
   * do not: how the second starts must not depend on that. */
  pg_work *first = NULL, *second = NULL;
  int token = rank == 0 ? 5 : 0;
  PG_TEST_STATUS(pg_iallreduce(s, x, y, N, PG_FLOAT64, PG_SUM, &first), PG_OK);
  if (rank == 1) PG_TEST_STATUS(pg_work_wait(first, -1), PG_OK);
  PG_TEST_STATUS(pg_ibroadcast(s, &token, 1, PG_INT32, 0, &second), PG_OK);
  PG_TEST_STATUS(pg_work_wait(second, 60.0), PG_OK);
  PG_TEST_STATUS(pg_work_wait(first, 60.0), PG_OK);
  PG_TEST_TRUE(token == 5 && y[1] == size * (size - 1) / 2.0 + size, "results %d %g", token, y[1]);
  PG_TEST_STATUS(pg_work_free(first), PG_OK);
  PG_TEST_STATUS(pg_work_free(second), PG_OK);

  pg_test_step("%s: waits in different places on different ranks", backend);
  /* Rank 0 runs a blocking broadcast before waiting for its work, the others
   * wait first; then two works waited in opposite orders. Legal, and it must
   * not deadlock on a backend whose works move only when waited for. */
  pg_work *u = NULL, *v = NULL;
  token = rank == 1 % size ? 9 : 0;
  PG_TEST_STATUS(pg_iallreduce(s, x, y, N, PG_FLOAT64, PG_SUM, &u), PG_OK);
  if (rank == 0) {
    PG_TEST_STATUS(pg_broadcast(s, &token, 1, PG_INT32, 1 % size), PG_OK);
    PG_TEST_STATUS(pg_work_wait(u, -1), PG_OK);
  } else {
    PG_TEST_STATUS(pg_work_wait(u, -1), PG_OK);
    PG_TEST_STATUS(pg_broadcast(s, &token, 1, PG_INT32, 1 % size), PG_OK);
  }
  PG_TEST_STATUS(pg_work_free(u), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, x, y, N, PG_FLOAT64, PG_SUM, &u), PG_OK);
  PG_TEST_STATUS(pg_iallreduce(s, x, z, 1, PG_FLOAT64, PG_SUM, &v), PG_OK);
  PG_TEST_STATUS(pg_work_wait(rank % 2 ? v : u, -1), PG_OK);
  PG_TEST_STATUS(pg_work_wait(rank % 2 ? u : v, -1), PG_OK);
  PG_TEST_STATUS(pg_work_free(u), PG_OK);
  PG_TEST_STATUS(pg_work_free(v), PG_OK);
  PG_TEST_TRUE(token == 9 && y[1] == size * (size - 1) / 2.0 + size && z[0] == size * (size - 1) / 2.0,
               "results %d %g %g", token, y[1], z[0]);

  pg_test_step("%s: irecv timeout", backend);
  if (size > 1 && rank < 2) {
    double v = -1;
    pg_work *r = NULL;
    if (rank == 1) {
      PG_TEST_STATUS(pg_irecv(s, &v, 1, PG_FLOAT64, 0, 11, &r), PG_OK);
      /* Nothing was sent yet: the wait times out and the work stays valid. */
      PG_TEST_STATUS(pg_work_wait(r, 0.05), PG_ERR_TIMEOUT);
      PG_TEST_STATUS(pg_work_free(r), PG_ERR_STATE);
      MPI_Send(&v, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);  /* now rank 0 may send */
      PG_TEST_STATUS(pg_work_wait(r, -1), PG_OK);
      PG_TEST_TRUE(v == 3.5, "irecv got %g", v);
      PG_TEST_STATUS(pg_work_free(r), PG_OK);
    } else {
      MPI_Recv(&v, 0, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      v = 3.5;
      PG_TEST_STATUS(pg_isend(s, &v, 1, PG_FLOAT64, 1, 11, &r), PG_OK);
      PG_TEST_STATUS(pg_work_wait(r, -1), PG_OK);
      PG_TEST_STATUS(pg_work_free(r), PG_OK);
    }
  }
  pg_test_step("%s: receives from any source", backend);
  if (size > 1) {
    /* Every other rank sends its rank to rank 0 in two rounds (a barrier
     * between them); rank 0 takes the first with irecvs from any source
     * (pg_work_source names each sender) and the second with blocking
     * receives from any source. */
    if (rank == 0) {
      int seen = 0, wrong = 0;
      for (int round = 0; round < 2; ++round) {
        if (round == 1) MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 1; k < size; ++k) {
          int from = -1, value = -1;
          if (round == 0) {
            pg_work *r = NULL;
            PG_TEST_STATUS(pg_irecv(s, &value, 1, PG_INT32, PG_ANY_SOURCE, 12, &r), PG_OK);
            PG_TEST_STATUS(pg_work_wait(r, -1), PG_OK);
            PG_TEST_STATUS(pg_work_source(r, &from), PG_OK);
            PG_TEST_STATUS(pg_work_free(r), PG_OK);
            seen |= 1 << from;
            wrong += value != from;
          } else {
            PG_TEST_STATUS(pg_recv(s, &value, 1, PG_INT32, PG_ANY_SOURCE, 12), PG_OK);
            wrong += value < 1 || value >= size;
          }
        }
      }
      PG_TEST_TRUE(seen == (1 << size) - 2 && wrong == 0, "senders seen %#x, wrong values %d", seen, wrong);
    } else {
      PG_TEST_STATUS(pg_send(s, &rank, 1, PG_INT32, 0, 12), PG_OK);
      MPI_Barrier(MPI_COMM_WORLD);
      PG_TEST_STATUS(pg_send(s, &rank, 1, PG_INT32, 0, 12), PG_OK);
    }
  }
  pg_work *sent = NULL;
  int ignored = -1;
  PG_TEST_STATUS(pg_isend(s, &rank, 1, PG_INT32, rank, 13, &sent), PG_OK);
  PG_TEST_STATUS(pg_work_source(sent, &ignored), PG_ERR_STATE); /* not finished, or not a receive */
  PG_TEST_STATUS(pg_recv(s, &ignored, 1, PG_INT32, rank, 13), PG_OK);
  PG_TEST_STATUS(pg_work_wait(sent, -1), PG_OK);
  PG_TEST_STATUS(pg_work_source(sent, &ignored), PG_ERR_STATE); /* a send has no sender to report */
  PG_TEST_STATUS(pg_work_free(sent), PG_OK);

  pg_test_step("%s: a started send does not hold back later calls", backend);
  /* Legal MPI that deadlocks if a queued send or collective had to finish
   * before a later blocking point-to-point call starts: each rank sends its
   * neighbour a message too large to go eagerly and receives blocking; then
   * a started allreduce, a send to the next rank, which receives before its
   * allreduce. Not the second where the allreduce waits for every rank as it
   * starts: a backend without native nonblocking entries below
   * MPI_THREAD_MULTIPLE (it completes in the call), PGS_DEBUG=detail (its
   * check). */
  {
    int level = 0;
    MPI_Query_thread(&level);
    const char *debug = getenv("PGS_DEBUG");
    const int allreduce_waits = (strcmp(backend, "plain") == 0 && level < MPI_THREAD_MULTIPLE) ||
                                (debug && strcmp(debug, "detail") == 0);
    enum { BIG = 1 << 18 };
    int *out = malloc(BIG * sizeof(int)), *in = malloc(BIG * sizeof(int));
    for (int i = 0; i < BIG; ++i) out[i] = rank * 7 + i;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    pg_work *sending = NULL, *summing = NULL;
    PG_TEST_STATUS(pg_isend(s, out, BIG, PG_INT32, next, 14, &sending), PG_OK);
    PG_TEST_STATUS(pg_recv(s, in, BIG, PG_INT32, prev, 14), PG_OK);
    PG_TEST_STATUS(pg_work_wait(sending, -1), PG_OK);
    PG_TEST_STATUS(pg_work_free(sending), PG_OK);
    PG_TEST_TRUE(in[0] == prev * 7 && in[BIG - 1] == prev * 7 + BIG - 1, "exchange: %d %d", in[0], in[BIG - 1]);
    /* (One rank would send to itself blocking: not legal MPI.) */
    if (size > 1 && !allreduce_waits) {
      double one = 1.0, total = 0.0;
      int token_in = -1;
      if (rank == 0) {
        PG_TEST_STATUS(pg_iallreduce(s, &one, &total, 1, PG_FLOAT64, PG_SUM, &summing), PG_OK);
        PG_TEST_STATUS(pg_send(s, &rank, 1, PG_INT32, next, 15), PG_OK);
        PG_TEST_STATUS(pg_work_wait(summing, -1), PG_OK);
        PG_TEST_STATUS(pg_work_free(summing), PG_OK);
        PG_TEST_STATUS(pg_recv(s, &token_in, 1, PG_INT32, prev, 15), PG_OK);
      } else {
        PG_TEST_STATUS(pg_recv(s, &token_in, 1, PG_INT32, prev, 15), PG_OK);
        PG_TEST_STATUS(pg_send(s, &rank, 1, PG_INT32, next, 15), PG_OK);
        PG_TEST_STATUS(pg_allreduce(s, &one, &total, 1, PG_FLOAT64, PG_SUM), PG_OK);
      }
      PG_TEST_TRUE(total == size && token_in == prev, "allreduce %g, token %d", total, token_in);
    }
    free(out);
    free(in);
  }

  pg_test_step("%s: ibarrier and the remaining twins", backend);
  pg_work *b = NULL;
  PG_TEST_STATUS(pg_ibarrier(s, &b), PG_OK);
  PG_TEST_STATUS(pg_work_wait(b, -1), PG_OK);
  PG_TEST_STATUS(pg_work_free(b), PG_OK);
  pg_work *w[5] = {NULL};
  /* Every pending work has buffers of its own: one work's send buffer must not
   * be another's receive buffer while both are pending (MPI forbids it). */
  double rs[N], red[N], sc[N], a2a[4 * N], a2a_out[4 * N], gathered[4 * N];
  for (int i = 0; i < size * N && size <= 4; ++i) { g[i] = rank + i; a2a[i] = rank * 1000 + i; }
  PG_TEST_STATUS(pg_ireduce_scatter(s, g, rs, N, PG_FLOAT64, PG_SUM, &w[0]), PG_OK);
  PG_TEST_STATUS(pg_ireduce(s, x, red, N, PG_FLOAT64, PG_MAX, 0, &w[1]), PG_OK);
  PG_TEST_STATUS(pg_iscatter(s, a2a, sc, N, PG_FLOAT64, 0, &w[2]), PG_OK);
  PG_TEST_STATUS(pg_ialltoall(s, a2a, a2a_out, N, PG_FLOAT64, &w[3]), PG_OK);
  PG_TEST_STATUS(pg_igather(s, x, rank == 0 ? gathered : NULL, N, PG_FLOAT64, 0, &w[4]), PG_OK);
  for (int i = 0; i < 5; ++i) {
    PG_TEST_STATUS(pg_work_wait(w[i], -1), PG_OK);
    PG_TEST_STATUS(pg_work_free(w[i]), PG_OK);
  }
  PG_TEST_TRUE(rs[1] == size * (size - 1) / 2.0 + (double)size * (rank * N + 1), "ireduce_scatter: %g", rs[1]);
  if (rank == 0) PG_TEST_TRUE(red[2] == size - 1 + 2, "ireduce max: %g", red[2]);
  PG_TEST_TRUE(sc[3] == rank * N + 3, "iscatter: %g", sc[3]);
  PG_TEST_TRUE(size < 2 || a2a_out[N + 4] == 1000 + rank * N + 4, "ialltoall: %g", a2a_out[N + 4]);
  if (rank == 0) PG_TEST_TRUE(gathered[(size - 1) * N + 6] == size - 1 + 6, "igather");

  /* Destroy completes unfinished work first. */
  pg_work *left = NULL;
  PG_TEST_STATUS(pg_iallreduce(s, x, y, N, PG_FLOAT64, PG_SUM, &left), PG_OK);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  PG_TEST_STATUS(pg_work_wait(left, -1), PG_OK);
  PG_TEST_STATUS(pg_work_free(left), PG_OK);
  PG_TEST_TRUE(y[0] == size * (size - 1) / 2.0, "work finished by destroy: %g", y[0]);
}

int main(int argc, char **argv) {
  pg_test_watchdog("test_nonblocking");
  int provided = 0;
  /* "funneled": below MPI_THREAD_MULTIPLE nonblocking calls complete in the call. */
  int level = argc > 1 && strcmp(argv[1], "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
  MPI_Init_thread(&argc, &argv, level, &provided);
  PG_TEST_STATUS(pg_test_register_plain(), PG_OK);
  check_backend("mpi");
  check_backend("plain");
  /* fairring's own nonblocking path (its schedule) at every size: no flat
   * threshold, and slices small enough that every call takes several. */
  setenv("PGS_FAIRRING_MIN_BYTES", "0", 1);
  setenv("PGS_FAIRRING_SLICE_BYTES", "256", 1);
  check_backend("fairring");
  int failed = pg_test_verdict(MPI_COMM_WORLD, "test_nonblocking");
  MPI_Finalize();
  return failed;
}
