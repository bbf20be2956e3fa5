// fairring's algorithms: what each is called, when it is chosen and what it
// does (pg_strategy_describe prints this table with the plan). Each lives in
// its own file; docs/algorithms.md has their steps and bytes moved.
#pragma once

#include <cstddef>

#include "core/backend.h"

namespace pg::fairring {

enum class Algorithm { flat, hierarchical, leaders };

struct AlgorithmInfo {
  Algorithm algorithm;
  const char *name;
  const char *when;
  const char *what;
};

constexpr AlgorithmInfo kAlgorithms[] = {
    {Algorithm::flat, "flat",
     "below PGS_FAIRRING_MIN_BYTES, one rank per node, or reduce_scatter/allgather on irregular layouts; "
     "on CUDA also one node, irregular layouts, reduce_scatter, allgather and bitwise operators",
     "the device default's algorithm on every rank at once (MPI; NCCL on CUDA)"},
    {Algorithm::hierarchical, "hierarchical",
     "regular layouts with several ranks per node, from PGS_FAIRRING_MIN_BYTES; on CUDA allreduce "
     "across several nodes",
     "reduce-scatter in the node (shared memory; NCCL on CUDA), the shard over its rail (MPI), "
     "all-gather in the node; sliced and pipelined (allreduce_hierarchical.cpp, "
     "reduce_scatter_hierarchical.cpp, allgather_hierarchical.cpp; cuda_transport.cpp)"},
    {Algorithm::leaders, "leaders",
     "allreduce on irregular layouts (nodes with different numbers of ranks), from PGS_FAIRRING_MIN_BYTES",
     "reduce to each node's first rank, allreduce among those, broadcast in the node "
     "(allreduce_leaders.cpp)"},
};

const AlgorithmInfo &info(Algorithm algorithm);

// The bytes a collective's size is measured in (as nccl-tests does): the
// buffer of allreduce, the whole (all ranks') buffer of reduce_scatter and allgather.
std::size_t message_bytes(const CollArgs &a, int ranks);

}  // namespace pg::fairring
