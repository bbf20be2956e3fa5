#include "dtypes.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace pgbench {
namespace {

struct DtypeInfo {
  pg_dtype dtype;
  const char *name;
  size_t size;
  bool is_float;
};
const DtypeInfo kDtypes[] = {
    {PG_INT8, "int8", 1, false},        {PG_UINT8, "uint8", 1, false},
    {PG_INT32, "int32", 4, false},      {PG_UINT32, "uint32", 4, false},
    {PG_INT64, "int64", 8, false},      {PG_UINT64, "uint64", 8, false},
    {PG_FLOAT16, "float16", 2, true},   {PG_BFLOAT16, "bfloat16", 2, true},
    {PG_FLOAT32, "float32", 4, true},   {PG_FLOAT64, "float64", 8, true},
};

struct OpInfo {
  pg_op op;
  const char *name;
};
const OpInfo kOps[] = {{PG_SUM, "sum"}, {PG_PROD, "prod"}, {PG_MIN, "min"},   {PG_MAX, "max"},
                       {PG_AVG, "avg"}, {PG_BAND, "band"}, {PG_BOR, "bor"}, {PG_BXOR, "bxor"}};

const DtypeInfo &info(pg_dtype dtype) {
  for (const auto &d : kDtypes)
    if (d.dtype == dtype) return d;
  return kDtypes[0];  // unreachable: every pg_dtype is in the table
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Arithmetic on one element type. Integers compute in the unsigned type of the
// same width, so overflow wraps instead of being undefined.
template <typename T>
struct IntArith {
  using U = std::make_unsigned_t<T>;
  static T sum(T a, T b) { return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b))); }
  static T prod(T a, T b) { return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b))); }
};

template <typename T>
void reduce_int(pg_op op, T *out, const T *a, const T *b, size_t n) {
  switch (op) {
    case PG_SUM:
    case PG_AVG:
      for (size_t i = 0; i < n; ++i) out[i] = IntArith<T>::sum(a[i], b[i]);
      break;
    case PG_PROD:
      for (size_t i = 0; i < n; ++i) out[i] = IntArith<T>::prod(a[i], b[i]);
      break;
    case PG_MIN:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] < a[i] ? b[i] : a[i];
      break;
    case PG_MAX:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] > a[i] ? b[i] : a[i];
      break;
    case PG_BAND:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(a[i] & b[i]);
      break;
    case PG_BOR:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(a[i] | b[i]);
      break;
    case PG_BXOR:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(a[i] ^ b[i]);
      break;
  }
}

template <typename T>
void reduce_float(pg_op op, T *out, const T *a, const T *b, size_t n) {
  switch (op) {
    case PG_SUM:
    case PG_AVG:
      for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
      break;
    case PG_PROD:
      for (size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
      break;
    case PG_MIN:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] < a[i] ? b[i] : a[i];
      break;
    case PG_MAX:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] > a[i] ? b[i] : a[i];
      break;
    default:  // bitwise operators on floats are refused before any call
      break;
  }
}

// 16-bit floats: widen, combine in float, round back.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void reduce_16(pg_op op, uint16_t *out, const uint16_t *a, const uint16_t *b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float x = Load(a[i]), y = Load(b[i]);
    float r = x;
    switch (op) {
      case PG_SUM:
      case PG_AVG: r = x + y; break;
      case PG_PROD: r = x * y; break;
      case PG_MIN: r = y < x ? y : x; break;
      case PG_MAX: r = y > x ? y : x; break;
      default: break;
    }
    out[i] = Store(r);
  }
}

}  // namespace

const char *dtype_name(pg_dtype dtype) { return info(dtype).name; }

const char *op_name(pg_op op) {
  for (const auto &o : kOps)
    if (o.op == op) return o.name;
  return "?";
}

bool parse_dtype(const std::string &name, pg_dtype *out) {
  for (const auto &d : kDtypes)
    if (name == d.name) {
      *out = d.dtype;
      return true;
    }
  return false;
}

bool parse_op(const std::string &name, pg_op *out) {
  for (const auto &o : kOps)
    if (name == o.name) {
      *out = o.op;
      return true;
    }
  return false;
}

std::string dtype_names() {
  std::string s;
  for (const auto &d : kDtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

std::string op_names() {
  std::string s;
  for (const auto &o : kOps) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

size_t dtype_size(pg_dtype dtype) { return info(dtype).size; }
bool dtype_is_float(pg_dtype dtype) { return info(dtype).is_float; }

std::string op_dtype_mismatch(pg_dtype dtype, pg_op op) {
  const bool fp = dtype_is_float(dtype);
  if (op == PG_AVG && !fp)
    return std::string("op 'avg' needs a floating type (float16, bfloat16, float32, float64), not '") +
           dtype_name(dtype) + "'";
  if ((op == PG_BAND || op == PG_BOR || op == PG_BXOR) && fp)
    return std::string("op '") + op_name(op) +
           "' needs an integer type (int8, uint8, int32, uint32, int64, uint64), not '" +
           dtype_name(dtype) + "'";
  return "";
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant * 2^-24.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Below the smallest normal half (2^-14): round to a multiple of 2^-24.
    const float a = bits_float(abs);
    const float q = std::nearbyint(a * 16777216.0f);  // 2^24, ties to even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
  }
  // Normal: drop 13 mantissa bits with round to nearest even.
  uint32_t v = abs - (112u << 23);
  const uint32_t lsb = (v >> 13) & 1u;
  v += 0xfffu + lsb;
  return static_cast<uint16_t>(sign | (v >> 13));
}

float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

double load_as_double(pg_dtype dtype, const void *buf, size_t i) {
  switch (dtype) {
    case PG_INT8: return static_cast<const int8_t *>(buf)[i];
    case PG_UINT8: return static_cast<const uint8_t *>(buf)[i];
    case PG_INT32: return static_cast<const int32_t *>(buf)[i];
    case PG_UINT32: return static_cast<const uint32_t *>(buf)[i];
    case PG_INT64: return static_cast<double>(static_cast<const int64_t *>(buf)[i]);
    case PG_UINT64: return static_cast<double>(static_cast<const uint64_t *>(buf)[i]);
    case PG_FLOAT16: return half_to_float(static_cast<const uint16_t *>(buf)[i]);
    case PG_BFLOAT16: return bf16_to_float(static_cast<const uint16_t *>(buf)[i]);
    case PG_FLOAT32: return static_cast<const float *>(buf)[i];
    case PG_FLOAT64: return static_cast<const double *>(buf)[i];
  }
  return 0.0;
}

void store_from_double(pg_dtype dtype, void *buf, size_t i, double value) {
  // Integers: through int64 and the unsigned type of the width, so values out
  // of range wrap as the type's own arithmetic would.
  const auto wrapped = static_cast<uint64_t>(static_cast<int64_t>(value));
  switch (dtype) {
    case PG_INT8: static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(wrapped); break;
    case PG_UINT8: static_cast<uint8_t *>(buf)[i] = static_cast<uint8_t>(wrapped); break;
    case PG_INT32: static_cast<uint32_t *>(buf)[i] = static_cast<uint32_t>(wrapped); break;
    case PG_UINT32: static_cast<uint32_t *>(buf)[i] = static_cast<uint32_t>(wrapped); break;
    case PG_INT64: static_cast<uint64_t *>(buf)[i] = wrapped; break;
    case PG_UINT64: static_cast<uint64_t *>(buf)[i] = wrapped; break;
    case PG_FLOAT16: static_cast<uint16_t *>(buf)[i] = float_to_half(static_cast<float>(value)); break;
    case PG_BFLOAT16: static_cast<uint16_t *>(buf)[i] = float_to_bf16(static_cast<float>(value)); break;
    case PG_FLOAT32: static_cast<float *>(buf)[i] = static_cast<float>(value); break;
    case PG_FLOAT64: static_cast<double *>(buf)[i] = value; break;
  }
}

void reduce3(pg_dtype dtype, pg_op op, void *out, const void *a, const void *b, size_t n) {
#define PGB_INT(T) \
  reduce_int<T>(op, static_cast<T *>(out), static_cast<const T *>(a), static_cast<const T *>(b), n)
#define PGB_FLT(T) \
  reduce_float<T>(op, static_cast<T *>(out), static_cast<const T *>(a), static_cast<const T *>(b), n)
  auto *o16 = static_cast<uint16_t *>(out);
  const auto *a16 = static_cast<const uint16_t *>(a);
  const auto *b16 = static_cast<const uint16_t *>(b);
  switch (dtype) {
    case PG_INT8: PGB_INT(int8_t); break;
    case PG_UINT8: PGB_INT(uint8_t); break;
    case PG_INT32: PGB_INT(int32_t); break;
    case PG_UINT32: PGB_INT(uint32_t); break;
    case PG_INT64: PGB_INT(int64_t); break;
    case PG_UINT64: PGB_INT(uint64_t); break;
    case PG_FLOAT16: reduce_16<half_to_float, float_to_half>(op, o16, a16, b16, n); break;
    case PG_BFLOAT16: reduce_16<bf16_to_float, float_to_bf16>(op, o16, a16, b16, n); break;
    case PG_FLOAT32: PGB_FLT(float); break;
    case PG_FLOAT64: PGB_FLT(double); break;
  }
#undef PGB_INT
#undef PGB_FLT
}

void scale_for_avg(pg_dtype dtype, void *buf, size_t n, int nranks) {
  switch (dtype) {
    case PG_FLOAT32: {
      auto *p = static_cast<float *>(buf);
      for (size_t i = 0; i < n; ++i) p[i] /= static_cast<float>(nranks);
      break;
    }
    case PG_FLOAT64: {
      auto *p = static_cast<double *>(buf);
      for (size_t i = 0; i < n; ++i) p[i] /= nranks;
      break;
    }
    case PG_FLOAT16: {
      auto *p = static_cast<uint16_t *>(buf);
      for (size_t i = 0; i < n; ++i) p[i] = float_to_half(half_to_float(p[i]) / static_cast<float>(nranks));
      break;
    }
    case PG_BFLOAT16: {
      auto *p = static_cast<uint16_t *>(buf);
      for (size_t i = 0; i < n; ++i) p[i] = float_to_bf16(bf16_to_float(p[i]) / static_cast<float>(nranks));
      break;
    }
    default:  // integers: avg is refused before any call
      break;
  }
}

}  // namespace pgbench
