// The mpi backend's uneven collectives.
// Whatever the sizes, every rank takes the same path: which path is decided
// by what every rank knows alike (the MPI, PGS_MPI_CHUNK_COUNT, and the
// counts of allgatherv and reduce_scatterv, which are the same on every
// rank). allgatherv and reduce_scatterv: MPI's int forms while the whole
// buffer is within the chunk limit; beyond it allgatherv goes as one
// MPI_Alltoallw, and reduce_scatterv as MPI_Reduce_scatter in rounds.
// alltoallv, gatherv and scatterv: MPI-4's large-count forms where the MPI
// has them, else MPI_Alltoallw, whose per-peer datatypes carry counts and
// displacements of any size. (MPICH 4.0.2's MPI_Allgatherv_c and
// MPI_Reduce_scatter_c crash above INT_MAX elements: docs/known-issues.md.)
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/mpi/issue.h"
#include "mpi/types.h"
#include "util/dtype.h"

namespace pg::mpi {
namespace {

pg_status uneven_alltoallw(const Group &g, const CollArgs &a, Issue io);

// allgatherv: MPI_Allgatherv while the receive blocks total at most the
// chunk limit. This rank's displacements are its own business: when one is
// beyond an int, the blocks arrive packed in a staging buffer and are
// copied to their places.
pg_status allgatherv(const Group &g, const CollArgs &a, Issue io) {
  const VCounts &v = *a.v;
  if (v.recv_total > g.chunk) return uneven_alltoallw(g, a, io);
  const MPI_Datatype type = datatype(a.dtype);
  const std::size_t es = dtype_size(a.dtype), p = static_cast<std::size_t>(g.size);
  const int *counts = io.pending.keep(std::vector<int>(v.recv_counts.begin(), v.recv_counts.end()));
  bool fits = true;
  for (std::size_t r = 0; r < p; ++r) fits = fits && v.recv_displs[r] <= static_cast<std::size_t>(INT_MAX);
  if (fits) {
    const int *displs = io.pending.keep(std::vector<int>(v.recv_displs.begin(), v.recv_displs.end()));
    PG_MPI_CALL(io, MPI_Allgatherv, MPI_Iallgatherv, a.in_place ? MPI_IN_PLACE : a.send, static_cast<int>(a.count),
                type, a.recv, counts, displs, type, g.comm);
    return PG_OK;
  }
  std::vector<int> packed(p);
  std::size_t at = 0;
  for (std::size_t r = 0; r < p; ++r) {
    packed[r] = static_cast<int>(at);
    at += v.recv_counts[r];
  }
  char *stage = io.pending.stage(at * es + 1).data();
  char *recv = static_cast<char *>(a.recv);
  const void *send = a.in_place ? recv + v.recv_displs[static_cast<std::size_t>(g.rank)] * es : a.send;
  const int *displs = io.pending.keep(packed);
  PG_MPI_CALL(io, MPI_Allgatherv, MPI_Iallgatherv, send, static_cast<int>(a.count), type, stage, counts, displs,
              type, g.comm);
  std::shared_ptr<const VCounts> layout = a.v;
  io.pending.then([layout, stage, recv, es] {
    std::size_t from = 0;
    for (std::size_t r = 0; r < layout->recv_counts.size(); ++r) {
      const std::size_t bytes = layout->recv_counts[r] * es;
      if (bytes > 0) std::memmove(recv + layout->recv_displs[r] * es, stage + from, bytes);
      from += bytes;
    }
  });
  return PG_OK;
}

// One rank: its own blocks, copied here (MPICH 4.0.2's MPI_Allgatherv on
// one rank ignores the displacement, docs/known-issues.md).
pg_status uneven_alone(const CollArgs &a) {
  const std::size_t es = dtype_size(a.dtype);
  const VCounts &v = *a.v;
  const char *send = static_cast<const char *>(a.send);
  char *recv = static_cast<char *>(a.recv);
  auto copy = [](char *to, const char *from, std::size_t bytes) {
    if (bytes > 0 && to != from) std::memmove(to, from, bytes);
  };
  switch (a.coll) {
    case Coll::allgatherv:
    case Coll::gatherv: copy(recv + v.recv_displs[0] * es, send, a.count * es); break;
    case Coll::reduce_scatterv: copy(recv, send, a.count * es); break;  // PG_AVG over one rank: the value
    case Coll::alltoallv: copy(recv + v.recv_displs[0] * es, send + v.send_displs[0] * es, v.send_counts[0] * es); break;
    case Coll::scatterv: copy(recv, send + v.send_displs[0] * es, a.count * es); break;
    default: return fail(PG_ERR_INTERNAL, "mpi backend: not an uneven collective");
  }
  return PG_OK;
}

#if MPI_VERSION >= 4
// alltoallv, gatherv and scatterv with MPI-4's large-count forms: counts as
// MPI_Count, displacements as MPI_Aint.
pg_status uneven_large_count(const Group &g, const CollArgs &a, Issue io) {
  const MPI_Datatype type = datatype(a.dtype);
  const VCounts &v = *a.v;
  const bool root = g.rank == a.root;
  auto counts = [&](const std::vector<std::size_t> &c) -> const MPI_Count * {
    return c.empty() ? nullptr : io.pending.keep(std::vector<MPI_Count>(c.begin(), c.end()));
  };
  auto displs = [&](const std::vector<std::size_t> &d) -> const MPI_Aint * {
    return d.empty() ? nullptr : io.pending.keep(std::vector<MPI_Aint>(d.begin(), d.end()));
  };
  const MPI_Count n = static_cast<MPI_Count>(a.count);
  switch (a.coll) {
    case Coll::alltoallv:
      PG_MPI_CALL(io, MPI_Alltoallv_c, MPI_Ialltoallv_c, a.send, counts(v.send_counts), displs(v.send_displs), type,
                  a.recv, counts(v.recv_counts), displs(v.recv_displs), type, g.comm);
      return PG_OK;
    case Coll::gatherv:
      PG_MPI_CALL(io, MPI_Gatherv_c, MPI_Igatherv_c, a.in_place ? MPI_IN_PLACE : a.send, n, type,
                  root ? a.recv : nullptr, counts(v.recv_counts), displs(v.recv_displs), type, a.root, g.comm);
      return PG_OK;
    case Coll::scatterv:
      PG_MPI_CALL(io, MPI_Scatterv_c, MPI_Iscatterv_c, root ? a.send : nullptr, counts(v.send_counts),
                  displs(v.send_displs), type, a.in_place ? MPI_IN_PLACE : a.recv, n, type, a.root, g.comm);
      return PG_OK;
    default:
      return fail(PG_ERR_INTERNAL, "mpi backend: not an uneven collective");
  }
}
#endif

// One peer's block on one side of an MPI_Alltoallw: `count` elements at
// element `displ` of the buffer. Within the chunk limit and with a byte
// displacement that fits an int, the plain type; otherwise one datatype of
// chunks placed at byte displacements (MPI_Aint), sent as one item.
pg_status w_block(const Group &g, std::size_t count, std::size_t displ, std::size_t esize, MPI_Datatype base,
                  int *c, int *d, MPI_Datatype *t, MadeTypes *made) {
  *c = 0, *d = 0, *t = base;
  if (count == 0) return PG_OK;
  if (count <= g.chunk && displ * esize <= static_cast<std::size_t>(INT_MAX)) {
    *c = static_cast<int>(count);
    *d = static_cast<int>(displ * esize);
    return PG_OK;
  }
  const std::size_t pieces = (count + g.chunk - 1) / g.chunk;
  if (pieces > static_cast<std::size_t>(INT_MAX))
    return fail(PG_ERR_INVALID_ARGUMENT, "mpi backend: %zu elements make more than INT_MAX chunks of %zu", count,
                g.chunk);
  std::vector<int> lens(pieces);
  std::vector<MPI_Aint> at(pieces);
  for (std::size_t k = 0; k < pieces; ++k) {
    lens[k] = static_cast<int>(std::min(g.chunk, count - k * g.chunk));
    at[k] = static_cast<MPI_Aint>((displ + k * g.chunk) * esize);
  }
  int err = MPI_Type_create_hindexed(static_cast<int>(pieces), lens.data(), at.data(), base, t);
  if (err != MPI_SUCCESS) return mpi_failure(err, "MPI_Type_create_hindexed", __FILE__, __LINE__);
  made->add(*t);
  err = MPI_Type_commit(t);
  if (err != MPI_SUCCESS) return mpi_failure(err, "MPI_Type_commit", __FILE__, __LINE__);
  *c = 1;
  return PG_OK;
}

// One side of an MPI_Alltoallw, in elements: the block to (or from) each peer.
struct Side {
  std::vector<std::size_t> count, displ;
  explicit Side(std::size_t p) : count(p, 0), displ(p, 0) {}
  void set(std::size_t q, std::size_t c, std::size_t d) { count[q] = c, displ[q] = d; }
  // The lowest displacement of a block with elements (SIZE_MAX: none).
  std::size_t lowest() const {
    std::size_t low = SIZE_MAX;
    for (std::size_t q = 0; q < count.size(); ++q)
      if (count[q] > 0) low = std::min(low, displ[q]);
    return low;
  }
};

// allgatherv, alltoallv, gatherv and scatterv as one MPI_Alltoallw, each
// rank's blocks to and from each peer described on its own. In place, the
// block already in place is neither sent nor received.
pg_status uneven_alltoallw(const Group &g, const CollArgs &a, Issue io) {
  const MPI_Datatype type = datatype(a.dtype);
  const std::size_t esize = dtype_size(a.dtype), p = static_cast<std::size_t>(g.size);
  const std::size_t me = static_cast<std::size_t>(g.rank), root = static_cast<std::size_t>(a.root);
  const VCounts &v = *a.v;
  Side to(p), from(p);
  const char *send = static_cast<const char *>(a.send);
  char *recv = static_cast<char *>(a.recv);
  switch (a.coll) {
    case Coll::allgatherv:
      for (std::size_t q = 0; q < p; ++q) {
        if (a.in_place && q == me) continue;
        to.set(q, a.count, 0);
        from.set(q, v.recv_counts[q], v.recv_displs[q]);
      }
      break;
    case Coll::alltoallv:
      for (std::size_t q = 0; q < p; ++q) {
        to.set(q, v.send_counts[q], v.send_displs[q]);
        from.set(q, v.recv_counts[q], v.recv_displs[q]);
      }
      break;
    case Coll::gatherv:
    case Coll::scatterv: {
      // Every rank's one block with the root, which receives them all
      // (gatherv) or sends them all (scatterv).
      const bool gather = a.coll == Coll::gatherv;
      Side &mine = gather ? to : from, &roots = gather ? from : to;
      if (!(a.in_place && me == root)) mine.set(root, a.count, 0);
      if (me != root) break;
      const std::vector<std::size_t> &counts = gather ? v.recv_counts : v.send_counts;
      const std::vector<std::size_t> &displs = gather ? v.recv_displs : v.send_displs;
      for (std::size_t q = 0; q < p; ++q)
        if (!(a.in_place && q == me)) roots.set(q, counts[q], displs[q]);
      break;
    }
    default:
      return fail(PG_ERR_INTERNAL, "mpi backend: not an MPI_Alltoallw collective");
  }
  // A side without blocks passes no buffer. MPI forbids aliased buffer
  // arguments, and Open MPI's nonblocking collectives take a send buffer
  // equal to the receive buffer for MPI_IN_PLACE (then sending by the
  // receive counts): when both sides start at one address (in place, this
  // rank's block first), one side's base moves to its lowest block, which
  // is above the other side's (their blocks do not overlap).
  const std::size_t send_low = to.lowest(), recv_low = from.lowest();
  if (send_low == SIZE_MAX) send = nullptr;
  if (recv_low == SIZE_MAX) recv = nullptr;
  std::size_t send_base = 0, recv_base = 0;
  if (send && send == recv) {
    if (recv_low > 0) recv_base = recv_low;
    else send_base = send_low;
  }
  if (send) send += send_base * esize;
  if (recv) recv += recv_base * esize;
  std::vector<int> sc(p, 0), sd(p, 0), rc(p, 0), rd(p, 0);
  std::vector<MPI_Datatype> st(p, type), rt(p, type);
  MadeTypes made;
  for (std::size_t q = 0; q < p; ++q) {
    if (to.count[q] > 0)
      PG_CHECK(w_block(g, to.count[q], to.displ[q] - send_base, esize, type, &sc[q], &sd[q], &st[q], &made));
    if (from.count[q] > 0)
      PG_CHECK(w_block(g, from.count[q], from.displ[q] - recv_base, esize, type, &rc[q], &rd[q], &rt[q], &made));
  }
  Pending &kept = io.pending;
  PG_MPI_CALL(io, MPI_Alltoallw, MPI_Ialltoallw, send, kept.keep(std::move(sc)), kept.keep(std::move(sd)),
              kept.keep(std::move(st)), recv, kept.keep(std::move(rc)), kept.keep(std::move(rd)),
              kept.keep(std::move(rt)), g.comm);
  return PG_OK;
}

// reduce_scatterv with int counts: one MPI_Reduce_scatter when the whole
// send buffer is within the chunk limit (its counts are the same on every
// rank, so every rank decides alike); otherwise rounds, each moving at most
// chunk/P elements of every block, packed into a staging buffer.
pg_status reduce_scatterv_rounds(const Group &g, const CollArgs &a, Issue io) {
  const MPI_Datatype type = datatype(a.dtype);
  const std::size_t esize = dtype_size(a.dtype), p = static_cast<std::size_t>(g.size);
  const VCounts &v = *a.v;
  MPI_Op op = MPI_OP_NULL;
  PG_CHECK(operation(a.dtype, a.op, &op));
  const std::size_t bytes = a.count * esize;
  const char *send = static_cast<const char *>(a.send);
  char *recv = static_cast<char *>(a.recv);
  if (v.recv_total <= g.chunk) {
    const int *counts = io.pending.keep(std::vector<int>(v.recv_counts.begin(), v.recv_counts.end()));
    if (a.in_place) {
      // Out of place into a staging block, not MPI_IN_PLACE: MPI then moves
      // this rank's block to the start of the buffer, and MPICH 4.0.2 does it
      // with memcpy, which aborts (or corrupts) when the block is longer than
      // its displacement (docs/known-issues.md).
      char *out = io.pending.stage(bytes + 1).data();
      PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, a.send, out, counts, type, op, g.comm);
      io.pending.then([recv, out, bytes] { std::memcpy(recv, out, bytes); });
    } else {
      PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, a.send, recv, counts, type, op, g.comm);
    }
  } else {
    // In place too, a round writes only elements of this rank's block that
    // it alone reads (packed before its call): no staging of the result.
    char *out = recv;
    std::vector<char> *reused = nullptr;  // blocking: one packing buffer for every round
    const std::size_t piece = std::max<std::size_t>(1, g.chunk / p);
    const std::size_t most = *std::max_element(v.recv_counts.begin(), v.recv_counts.end());
    for (std::size_t off = 0; off < most; off += piece) {
      std::vector<int> counts(p);
      std::size_t total = 0;
      for (std::size_t r = 0; r < p; ++r) {
        const std::size_t c = v.recv_counts[r] > off ? std::min(piece, v.recv_counts[r] - off) : 0;
        counts[r] = static_cast<int>(c);
        total += c;
      }
      if (!reused || io.nonblocking) reused = &io.pending.stage(total * esize + 1);
      std::vector<char> &packed = *reused;
      if (packed.size() < total * esize + 1) packed.resize(total * esize + 1);
      std::size_t at = 0;
      for (std::size_t r = 0; r < p; ++r) {
        const std::size_t c = static_cast<std::size_t>(counts[r]);
        std::memcpy(packed.data() + at * esize, send + (v.send_displs[r] + off) * esize, c * esize);
        at += c;
      }
      const bool mine = v.recv_counts[static_cast<std::size_t>(g.rank)] > off;
      PG_MPI_CALL(io, MPI_Reduce_scatter, MPI_Ireduce_scatter, packed.data(), mine ? out + off * esize : out,
                  io.pending.keep(std::move(counts)), type, op, g.comm);
    }
  }
  average(g, a, recv, a.count, io);
  return PG_OK;
}

}  // namespace

pg_status issue_uneven(const Group &g, const CollArgs &a, Issue io) {
  if (g.size == 1) return uneven_alone(a);
  if (a.coll == Coll::allgatherv) return allgatherv(g, a, io);
  if (a.coll == Coll::reduce_scatterv) return reduce_scatterv_rounds(g, a, io);
#if MPI_VERSION >= 4
  if (g.chunk >= static_cast<std::size_t>(INT_MAX)) return uneven_large_count(g, a, io);
#endif
  return uneven_alltoallw(g, a, io);
}

}  // namespace pg::mpi
