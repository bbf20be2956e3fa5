// The nccl backend's operations made of ncclSend and ncclRecv: send, recv and
// sendrecv; alltoall, gather and scatter; and the uneven allgatherv, alltoallv,
// gatherv and scatterv, which NCCL does not have (nor an all-to-all with
// counts per peer). Each collective plans what this rank sends to and receives
// from each peer (PeerPlan), and one function runs every plan: the block the
// rank keeps is a device-to-device copy, the messages go in one group.
// NCCL matches point-to-point messages in order per pair of ranks and ignores
// tags; the two sides of a message must name the same count.
#include "backends/nccl/nccl_ops.h"

#include <vector>

#include "backends/nccl/nccl_types.h"
#include "util/dtype.h"

namespace pg::nccl {
namespace {

// A message of zero elements is not sent: both sides name the same count.
pg_status send_to(const Queue &q, const void *buf, std::size_t count, ncclDataType_t type, int peer) {
  if (count > 0) PG_NCCL_CHECK(q.comm, ncclSend(buf, count, type, peer, q.comm, q.stream));
  return PG_OK;
}
pg_status recv_from(const Queue &q, void *buf, std::size_t count, ncclDataType_t type, int peer) {
  if (count > 0) PG_NCCL_CHECK(q.comm, ncclRecv(buf, count, type, peer, q.comm, q.stream));
  return PG_OK;
}

pg_status copy_async(void *dst, const void *src, std::size_t bytes, cudaStream_t stream) {
  if (bytes > 0 && dst != src)
    PG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  return PG_OK;
}

// This rank's part of an operation made of messages: the block it keeps
// (copied unless empty or already where it belongs), and what it sends to and
// receives from each peer, in order. Counts are elements of `type`.
struct PeerPlan {
  struct Peer {
    int rank;
    const void *send;
    std::size_t send_count;
    void *recv;
    std::size_t recv_count;
  };
  explicit PeerPlan(ncclDataType_t t) : type(t) {}

  ncclDataType_t type;
  void *keep_to = nullptr;
  const void *keep_from = nullptr;
  std::size_t keep_bytes = 0;
  std::vector<Peer> peers;

  void keep(void *to, const void *from, std::size_t bytes) {
    keep_to = to, keep_from = from, keep_bytes = bytes;
  }
};

// Runs `plan` on q.stream: the kept block's copy, then in one group each
// peer's ncclSend before its ncclRecv.
pg_status exchange(const Queue &q, const PeerPlan &plan) {
  PG_CHECK(copy_async(plan.keep_to, plan.keep_from, plan.keep_bytes, q.stream));
  return group(q.comm, [&] {
    for (const PeerPlan::Peer &p : plan.peers) {
      PG_CHECK(send_to(q, p.send, p.send_count, plan.type, p.rank));
      PG_CHECK(recv_from(q, p.recv, p.recv_count, plan.type, p.rank));
    }
    return PG_OK;
  });
}

// What a rank sends to, or receives from, each peer: nothing ({}), the whole
// buffer, or the peer's block of it: blocks of `count` elements one after the
// other, or those of a v-form's counts and displacements (elements).
template <typename Byte>  // const char: a send buffer; char: a receive buffer
struct Side {
  Byte *base = nullptr;
  std::size_t count = 0;
  bool blocks = false;
  const std::vector<std::size_t> *counts = nullptr, *displs = nullptr;

  Byte *at(std::size_t r, std::size_t es) const {
    if (!blocks) return base;
    return displs ? base + (*displs)[r] * es : base + r * (count * es);
  }
  std::size_t count_at(std::size_t r) const { return counts ? (*counts)[r] : count; }
};

template <typename Byte>
Side<Byte> whole(Byte *base, std::size_t count) {
  return {base, count, false, nullptr, nullptr};
}
template <typename Byte>
Side<Byte> uniform(Byte *base, std::size_t count) {
  return {base, count, true, nullptr, nullptr};
}
template <typename Byte>
Side<Byte> uneven(Byte *base, const std::vector<std::size_t> &counts, const std::vector<std::size_t> &displs) {
  return {base, 0, true, &counts, &displs};
}

// `send` to and `recv` from each rank but this one, in rank order, or with
// rank `only` alone when it is given (>= 0). Nothing is kept yet.
PeerPlan plan(const Queue &q, ncclDataType_t type, std::size_t es, const Side<const char> &send,
              const Side<char> &recv, int only = -1) {
  PeerPlan p(type);
  p.peers.reserve(only >= 0 ? 1 : static_cast<std::size_t>(q.size));
  for (int r = 0; r < q.size; ++r) {
    if (r == q.rank || (only >= 0 && r != only)) continue;
    const std::size_t i = static_cast<std::size_t>(r);
    p.peers.push_back({r, send.at(i, es), send.count_at(i), recv.at(i, es), recv.count_at(i)});
  }
  return p;
}

// Runs `body` on the input `send` holds; when `stage` (in place: send ==
// recv), on a copy of its first `bytes` bytes in a stream-ordered staging
// buffer (cudaMallocAsync), freed on the stream after (cudaFreeAsync), so that
// no message received overwrites a block still to be sent.
template <typename Body>
pg_status staged(cudaStream_t stream, bool stage, const void *send, std::size_t bytes, Body body) {
  if (!stage) return body(static_cast<const char *>(send));
  void *staging = nullptr;
  PG_CUDA_CHECK(cudaMallocAsync(&staging, bytes, stream));
  pg_status st = copy_async(staging, send, bytes, stream);
  if (st != PG_OK) {
    cudaFreeAsync(staging, stream);
    return st;
  }
  st = body(static_cast<const char *>(staging));
  if (staging) {
    std::string message = st == PG_OK ? std::string() : last_error();
    cudaError_t freed = cudaFreeAsync(staging, stream);
    if (st != PG_OK) return fail_message(st, message);
    PG_CUDA_CHECK(freed);
  }
  return st;
}

}  // namespace

pg_status enqueue_peers(const Queue &q, const CollArgs &a) {
  const ncclDataType_t type = datatype(a.dtype);
  const std::size_t es = dtype_size(a.dtype), me = static_cast<std::size_t>(q.rank);
  const bool v = is_uneven(a.coll);
  const char *send = static_cast<const char *>(a.send);
  char *recv = static_cast<char *>(a.recv);

  switch (a.coll) {
    case Coll::send:
      return send_to(q, a.send, a.count, type, a.peer);
    case Coll::recv:
      return recv_from(q, a.recv, a.count, type, a.peer);
    case Coll::sendrecv:
      return group(q.comm, [&] {
        PG_CHECK(send_to(q, a.send, a.count, type, a.peer));
        return recv_from(q, a.recv, a.recv_count, type, a.source);
      });

    // Block r of send goes to rank r, block r of recv comes from it; the
    // rank's own block is copied (from the staged input, in place).
    case Coll::alltoall:
    case Coll::alltoallv: {
      const std::size_t input = v ? VCounts::extent(a.v->send_counts, a.v->send_displs) * es : a.count * es * q.size;
      return staged(q.stream, a.in_place && (!v || input > 0), a.send, input, [&](const char *in) {
        const Side<const char> from = v ? uneven(in, a.v->send_counts, a.v->send_displs) : uniform(in, a.count);
        const Side<char> to = v ? uneven(recv, a.v->recv_counts, a.v->recv_displs) : uniform(recv, a.count);
        PeerPlan p = plan(q, type, es, from, to);
        p.keep(to.at(me, es), from.at(me, es), from.count_at(me) * es);
        return exchange(q, p);
      });
    }

    // This rank's share to every other rank, block r of recv from rank r.
    case Coll::allgatherv: {
      const Side<char> blocks = uneven(recv, a.v->recv_counts, a.v->recv_displs);
      PeerPlan p = plan(q, type, es, whole(send, a.count), blocks);
      if (!a.in_place) p.keep(blocks.at(me, es), send, a.count * es);
      return exchange(q, p);
    }

    // The root receives block r from rank r; every other rank sends its share
    // to the root. In place, the root's own share is already in its block.
    case Coll::gather:
    case Coll::gatherv: {
      if (q.rank != a.root) return exchange(q, plan(q, type, es, whole(send, a.count), {}, a.root));
      const Side<char> blocks = v ? uneven(recv, a.v->recv_counts, a.v->recv_displs) : uniform(recv, a.count);
      PeerPlan p = plan(q, type, es, {}, blocks);
      if (!a.in_place) p.keep(blocks.at(me, es), send, a.count * es);
      return exchange(q, p);
    }

    // The root sends block r to rank r; every other rank receives its share
    // from the root. In place, the root's own share is already in its block.
    case Coll::scatter:
    case Coll::scatterv: {
      if (q.rank != a.root) return exchange(q, plan(q, type, es, {}, whole(recv, a.count), a.root));
      const Side<const char> blocks = v ? uneven(send, a.v->send_counts, a.v->send_displs) : uniform(send, a.count);
      PeerPlan p = plan(q, type, es, blocks, {});
      if (!a.in_place) p.keep(recv, blocks.at(me, es), a.count * es);
      return exchange(q, p);
    }

    default:
      return fail(PG_ERR_INTERNAL, "nccl backend: %s is not made of sends and receives", coll_name(a.coll));
  }
}

}  // namespace pg::nccl
