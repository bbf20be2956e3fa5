#include "util/reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "util/half.h"

namespace pg {
namespace {

// The bits of a float or double, as an unsigned integer of its size.
template <typename T>
auto bits_of(T x) {
  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// MIN and MAX that give the same bits whichever operand comes first (MPI
// combines in a different order on each rank): NaN wins (of two NaNs, the one
// with the larger bit pattern), and -0 < +0.
template <typename T>
T nan_of(T x, T y) {
  if (x != x && y != y) return bits_of(x) > bits_of(y) ? x : y;
  return x != x ? x : y;
}

template <typename T>
T symmetric_min(T x, T y) {
  if (x != x || y != y) return nan_of(x, y);
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

template <typename T>
T symmetric_max(T x, T y) {
  if (x != x || y != y) return nan_of(x, y);
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

// One element of `op` on values of type T. Integers compute in the unsigned
// type, so SUM and PROD wrap around as MPI's do (and without undefined behaviour).
template <typename T>
T combine(pg_op op, T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case PG_PROD: return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
      case PG_MIN: return x < y ? x : y;
      case PG_MAX: return x > y ? x : y;
      case PG_BAND: return static_cast<T>(x & y);
      case PG_BOR: return static_cast<T>(x | y);
      case PG_BXOR: return static_cast<T>(x ^ y);
      default: return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
    }
  } else {
    switch (op) {
      case PG_PROD: return x * y;
      case PG_MIN: return symmetric_min(x, y);
      case PG_MAX: return symmetric_max(x, y);
      default: return x + y;
    }
  }
}

// The loop is instantiated per op so that the compiler sees one operation and
// vectorizes it (this file is built with -O3).
template <typename T, pg_op Op>
void loop(T *out, const T *a, const T *b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = combine(Op, a[i], b[i]);
}

template <typename T>
void typed(pg_op op, void *out, const void *a, const void *b, std::size_t n) {
  T *o = static_cast<T *>(out);
  const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
  switch (op) {
    case PG_PROD: return loop<T, PG_PROD>(o, x, y, n);
    case PG_MIN: return loop<T, PG_MIN>(o, x, y, n);
    case PG_MAX: return loop<T, PG_MAX>(o, x, y, n);
    case PG_BAND: return loop<T, PG_BAND>(o, x, y, n);
    case PG_BOR: return loop<T, PG_BOR>(o, x, y, n);
    case PG_BXOR: return loop<T, PG_BXOR>(o, x, y, n);
    default: return loop<T, PG_SUM>(o, x, y, n);
  }
}

// float16 and bfloat16: each pair combined in float, then rounded to the type.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void sixteen(pg_op op, void *out, const void *a, const void *b, std::size_t n) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const uint16_t *x = static_cast<const uint16_t *>(a), *y = static_cast<const uint16_t *>(b);
  for (std::size_t i = 0; i < n; ++i) o[i] = Store(combine(op, Load(x[i]), Load(y[i])));
}

template <typename T>
void divide_as(void *buf, std::size_t n, int divisor) {
  T *p = static_cast<T *>(buf);
  const T d = static_cast<T>(divisor);
  for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / d;
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void divide16(void *buf, std::size_t n, int divisor) {
  uint16_t *p = static_cast<uint16_t *>(buf);
  const float d = static_cast<float>(divisor);
  for (std::size_t i = 0; i < n; ++i) p[i] = Store(Load(p[i]) / d);
}

}  // namespace

void reduce_into(pg_dtype dtype, pg_op op, void *out, const void *a, const void *b, std::size_t n) {
  switch (dtype) {
    case PG_INT8: return typed<int8_t>(op, out, a, b, n);
    case PG_UINT8: return typed<uint8_t>(op, out, a, b, n);
    case PG_INT32: return typed<int32_t>(op, out, a, b, n);
    case PG_UINT32: return typed<uint32_t>(op, out, a, b, n);
    case PG_INT64: return typed<int64_t>(op, out, a, b, n);
    case PG_UINT64: return typed<uint64_t>(op, out, a, b, n);
    case PG_FLOAT16: return sixteen<half_to_float, float_to_half>(op, out, a, b, n);
    case PG_BFLOAT16: return sixteen<bf16_to_float, float_to_bf16>(op, out, a, b, n);
    case PG_FLOAT32: return typed<float>(op, out, a, b, n);
    case PG_FLOAT64: return typed<double>(op, out, a, b, n);
  }
}

void reduce_local(pg_dtype dtype, pg_op op, void *inout, const void *in, std::size_t n) {
  reduce_into(dtype, op, inout, inout, in, n);
}

void reduce_finish(pg_dtype dtype, pg_op op, void *buf, std::size_t n, int ranks) {
  if (op != PG_AVG) return;
  switch (dtype) {
    case PG_FLOAT16: return divide16<half_to_float, float_to_half>(buf, n, ranks);
    case PG_BFLOAT16: return divide16<bf16_to_float, float_to_bf16>(buf, n, ranks);
    case PG_FLOAT32: return divide_as<float>(buf, n, ranks);
    case PG_FLOAT64: return divide_as<double>(buf, n, ranks);
    default: return;  // PG_AVG exists on floating types only
  }
}

}  // namespace pg
