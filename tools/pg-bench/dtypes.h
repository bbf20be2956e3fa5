// Element types and reduction operators as pg-bench sees them: names, sizes,
// which pairs are valid, 16-bit float conversions and element-wise kernels
// (used by the baselines that need a reduction function of their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "pg_strategy.h"

namespace pgbench {

const char *dtype_name(pg_dtype dtype);
const char *op_name(pg_op op);
// Parse a name ("float32", "sum"); false when unknown.
bool parse_dtype(const std::string &name, pg_dtype *out);
bool parse_op(const std::string &name, pg_op *out);
// Comma-separated list of accepted names, for messages.
std::string dtype_names();
std::string op_names();

size_t dtype_size(pg_dtype dtype);
bool dtype_is_float(pg_dtype dtype);
// "" when `op` applies to `dtype`, otherwise why not (avg: floating types only;
// band/bor/bxor: integer types only — the rule of pg_strategy.h).
std::string op_dtype_mismatch(pg_dtype dtype, pg_op op);

// IEEE binary16 and bfloat16 stored as uint16_t; float -> 16 bits rounds to
// nearest even (NaN stays NaN).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

// Element `i` of a buffer of `dtype`, as a double (exact for every type here).
double load_as_double(pg_dtype dtype, const void *buf, size_t i);
// Store `value` as element `i`: integers wrap modulo 2^bits (two's complement),
// floating types round to nearest.
void store_from_double(pg_dtype dtype, void *buf, size_t i, double value);

// out[i] = a[i] op b[i] for i < count; `out` may alias `a` or `b`. PG_AVG
// combines as a sum (divide afterwards with scale_for_avg). 16-bit floats
// combine in float and round to the type, as the library does.
void reduce3(pg_dtype dtype, pg_op op, void *out, const void *a, const void *b, size_t count);
// buf[i] /= nranks (floating types; the second half of PG_AVG).
void scale_for_avg(pg_dtype dtype, void *buf, size_t count, int nranks);

}  // namespace pgbench
