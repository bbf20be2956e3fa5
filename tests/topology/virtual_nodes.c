/* Virtual nodes (PGS_RANKS_PER_NODE=k): consecutive ranks form nodes of k
 * ranks, the last may be smaller. Checks the strategy's local rank, local
 * size, node rank and node count against that rule, for the world and for a
 * reversed communicator (nodes follow the strategy's own rank order). */
#include <stdio.h>
#include <stdlib.h>

#include "pg_test.h"

static void check_layout(pg_strategy *s, int rank, int size, int k, const char *what) {
  int node = rank / k, nodes = (size + k - 1) / k;
  int local_size = size - node * k < k ? size - node * k : k;
  PG_TEST_TRUE(pg_strategy_rank(s) == rank, "%s: rank %d, expected %d", what,
               pg_strategy_rank(s), rank);
  PG_TEST_TRUE(pg_strategy_size(s) == size, "%s: size %d, expected %d", what,
               pg_strategy_size(s), size);
  PG_TEST_TRUE(pg_strategy_local_rank(s) == rank % k, "%s: local rank %d, expected %d", what,
               pg_strategy_local_rank(s), rank % k);
  PG_TEST_TRUE(pg_strategy_local_size(s) == local_size, "%s: local size %d, expected %d", what,
               pg_strategy_local_size(s), local_size);
  PG_TEST_TRUE(pg_strategy_node_rank(s) == node, "%s: node rank %d, expected %d", what,
               pg_strategy_node_rank(s), node);
  PG_TEST_TRUE(pg_strategy_node_count(s) == nodes, "%s: node count %d, expected %d", what,
               pg_strategy_node_count(s), nodes);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  pg_test_watchdog("topology_virtual_nodes");
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *env = getenv("PGS_RANKS_PER_NODE");
  int k = env ? atoi(env) : 0;
  if (!PG_TEST_TRUE(k > 0, "PGS_RANKS_PER_NODE must be set by the test, got '%s'",
                    env ? env : "(unset)")) {
    int failed = pg_test_verdict(MPI_COMM_WORLD, "topology_virtual_nodes");
    MPI_Finalize();
    return failed;
  }

  pg_test_step("create on MPI_COMM_WORLD");
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (s) check_layout(s, rank, size, k, "world");

  pg_test_step("create on a reversed communicator");
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - rank, &reversed);
  pg_strategy *r = NULL;
  PG_TEST_STATUS(pg_strategy_create_comm("cpu", NULL, reversed, &r), PG_OK);
  if (r) check_layout(r, size - 1 - rank, size, k, "reversed");

  pg_test_step("destroy");
  PG_TEST_STATUS(pg_strategy_destroy(r), PG_OK);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  MPI_Comm_free(&reversed);
  int failed = pg_test_verdict(MPI_COMM_WORLD, "topology_virtual_nodes");
  MPI_Finalize();
  return failed;
}
