// The nccl backend's collectives that NCCL has: allreduce, broadcast, reduce,
// allgather and reduce_scatter, whose in-place layouts are the library's;
// barrier as a one-element allreduce on the scratch buffer; reduce_scatterv as
// one grouped reduce per block. The rest are ncclSend/ncclRecv (nccl_peers.cpp).
#include "backends/nccl/nccl_ops.h"
#include "backends/nccl/nccl_types.h"
#include "util/dtype.h"

namespace pg::nccl {
namespace {

// NCCL has no reduce-scatter with counts per rank: one ncclReduce per block,
// rooted at the rank the block is for, all in one group.
pg_status reduce_scatterv(const Queue &q, const CollArgs &a, ncclDataType_t type, ncclRedOp_t op) {
  ncclComm_t comm = q.comm;
  cudaStream_t stream = q.stream;
  const std::size_t es = dtype_size(a.dtype), me = static_cast<std::size_t>(q.rank);
  const std::size_t p = static_cast<std::size_t>(q.size);
  const VCounts &v = *a.v;
  const char *send = static_cast<const char *>(a.send);
  // In place, this rank's own reduce has sendbuff == recvbuff: NCCL's
  // in-place form. Ranks other than a block's root never write its
  // recvbuff: they name their own block of input there.
  return group(comm, [&] {
    for (std::size_t r = 0; r < p; ++r) {
      if (v.recv_counts[r] == 0) continue;
      const char *block = send + v.send_displs[r] * es;
      void *out = r == me ? a.recv : const_cast<char *>(block);
      PG_NCCL_CHECK(comm, ncclReduce(block, out, v.recv_counts[r], type, op, static_cast<int>(r), comm, stream));
    }
    return PG_OK;
  });
}

}  // namespace

pg_status enqueue(const Queue &q, const CollArgs &a, ncclRedOp_t op) {
  ncclComm_t comm = q.comm;
  cudaStream_t stream = q.stream;
  const ncclDataType_t type = datatype(a.dtype);

  switch (a.coll) {
    case Coll::allreduce:
      PG_NCCL_CHECK(comm, ncclAllReduce(a.send, a.recv, a.count, type, op, comm, stream));
      return PG_OK;
    case Coll::broadcast:
      PG_NCCL_CHECK(comm, ncclBroadcast(a.recv, a.recv, a.count, type, a.root, comm, stream));
      return PG_OK;
    case Coll::reduce:
      PG_NCCL_CHECK(comm, ncclReduce(a.send, a.recv, a.count, type, op, a.root, comm, stream));
      return PG_OK;
    case Coll::allgather:
      PG_NCCL_CHECK(comm, ncclAllGather(a.send, a.recv, a.count, type, comm, stream));
      return PG_OK;
    case Coll::reduce_scatter:
      PG_NCCL_CHECK(comm, ncclReduceScatter(a.send, a.recv, a.count, type, op, comm, stream));
      return PG_OK;
    case Coll::barrier:
      PG_NCCL_CHECK(comm, ncclAllReduce(q.scratch, q.scratch, 1, ncclFloat32, ncclSum, comm, stream));
      return PG_OK;
    case Coll::reduce_scatterv:
      return reduce_scatterv(q, a, type, op);
    case Coll::alltoall:
    case Coll::gather:
    case Coll::scatter:
    case Coll::send:
    case Coll::recv:
    case Coll::sendrecv:
    case Coll::allgatherv:
    case Coll::alltoallv:
    case Coll::gatherv:
    case Coll::scatterv:
      return enqueue_peers(q, a);
  }
  return fail(PG_ERR_INTERNAL, "nccl backend: unknown operation %d", static_cast<int>(a.coll));
}

}  // namespace pg::nccl
