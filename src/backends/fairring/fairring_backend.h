// The fairring backend: hierarchical collectives for clusters of multi-core
// (or multi-GPU) nodes. Allreduce of N elements over G ranks per node and M
// nodes: (1) reduce-scatter inside the node, so each local rank owns 1/G of the
// node's sum; (2) allreduce of that shard over its rail (the M ranks with the
// same local rank), all rails at once; (3) all-gather inside the node. Sliced
// and pipelined; on CPU reduce_scatter and allgather are hierarchical too;
// every other operation runs on the device default. Inside the node: shared
// memory on CPU, NCCL on CUDA. docs/algorithms.md has the steps and the bytes
// each moves.
#pragma once

#include "core/registry.h"

namespace pg::fairring {

// The registry entry of "fairring" (devices: PG_DEVICE_CPU | PG_DEVICE_CUDA).
BackendEntry entry();

}  // namespace pg::fairring
