#include "core/validate.h"

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "core/strategy.h"

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

pg_status validate(const char *fn, const pg_strategy *s, CollArgs *args) {
  PG_CHECK(is_reduction(args->coll) ? validate_reduction(fn, args->dtype, args->op) : validate_dtype(fn, args->dtype));
  *args = args->placed(s->rank);
  const CollArgs &a = *args;
  Checker c{fn, s, a, dtype_size(a.dtype)};
  const std::size_t p = static_cast<std::size_t>(s->size);
  const bool root = a.root == s->rank;
  std::size_t one = 0, all = 0;
  PG_CHECK(c.bytes(a.count, 1, &one));
  const bool blocks = a.coll == Coll::allgather || a.coll == Coll::reduce_scatter ||
                      a.coll == Coll::alltoall || a.coll == Coll::gather || a.coll == Coll::scatter;
  if (blocks) PG_CHECK(c.bytes(a.count, p, &all));  // buffers of size*count elements
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
      PG_CHECK(c.rank(a.root, "root"));
      PG_CHECK(c.buffer(a.send, one, "sendbuf"));
      if (!root) return PG_OK;
      PG_CHECK(c.buffer(a.recv, all, "recvbuf"));
      return c.overlap(one, all);
    case Coll::scatter:
      PG_CHECK(c.rank(a.root, "root"));
      PG_CHECK(c.buffer(a.recv, one, "recvbuf"));
      if (!root) return PG_OK;
      PG_CHECK(c.buffer(a.send, all, "sendbuf"));
      return c.overlap(all, one);
    case Coll::barrier:
      return PG_OK;
    case Coll::send:
    case Coll::recv:
      PG_CHECK(c.rank(a.peer, "peer"));
      PG_CHECK(c.tag(a.tag));
      return c.buffer(a.coll == Coll::send ? a.send : a.recv, one, "buf");
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
