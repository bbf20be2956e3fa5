// Nodes and rails of a communicator, built once per strategy and cached on it
// (docs/topology.md, "Nodes and rails").
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pg::topology {

struct Layout {
  MPI_Comm node_comm = MPI_COMM_NULL;  // ranks on this (virtual) node, by rank
  MPI_Comm rail_comm = MPI_COMM_NULL;  // same local rank across nodes, by node
  int local_rank = 0, local_size = 1;
  int node_rank = 0, node_count = 1;
  bool irregular = false;              // nodes hold different numbers of ranks
  // Regular layouts: [m * local_size + l] is the rank (in the communicator the
  // layout describes) of local rank l on node m, so the node's ranks are known
  // without asking. Empty for irregular layouts.
  std::vector<int> rank_of;
};

// Collective over comm (one allgather tells every rank every rank's place).
// node_sizes empty: nodes are MPI_COMM_TYPE_SHARED domains; else virtual
// nodes of consecutive ranks, of these sizes in turn, the last size repeating
// ({2}: pairs, the last node perhaps smaller; {1, 2}: one rank, then pairs).
pg_status build_layout(MPI_Comm comm, const std::vector<int> &node_sizes, Layout *out);
// node_sizes as PGS_RANKS_PER_NODE writes them: "1,2".
std::string node_sizes_text(const std::vector<int> &node_sizes);
// Duplicates node and rail communicators (a backend instance gets its own).
pg_status dup_layout(const Layout &in, Layout *out);
void free_layout(Layout *layout);
// The layouts of a sub-communicator that is one node (a node communicator) or
// one rank per node (a rail). Local: the other communicator is MPI_COMM_SELF,
// and nothing is duplicated (dup_layout does that for an instance).
Layout single_node_layout(MPI_Comm node);
Layout one_rank_per_node_layout(MPI_Comm rail);

}  // namespace pg::topology
