// The library's one set of elementwise reduction kernels: the MPI user
// operations, the fairring backend, pg_reduce_local (for plugins) and the
// tools all combine through these, so every path gives the same bits.
#pragma once

#include <cstddef>

#include "pg_strategy.h"

namespace pg {

// The op two contributions combine with: PG_AVG sums, and reduce_finish divides.
inline pg_op combining_op(pg_op op) { return op == PG_AVG ? PG_SUM : op; }

// inout[i] = inout[i] (op) in[i]. The dtype/op pair must be valid and
// supported (op_supported); PG_AVG combines as PG_SUM. `in` may equal `inout`.
void reduce_local(pg_dtype dtype, pg_op op, void *inout, const void *in, std::size_t count);
// out[i] = a[i] (op) b[i]; out may equal a or b.
void reduce_into(pg_dtype dtype, pg_op op, void *out, const void *a, const void *b,
                 std::size_t count);
// The end of a reduction over `ranks` contributions: PG_AVG divides by ranks in
// the type's arithmetic; other ops do nothing.
void reduce_finish(pg_dtype dtype, pg_op op, void *buf, std::size_t count, int ranks);

}  // namespace pg
