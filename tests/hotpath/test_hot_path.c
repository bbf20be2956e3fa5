/* The hot path allocates nothing: a blocking collective on fairring's fast
 * path makes no allocation at all, and one on the mpi backend makes exactly
 * those its MPI makes for the same call (counted by malloc_count.so,
 * preloaded). Every rank checks; the verdict is agreed. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

#define CALLS 200

static unsigned long *allocations;

/* Allocations per call of `body`, after a warm-up of the same calls: the
 * fewest of three rounds, since the count is the whole process's and MPI's
 * progress now and then allocates for a reason of its own (one allocation in
 * a round of 200 calls was seen). An allocation the call itself makes shows
 * in every round. */
#define PER_CALL(result, body)                                      \
  do {                                                              \
    for (int i_ = 0; i_ < 20; ++i_) body;                            \
    result = -1;                                                    \
    for (int round_ = 0; round_ < 3; ++round_) {                    \
      const unsigned long before_ = *allocations;                   \
      for (int i_ = 0; i_ < CALLS; ++i_) body;                       \
      const double per_call_ = (double)(*allocations - before_) / CALLS; \
      if (result < 0 || per_call_ < result) result = per_call_;     \
    }                                                               \
  } while (0)

int main(void) {
  pg_test_watchdog("test_hot_path");
  allocations = dlsym(RTLD_DEFAULT, "pg_test_allocations");
  if (!allocations) {
    fprintf(stderr, "SKIP: malloc_count.so is not preloaded\n");
    return PG_TEST_SKIP;
  }
  pg_strategy *fair = NULL, *mpi = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", "fairring", &fair), PG_OK);
  PG_TEST_STATUS(pg_strategy_create("cpu", "mpi", &mpi), PG_OK);
  if (!fair || !mpi) return 1;
  float x[64] = {0}, y[64 * 8];
  double got = 0, raw = 0;

  PER_CALL(got, pg_allreduce(fair, x, y, 2, PG_FLOAT32, PG_SUM));
  PG_TEST_TRUE(got == 0, "fairring allreduce (fast path): %.2f allocations per call", got);
  PER_CALL(got, pg_allgather(fair, x, y, 2, PG_FLOAT32));
  PG_TEST_TRUE(got == 0, "fairring allgather (fast path): %.2f allocations per call", got);
  PER_CALL(got, pg_barrier(fair));
  PG_TEST_TRUE(got == 0, "fairring barrier (fast path): %.2f allocations per call", got);

  /* The mpi backend against the MPI calls it makes: nonblocking ones it polls
     (PGS_MPI_WAIT=poll, the default), or blocking ones. */
  const char *wait = getenv("PGS_MPI_WAIT");
  const int block = wait && strcmp(wait, "block") == 0;
  MPI_Request r;
  if (block) PER_CALL(raw, MPI_Allreduce(x, y, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  else PER_CALL(raw, (MPI_Iallreduce(x, y, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r), MPI_Wait(&r, MPI_STATUS_IGNORE)));
  PER_CALL(got, pg_allreduce(mpi, x, y, 2, PG_FLOAT32, PG_SUM));
  PG_TEST_TRUE(got <= raw, "mpi allreduce: %.3f allocations per call, MPI's own %.3f", got, raw);
  if (block) PER_CALL(raw, MPI_Bcast(x, 2, MPI_FLOAT, 0, MPI_COMM_WORLD));
  else PER_CALL(raw, (MPI_Ibcast(x, 2, MPI_FLOAT, 0, MPI_COMM_WORLD, &r), MPI_Wait(&r, MPI_STATUS_IGNORE)));
  PER_CALL(got, pg_broadcast(mpi, x, 2, PG_FLOAT32, 0));
  PG_TEST_TRUE(got <= raw, "mpi broadcast: %.3f allocations per call, MPI's own %.3f", got, raw);

  PG_TEST_STATUS(pg_strategy_destroy(fair), PG_OK);
  PG_TEST_STATUS(pg_strategy_destroy(mpi), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_hot_path");
}
