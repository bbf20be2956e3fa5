// The CUDA node transport of fairring's hierarchical allreduce: NCCL inside
// the node, the rail's MPI on pinned host memory (or on device memory when MPI
// is CUDA-aware), pipelined over slices on separate streams
// (cuda_transport.cpp; docs/algorithms.md has the steps and the bytes each
// moves). Compiled with CUDA; without it, cuda_transport_absent.cpp says why
// it cannot be made. Allreduce plans only: one piece per shard, reduced and
// gathered.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/fairring/node_transport.h"
#include "core/instance.h"

namespace pg::fairring {

// Collective over ctx.node_comm, with the same status on every rank of the
// node. Its two NCCL communicators are `nccl` instances made with `env` on
// the node. `slice_bytes`: the largest slice; `slots`: slices in flight
// (PGS_FAIRRING_INFLIGHT).
pg_status make_cuda_transport(const pg_backend_context &ctx, const InstanceEnv &env, std::size_t slice_bytes,
                              int slots, std::unique_ptr<NodeTransport> *out);

}  // namespace pg::fairring
