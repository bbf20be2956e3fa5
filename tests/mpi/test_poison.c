/* An MPI failure comes back as PG_ERR_BACKEND with MPI's own error text and
 * poisons the strategy: later calls return PG_ERR_STATE, destroy still works.
 * The failure is real: rank 1 receives 10 elements into room for 5. */
#include <string.h>

#include "pg_test.h"

int main(void) {
  pg_test_watchdog("test_poison");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (!s) return 1;
  const int rank = pg_strategy_rank(s);
  int data[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  if (rank == 0) {
    PG_TEST_STATUS(pg_send(s, data, 10, PG_INT32, 1, 5), PG_OK);
  } else if (rank == 1) {
    PG_TEST_STATUS(pg_recv(s, data, 5, PG_INT32, 0, 5), PG_ERR_BACKEND);
    PG_TEST_TRUE(strstr(pg_last_error(), "MPI_Recv") && strstr(pg_last_error(), "runcat"),
                 "MPI's own text expected: %s", pg_last_error());
    PG_TEST_STATUS(pg_allreduce(s, data, data, 1, PG_INT32, PG_SUM), PG_ERR_STATE);
    PG_TEST_TRUE(strstr(pg_last_error(), "unusable") != NULL, "%s", pg_last_error());
    pg_work *w = NULL;
    PG_TEST_STATUS(pg_iallreduce(s, data, data, 1, PG_INT32, PG_SUM, &w), PG_ERR_STATE);
    PG_TEST_TRUE(w == NULL, "no work from a poisoned strategy");
    pg_strategy *sub = NULL;
    PG_TEST_STATUS(pg_strategy_split(s, 0, 0, &sub), PG_ERR_STATE);
    char text[512];
    PG_TEST_STATUS(pg_strategy_describe(s, text, sizeof text), PG_OK);
    PG_TEST_TRUE(strstr(text, "unusable") != NULL, "describe: %s", text);
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_poison");
}
