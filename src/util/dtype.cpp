#include "util/dtype.h"

#include <cstdint>

#include "util/half.h"

namespace pg {

const char *dtype_name(pg_dtype dtype) {
  static const char *const names[kDtypeCount] = {"int8",    "uint8",    "int32",   "uint32",
                                                 "int64",   "uint64",   "float16", "bfloat16",
                                                 "float32", "float64"};
  return valid_dtype(dtype) ? names[dtype] : "invalid";
}

const char *op_name(pg_op op) {
  static const char *const names[kOpCount] = {"sum", "prod", "min",  "max",
                                              "avg", "band", "bor", "bxor"};
  return valid_op(op) ? names[op] : "invalid";
}

namespace {

template <typename T>
void load(const void *in, double *out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<double>(static_cast<const T *>(in)[i]);
}

// Integers wrap: through int64, then the unsigned type of the width.
template <typename T>
void store_wrapped(const double *in, void *out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    static_cast<T *>(out)[i] = static_cast<T>(static_cast<std::uint64_t>(static_cast<std::int64_t>(in[i])));
}

template <typename T>
void store_rounded(const double *in, void *out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) static_cast<T *>(out)[i] = static_cast<T>(in[i]);
}

}  // namespace

void to_double(pg_dtype dtype, const void *in, double *out, std::size_t count) {
  const auto *words = static_cast<const std::uint16_t *>(in);
  switch (dtype) {
    case PG_INT8: return load<std::int8_t>(in, out, count);
    case PG_UINT8: return load<std::uint8_t>(in, out, count);
    case PG_INT32: return load<std::int32_t>(in, out, count);
    case PG_UINT32: return load<std::uint32_t>(in, out, count);
    case PG_INT64: return load<std::int64_t>(in, out, count);
    case PG_UINT64: return load<std::uint64_t>(in, out, count);
    case PG_FLOAT16:
      for (std::size_t i = 0; i < count; ++i) out[i] = half_to_float(words[i]);
      return;
    case PG_BFLOAT16:
      for (std::size_t i = 0; i < count; ++i) out[i] = bf16_to_float(words[i]);
      return;
    case PG_FLOAT32: return load<float>(in, out, count);
    case PG_FLOAT64: return load<double>(in, out, count);
  }
}

void from_double(pg_dtype dtype, const double *in, void *out, std::size_t count) {
  auto *words = static_cast<std::uint16_t *>(out);
  switch (dtype) {
    case PG_INT8:
    case PG_UINT8: return store_wrapped<std::uint8_t>(in, out, count);
    case PG_INT32:
    case PG_UINT32: return store_wrapped<std::uint32_t>(in, out, count);
    case PG_INT64:
    case PG_UINT64: return store_wrapped<std::uint64_t>(in, out, count);
    case PG_FLOAT16:
      for (std::size_t i = 0; i < count; ++i) words[i] = float_to_half(static_cast<float>(in[i]));
      return;
    case PG_BFLOAT16:
      for (std::size_t i = 0; i < count; ++i) words[i] = float_to_bf16(static_cast<float>(in[i]));
      return;
    case PG_FLOAT32: return store_rounded<float>(in, out, count);
    case PG_FLOAT64: return store_rounded<double>(in, out, count);
  }
}

}  // namespace pg
