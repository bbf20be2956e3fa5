// Element types and reduction operators: sizes, names, and the capability
// table (which dtype x op pairs exist) that the validation and the tests read.
#pragma once

#include <cstddef>

#include "pg_strategy.h"

namespace pg {

constexpr int kDtypeCount = PG_FLOAT64 + 1;
constexpr int kOpCount = PG_BXOR + 1;

inline bool valid_dtype(int dtype) { return dtype >= 0 && dtype < kDtypeCount; }
inline bool valid_op(int op) { return op >= 0 && op < kOpCount; }

// 0 for a value outside the enum.
inline std::size_t dtype_size(pg_dtype dtype) {
  constexpr std::size_t sizes[kDtypeCount] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return valid_dtype(dtype) ? sizes[dtype] : 0;
}
const char *dtype_name(pg_dtype dtype);
const char *op_name(pg_op op);
inline bool is_floating(pg_dtype dtype) { return dtype >= PG_FLOAT16; }

// PG_AVG on floating types only; bitwise operators on integer types only.
inline bool op_supported(pg_dtype dtype, pg_op op) {
  bool bitwise = op == PG_BAND || op == PG_BOR || op == PG_BXOR;
  return is_floating(dtype) ? !bitwise : op != PG_AVG;
}

// Element conversion (pg_dtype_to_double, pg_dtype_from_double): the dtype
// must be valid. Integers wrap modulo 2^bits on the way in; floating types
// round to nearest even.
void to_double(pg_dtype dtype, const void *in, double *out, std::size_t count);
void from_double(pg_dtype dtype, const double *in, void *out, std::size_t count);

}  // namespace pg
