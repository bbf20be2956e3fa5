/* An MPI failure comes back as PG_ERR_BACKEND with MPI's own error text and
 * poisons the strategy: every later call that uses it returns PG_ERR_STATE
 * (each entry point is tried), the local queries and destroy still work.
 * The failure is real: rank 1 receives 10 elements into room for 5. */
#include <string.h>

#include "pg_test.h"

/* Every entry point that uses the strategy, on a poisoned one: PG_ERR_STATE,
 * saying why, and no work made. None communicates, so one rank alone may call
 * them (the collective ones included). */
static void every_call_refused(pg_strategy *s, void *shared) {
  int a[4] = {0}, b[4] = {0};
  pg_work *w = NULL;
#define REFUSED(call)                                                              \
  do {                                                                             \
    PG_TEST_STATUS(call, PG_ERR_STATE);                                            \
    PG_TEST_TRUE(strstr(pg_last_error(), "unusable") != NULL, #call ": %s", pg_last_error()); \
  } while (0)
#define REFUSED_WORK(call)                                                         \
  do {                                                                             \
    w = (pg_work *)&w;                                                             \
    REFUSED(call);                                                                 \
    PG_TEST_TRUE(w == NULL, #call " made no work");                                \
  } while (0)
  REFUSED(pg_allreduce(s, a, b, 1, PG_INT32, PG_SUM));
  REFUSED(pg_broadcast(s, a, 1, PG_INT32, 0));
  REFUSED(pg_reduce(s, a, b, 1, PG_INT32, PG_SUM, 0));
  REFUSED(pg_allgather(s, a, b, 1, PG_INT32));
  REFUSED(pg_reduce_scatter(s, a, b, 1, PG_INT32, PG_SUM));
  REFUSED(pg_alltoall(s, a, b, 1, PG_INT32));
  REFUSED(pg_gather(s, a, b, 1, PG_INT32, 0));
  REFUSED(pg_scatter(s, a, b, 1, PG_INT32, 0));
  REFUSED(pg_barrier(s));
  REFUSED(pg_send(s, a, 1, PG_INT32, 0, 1));
  REFUSED(pg_recv(s, a, 1, PG_INT32, 0, 1));
  REFUSED(pg_sendrecv(s, a, 1, 0, b, 1, 0, PG_INT32, 1));
  REFUSED_WORK(pg_iallreduce(s, a, b, 1, PG_INT32, PG_SUM, &w));
  REFUSED_WORK(pg_ibroadcast(s, a, 1, PG_INT32, 0, &w));
  REFUSED_WORK(pg_ireduce(s, a, b, 1, PG_INT32, PG_SUM, 0, &w));
  REFUSED_WORK(pg_iallgather(s, a, b, 1, PG_INT32, &w));
  REFUSED_WORK(pg_ireduce_scatter(s, a, b, 1, PG_INT32, PG_SUM, &w));
  REFUSED_WORK(pg_ialltoall(s, a, b, 1, PG_INT32, &w));
  REFUSED_WORK(pg_igather(s, a, b, 1, PG_INT32, 0, &w));
  REFUSED_WORK(pg_iscatter(s, a, b, 1, PG_INT32, 0, &w));
  REFUSED_WORK(pg_ibarrier(s, &w));
  REFUSED_WORK(pg_isend(s, a, 1, PG_INT32, 0, 1, &w));
  REFUSED_WORK(pg_irecv(s, a, 1, PG_INT32, 0, 1, &w));
  pg_strategy *sub = (pg_strategy *)&sub;
  REFUSED(pg_strategy_split(s, 0, 0, &sub));
  PG_TEST_TRUE(sub == NULL, "split made no strategy");
  REFUSED(pg_strategy_set_stream(s, NULL));
  void *p = &p;
  REFUSED(pg_mem_alloc(s, 64, &p));
  PG_TEST_TRUE(p == NULL, "pg_mem_alloc gave no memory");
  REFUSED(pg_mem_free(s, shared));
  REFUSED(pg_mem_free(s, NULL));
#undef REFUSED_WORK
#undef REFUSED
}

int main(void) {
  pg_test_watchdog("test_poison");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (!s) return 1;
  const int rank = pg_strategy_rank(s);
  int data[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  /* Shared memory made before the failure: pg_strategy_destroy frees it. */
  void *shared = NULL;
  PG_TEST_STATUS(pg_mem_alloc(s, 256, &shared), PG_OK);
  if (rank == 0) {
    PG_TEST_STATUS(pg_send(s, data, 10, PG_INT32, 1, 5), PG_OK);
  } else if (rank == 1) {
    PG_TEST_STATUS(pg_recv(s, data, 5, PG_INT32, 0, 5), PG_ERR_BACKEND);
    PG_TEST_TRUE(strstr(pg_last_error(), "MPI_Recv") && strstr(pg_last_error(), "runcat"),
                 "MPI's own text expected: %s", pg_last_error());
    every_call_refused(s, shared);
    char text[2048];
    PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
    PG_TEST_TRUE(strstr(text, "unusable") != NULL, "describe: %s", text);
    PG_TEST_STATUS(pg_strategy_info(s, "host", text, sizeof text), PG_OK);
    PG_TEST_TRUE(pg_strategy_rank(s) == 1 && pg_strategy_size(s) > 1, "the getters still answer");
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_poison");
}
