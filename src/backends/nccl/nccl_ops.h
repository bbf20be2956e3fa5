// The nccl backend's operations, enqueued on a stream: the backend
// (nccl_backend.cpp) picks the stream and waits; nccl_collectives.cpp enqueues
// NCCL's collectives and sends the rest to nccl_peers.cpp, which makes them of
// ncclSend/ncclRecv. Internal to backends/nccl.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "core/backend.h"
#include "cuda/check.h"
#include "util/status.h"

namespace pg::nccl {

// Where one operation is enqueued: the backend's communicator, this rank's
// place in it, the stream in use, and barrier's one-element scratch buffer.
struct Queue {
  ncclComm_t comm = nullptr;
  int rank = 0, size = 0;
  cudaStream_t stream = nullptr;
  void *scratch = nullptr;
};

// Runs `body` (which issues NCCL calls) between ncclGroupStart and
// ncclGroupEnd; the group is closed even when the body fails.
template <typename Body>
pg_status group(ncclComm_t comm, Body body) {
  PG_NCCL_CHECK(comm, ncclGroupStart());
  pg_status st = body();
  std::string message = st == PG_OK ? std::string() : last_error();
  ncclResult_t end = ncclGroupEnd();
  if (st != PG_OK) return fail_message(st, message);
  PG_NCCL_CHECK(comm, end);
  return PG_OK;
}

// Enqueues `a` on q.stream (`op`: its reduction, for those that have one).
pg_status enqueue(const Queue &q, const CollArgs &a, ncclRedOp_t op);

// The operations made of ncclSend/ncclRecv: send, recv, sendrecv, alltoall,
// gather, scatter, allgatherv, alltoallv, gatherv and scatterv.
pg_status enqueue_peers(const Queue &q, const CollArgs &a);

}  // namespace pg::nccl
