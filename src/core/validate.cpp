#include "core/validate.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/strategy.h"
#include "util/dtype.h"
#include "util/status.h"

namespace pg {
namespace {

struct Checker {
  const char *fn;
  const pg_strategy *s;
  const CollArgs &a;  // in_place already worked out
  std::size_t esize = 0;

  pg_status bytes(std::size_t count, std::size_t blocks, std::size_t *out) const {
    std::size_t elements = 0;
    if (__builtin_mul_overflow(count, blocks, &elements) || __builtin_mul_overflow(elements, esize, out))
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: count %zu of %s overflows size_t", fn, count,
                  dtype_name(a.dtype));
    return PG_OK;
  }

  pg_status buffer(const void *p, std::size_t bytes, const char *name) const {
    if (!p && bytes > 0)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s is NULL with count %zu", fn, name, a.count);
    // No buffer can end past the address space (and the overlap checks below may add).
    if (bytes > UINTPTR_MAX - reinterpret_cast<std::uintptr_t>(p))
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s with count %zu of %s runs past the end of memory", fn,
                  name, a.count, dtype_name(a.dtype));
    return PG_OK;
  }

  pg_status rank(int r, const char *what) const {
    if (r < 0 || r >= s->size)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s %d is out of range for %d ranks (0..%d)", fn,
                  what, r, s->size, s->size - 1);
    return PG_OK;
  }

  pg_status tag(int t) const {
    if (t < 0 || t > s->tag_ub)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: tag %d is out of range (0..%d)", fn, t, s->tag_ub);
    return PG_OK;
  }

  // Send and receive buffers may share memory only in the in-place layout.
  pg_status overlap(std::size_t sbytes, std::size_t rbytes) const {
    if (a.in_place || sbytes == 0 || rbytes == 0) return PG_OK;
    auto sp = reinterpret_cast<std::uintptr_t>(a.send), rp = reinterpret_cast<std::uintptr_t>(a.recv);
    if (sp < rp + rbytes && rp < sp + sbytes)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: the send and receive buffers overlap; in place means %s", fn,
                  in_place_layout(a, s->rank).rule);
    return PG_OK;
  }
};

// --- the uneven collectives --------------------------------------------------

// One block of a buffer, in bytes from its start; `index` is the rank it is for.
struct Block {
  std::uintptr_t begin, end;
  int index;
};

// The checks of the uneven collectives: copying the arrays this rank reads,
// then the blocks they describe.
struct Uneven {
  const char *fn;
  const pg_strategy *s;
  CollArgs &a;
  std::size_t esize;

  // Copies the `name`d array of the call's size, which must be there.
  pg_status copy(const std::size_t *from, const char *name, std::vector<std::size_t> *to) const {
    if (!from)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s is NULL; it is read on this rank (%d entries, one per rank)", fn,
                  name, s->size);
    to->assign(from, from + s->size);
    return PG_OK;
  }

  pg_status sum(const std::vector<std::size_t> &counts, const char *name, std::size_t *out) const {
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r)
      if (__builtin_add_overflow(total, counts[r], &total))
        return fail(PG_ERR_INVALID_ARGUMENT, "%s: the sum of %s overflows size_t at %s[%zu] = %zu", fn, name, name, r,
                    counts[r]);
    *out = total;
    return PG_OK;
  }

  // `count` (this rank's own) must be what the array says for `index`.
  pg_status same(std::size_t count, const char *count_name, const std::vector<std::size_t> &counts,
                 const char *name, int index) const {
    if (count != counts[static_cast<std::size_t>(index)])
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s is %zu but %s[%d] is %zu; they must be equal", fn, count_name,
                  count, name, index, counts[static_cast<std::size_t>(index)]);
    return PG_OK;
  }

  // The arrays this rank reads, copied into a.v; a.count set to its share.
  pg_status arrays(const VArrays &raw) {
    auto v = std::make_shared<VCounts>();
    const int me = s->rank;
    const bool root = a.root == me;
    switch (a.coll) {
      case Coll::allgatherv:
        PG_CHECK(copy(raw.recv_counts, "recvcounts", &v->recv_counts));
        PG_CHECK(copy(raw.recv_displs, "displs", &v->recv_displs));
        PG_CHECK(same(a.count, "sendcount", v->recv_counts, "recvcounts", me));
        break;
      case Coll::reduce_scatterv: {
        PG_CHECK(copy(raw.recv_counts, "recvcounts", &v->recv_counts));
        std::size_t before = 0;
        v->send_displs.resize(v->recv_counts.size());
        for (std::size_t r = 0; r < v->recv_counts.size(); ++r) {
          v->send_displs[r] = before;
          before += v->recv_counts[r];  // overflow: checked by sum below
        }
        a.count = v->recv_counts[static_cast<std::size_t>(me)];
        break;
      }
      case Coll::alltoallv:
        PG_CHECK(copy(raw.send_counts, "sendcounts", &v->send_counts));
        PG_CHECK(copy(raw.send_displs, "sdispls", &v->send_displs));
        PG_CHECK(copy(raw.recv_counts, "recvcounts", &v->recv_counts));
        PG_CHECK(copy(raw.recv_displs, "rdispls", &v->recv_displs));
        PG_CHECK(same(v->send_counts[static_cast<std::size_t>(me)], "sendcounts[rank]", v->recv_counts, "recvcounts",
                      me));
        break;
      case Coll::gatherv:
        if (!root) break;
        PG_CHECK(copy(raw.recv_counts, "recvcounts", &v->recv_counts));
        PG_CHECK(copy(raw.recv_displs, "displs", &v->recv_displs));
        PG_CHECK(same(a.count, "sendcount", v->recv_counts, "recvcounts", me));
        break;
      case Coll::scatterv:
        if (!root) break;
        PG_CHECK(copy(raw.send_counts, "sendcounts", &v->send_counts));
        PG_CHECK(copy(raw.send_displs, "displs", &v->send_displs));
        PG_CHECK(same(a.count, "recvcount", v->send_counts, "sendcounts", me));
        break;
      default:
        return fail(PG_ERR_INTERNAL, "%s: not an uneven collective", fn);
    }
    PG_CHECK(sum(v->send_counts, "sendcounts", &v->send_total));
    PG_CHECK(sum(v->recv_counts, "recvcounts", &v->recv_total));
    if (a.coll == Coll::alltoallv) a.count = v->send_total;
    a.v = std::move(v);
    return PG_OK;
  }

  // The blocks `counts` and `displs` describe in `buf`: no displacement +
  // count overflows or runs past the end of memory; none is empty.
  pg_status blocks(const void *buf, const char *buf_name, const std::vector<std::size_t> &counts,
                   const char *counts_name, const std::vector<std::size_t> &displs, const char *displs_name,
                   std::vector<Block> *out) const {
    out->clear();
    const auto base = reinterpret_cast<std::uintptr_t>(buf);
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] == 0) continue;
      std::size_t end = 0, bytes = 0;
      if (__builtin_add_overflow(displs[r], counts[r], &end) || __builtin_mul_overflow(end, esize, &bytes))
        return fail(PG_ERR_INVALID_ARGUMENT, "%s: block %zu (%s[%zu] = %zu, %s[%zu] = %zu) of %s overflows size_t", fn,
                    r, displs_name, r, displs[r], counts_name, r, counts[r], dtype_name(a.dtype));
      if (!buf)
        return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s is NULL with %s[%zu] = %zu", fn, buf_name, counts_name, r,
                    counts[r]);
      if (bytes > UINTPTR_MAX - base)
        return fail(PG_ERR_INVALID_ARGUMENT,
                    "%s: block %zu of %s (%s[%zu] = %zu, %s[%zu] = %zu) runs past the end of memory", fn, r, buf_name,
                    displs_name, r, displs[r], counts_name, r, counts[r]);
      out->push_back({base + displs[r] * esize, base + bytes, static_cast<int>(r)});
    }
    return PG_OK;
  }

  // One block of `count` elements at `buf`.
  pg_status one(const void *buf, const char *buf_name, std::size_t count, const char *count_name, int index,
                std::vector<Block> *out) const {
    out->clear();
    if (count == 0) return PG_OK;
    std::size_t bytes = 0;
    const auto base = reinterpret_cast<std::uintptr_t>(buf);
    if (__builtin_mul_overflow(count, esize, &bytes))
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s %zu of %s overflows size_t", fn, count_name, count,
                  dtype_name(a.dtype));
    if (!buf) return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s is NULL with %s %zu", fn, buf_name, count_name, count);
    if (bytes > UINTPTR_MAX - base)
      return fail(PG_ERR_INVALID_ARGUMENT, "%s: %s with %s %zu of %s runs past the end of memory", fn, buf_name,
                  count_name, count, dtype_name(a.dtype));
    out->push_back({base, base + bytes, index});
    return PG_OK;
  }

  // Receive blocks must not overlap: each location is written once.
  pg_status disjoint(std::vector<Block> blocks, const char *displs_name, const char *counts_name) const {
    std::sort(blocks.begin(), blocks.end(), [](const Block &x, const Block &y) { return x.begin < y.begin; });
    for (std::size_t i = 1; i < blocks.size(); ++i)
      if (blocks[i].begin < blocks[i - 1].end) {
        const auto x = static_cast<std::size_t>(blocks[i - 1].index), y = static_cast<std::size_t>(blocks[i].index);
        const std::vector<std::size_t> &d = a.coll == Coll::reduce_scatterv ? a.v->send_displs : a.v->recv_displs;
        const std::vector<std::size_t> &c = a.v->recv_counts;
        return fail(PG_ERR_INVALID_ARGUMENT,
                    "%s: receive blocks %zu (%s[%zu] = %zu, %s[%zu] = %zu) and %zu (%s[%zu] = %zu, %s[%zu] = %zu) "
                    "overlap; each element may be received once",
                    fn, x, displs_name, x, d[x], counts_name, x, c[x], y, displs_name, y, d[y], counts_name, y, c[y]);
      }
    return PG_OK;
  }

  // Send and receive blocks share no byte (outside the in-place layout).
  pg_status apart(std::vector<Block> sends, const std::vector<Block> &receives, const char *send_what,
                  const char *recv_what) const {
    if (a.in_place || sends.empty() || receives.empty()) return PG_OK;
    std::sort(sends.begin(), sends.end(), [](const Block &x, const Block &y) { return x.begin < y.begin; });
    // The union of the send blocks, as disjoint ranges in order.
    std::vector<Block> merged;
    for (const Block &b : sends)
      if (!merged.empty() && b.begin <= merged.back().end) merged.back().end = std::max(merged.back().end, b.end);
      else merged.push_back(b);
    for (const Block &r : receives) {
      auto it = std::upper_bound(merged.begin(), merged.end(), r.begin,
                                 [](std::uintptr_t at, const Block &m) { return at < m.end; });
      if (it == merged.end() || it->begin >= r.end) continue;
      int with = it->index;
      for (const Block &b : sends)
        if (b.begin < r.end && r.begin < b.end) with = b.index;
      return fail(PG_ERR_INVALID_ARGUMENT,
                  "%s: %s %d overlaps %s %d (the send and receive buffers overlap); in place means %s", fn, send_what,
                  with, recv_what, r.index, in_place_layout(a, s->rank).rule);
    }
    return PG_OK;
  }

  pg_status check() {
    const int me = s->rank;
    const bool root = a.root == me;
    const VCounts &v = *a.v;
    std::vector<Block> sends, receives;
    switch (a.coll) {
      case Coll::allgatherv:
        PG_CHECK(one(a.send, "sendbuf", a.count, "sendcount", me, &sends));
        PG_CHECK(blocks(a.recv, "recvbuf", v.recv_counts, "recvcounts", v.recv_displs, "displs", &receives));
        PG_CHECK(disjoint(receives, "displs", "recvcounts"));
        return apart(sends, receives, "the send block of rank", "receive block");
      case Coll::reduce_scatterv:
        PG_CHECK(blocks(a.send, "sendbuf", v.recv_counts, "recvcounts", v.send_displs, "start", &sends));
        PG_CHECK(one(a.recv, "recvbuf", a.count, "recvcounts[rank]", me, &receives));
        return apart(sends, receives, "send block", "the receive block of rank");
      case Coll::alltoallv:
        PG_CHECK(blocks(a.send, "sendbuf", v.send_counts, "sendcounts", v.send_displs, "sdispls", &sends));
        PG_CHECK(blocks(a.recv, "recvbuf", v.recv_counts, "recvcounts", v.recv_displs, "rdispls", &receives));
        PG_CHECK(disjoint(receives, "rdispls", "recvcounts"));
        return apart(sends, receives, "send block", "receive block");
      case Coll::gatherv:
        PG_CHECK(one(a.send, "sendbuf", a.count, "sendcount", me, &sends));
        if (!root) return PG_OK;
        PG_CHECK(blocks(a.recv, "recvbuf", v.recv_counts, "recvcounts", v.recv_displs, "displs", &receives));
        PG_CHECK(disjoint(receives, "displs", "recvcounts"));
        return apart(sends, receives, "the send block of rank", "receive block");
      case Coll::scatterv:
        PG_CHECK(one(a.recv, "recvbuf", a.count, "recvcount", me, &receives));
        if (!root) return PG_OK;
        PG_CHECK(blocks(a.send, "sendbuf", v.send_counts, "sendcounts", v.send_displs, "displs", &sends));
        return apart(sends, receives, "send block", "the receive block of rank");
      default:
        return fail(PG_ERR_INTERNAL, "%s: not an uneven collective", fn);
    }
  }
};

}  // namespace

pg_status validate_dtype(const char *fn, pg_dtype dtype) {
  if (!valid_dtype(dtype))
    return fail(PG_ERR_INVALID_ARGUMENT, "%s: dtype %d is not a pg_dtype (PG_INT8..PG_FLOAT64)", fn,
                static_cast<int>(dtype));
  return PG_OK;
}

pg_status validate_reduction(const char *fn, pg_dtype dtype, pg_op op) {
  PG_CHECK(validate_dtype(fn, dtype));
  if (!valid_op(op))
    return fail(PG_ERR_INVALID_ARGUMENT, "%s: op %d is not a pg_op (PG_SUM..PG_BXOR)", fn,
                static_cast<int>(op));
  if (!op_supported(dtype, op))
    return fail(PG_ERR_UNSUPPORTED, "%s: op %s is not defined on %s (%s)", fn, op_name(op),
                dtype_name(dtype),
                op == PG_AVG ? "avg is for floating types only" : "bitwise ops are for integer types only");
  return PG_OK;
}

pg_status validate(const char *fn, const pg_strategy *s, CollArgs *args, const VArrays *arrays) {
  PG_CHECK(is_reduction(args->coll) ? validate_reduction(fn, args->dtype, args->op) : validate_dtype(fn, args->dtype));
  if (is_uneven(args->coll)) {
    Checker c{fn, s, *args, dtype_size(args->dtype)};
    if (is_rooted(args->coll)) PG_CHECK(c.rank(args->root, "root"));
    Uneven u{fn, s, *args, dtype_size(args->dtype)};
    PG_CHECK(u.arrays(arrays ? *arrays : VArrays{}));
    args->in_place = pg_in_place_holds(in_place_layout(*args, s->rank), args->send, args->recv, u.esize);
    return u.check();
  }
  *args = args->placed(s->rank);
  const CollArgs &a = *args;
  Checker c{fn, s, a, dtype_size(a.dtype)};
  const std::size_t p = static_cast<std::size_t>(s->size);
  const bool root = a.root == s->rank;
  std::size_t one = 0, all = 0;
  PG_CHECK(c.bytes(a.count, 1, &one));
  if (has_blocks(a.coll)) PG_CHECK(c.bytes(a.count, p, &all));  // buffers of size*count elements
  switch (a.coll) {
    case Coll::allreduce:
      PG_CHECK(c.buffer(a.send, one, "sendbuf"));
      PG_CHECK(c.buffer(a.recv, one, "recvbuf"));
      return c.overlap(one, one);
    case Coll::broadcast:
      PG_CHECK(c.rank(a.root, "root"));
      return c.buffer(a.recv, one, "buf");
    case Coll::reduce:
      PG_CHECK(c.rank(a.root, "root"));
      PG_CHECK(c.buffer(a.send, one, "sendbuf"));
      if (!root) return PG_OK;
      PG_CHECK(c.buffer(a.recv, one, "recvbuf"));
      return c.overlap(one, one);
    case Coll::allgather:
      PG_CHECK(c.buffer(a.send, one, "sendbuf"));
      PG_CHECK(c.buffer(a.recv, all, "recvbuf"));
      return c.overlap(one, all);
    case Coll::reduce_scatter:
      PG_CHECK(c.buffer(a.send, all, "sendbuf"));
      PG_CHECK(c.buffer(a.recv, one, "recvbuf"));
      return c.overlap(all, one);
    case Coll::alltoall:
      PG_CHECK(c.buffer(a.send, all, "sendbuf"));
      PG_CHECK(c.buffer(a.recv, all, "recvbuf"));
      return c.overlap(all, all);
    case Coll::gather:
    case Coll::scatter: {
      // One block on every rank; every rank's block at the root, which gather
      // receives and scatter sends.
      const bool gather = a.coll == Coll::gather;
      PG_CHECK(c.rank(a.root, "root"));
      PG_CHECK(gather ? c.buffer(a.send, one, "sendbuf") : c.buffer(a.recv, one, "recvbuf"));
      if (!root) return PG_OK;
      PG_CHECK(gather ? c.buffer(a.recv, all, "recvbuf") : c.buffer(a.send, all, "sendbuf"));
      return gather ? c.overlap(one, all) : c.overlap(all, one);
    }
    case Coll::barrier:
      return PG_OK;
    case Coll::send:
    case Coll::recv:
      if (!(a.coll == Coll::recv && a.peer == PG_ANY_SOURCE)) PG_CHECK(c.rank(a.peer, "peer"));
      PG_CHECK(c.tag(a.tag));
      return c.buffer(a.coll == Coll::send ? a.send : a.recv, one, "buf");
    case Coll::allgatherv:
    case Coll::reduce_scatterv:
    case Coll::alltoallv:
    case Coll::gatherv:
    case Coll::scatterv:
      break;  // checked above
    case Coll::sendrecv: {
      PG_CHECK(c.rank(a.peer, "dest"));
      PG_CHECK(c.rank(a.source, "source"));
      PG_CHECK(c.tag(a.tag));
      std::size_t rbytes = 0;
      PG_CHECK(c.bytes(a.recv_count, 1, &rbytes));
      PG_CHECK(c.buffer(a.send, one, "sendbuf"));
      PG_CHECK(c.buffer(a.recv, rbytes, "recvbuf"));
      return c.overlap(one, rbytes);
    }
  }
  return fail(PG_ERR_INTERNAL, "%s: unknown operation", fn);
}

}  // namespace pg
