#include "backends/mpi/mpi_types.h"

#include <cmath>
#include <mutex>

#include "core/dtype.h"
#include "core/half.h"
#include "core/status.h"

namespace pg::mpi {
namespace {

// MIN and MAX that give the same bits whichever operand MPI passes first (MPI
// combines in a different order on each rank): NaN wins, and -0 < +0.
template <typename T>
T symmetric_min(T x, T y) {
  if (x != x || y != y) return x != x ? x : y;
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}

template <typename T>
T symmetric_max(T x, T y) {
  if (x != x || y != y) return x != x ? x : y;
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

template <typename T, bool Max>
void combine_extreme(void *in, void *inout, int *len, MPI_Datatype *) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Max ? symmetric_max(a[i], b[i]) : symmetric_min(a[i], b[i]);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float), pg_op Op>
void combine16(void *in, void *inout, int *len, MPI_Datatype *) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = Load(a[i]), y = Load(b[i]), r;
    switch (Op) {
      case PG_PROD: r = x * y; break;
      case PG_MIN: r = symmetric_min(x, y); break;
      case PG_MAX: r = symmetric_max(x, y); break;
      default: r = x + y; break;
    }
    b[i] = Store(r);
  }
}

// Indexed [float16 = 0 | bfloat16 = 1][sum, prod, min, max].
using Fn = void (*)(void *, void *, int *, MPI_Datatype *);
const Fn k16BitFns[2][4] = {
    {combine16<half_to_float, float_to_half, PG_SUM>, combine16<half_to_float, float_to_half, PG_PROD>,
     combine16<half_to_float, float_to_half, PG_MIN>, combine16<half_to_float, float_to_half, PG_MAX>},
    {combine16<bf16_to_float, float_to_bf16, PG_SUM>, combine16<bf16_to_float, float_to_bf16, PG_PROD>,
     combine16<bf16_to_float, float_to_bf16, PG_MIN>, combine16<bf16_to_float, float_to_bf16, PG_MAX>},
};

template <typename T>
void divide_as(void *buf, std::size_t count, int divisor) {
  T *p = static_cast<T *>(buf);
  for (std::size_t i = 0; i < count; ++i) p[i] = p[i] / static_cast<T>(divisor);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void divide16(void *buf, std::size_t count, int divisor) {
  uint16_t *p = static_cast<uint16_t *>(buf);
  for (std::size_t i = 0; i < count; ++i) p[i] = Store(Load(p[i]) / static_cast<float>(divisor));
}

}  // namespace

MPI_Datatype datatype(pg_dtype dtype) {
  switch (dtype) {
    case PG_INT8: return MPI_INT8_T;
    case PG_UINT8: return MPI_UINT8_T;
    case PG_INT32: return MPI_INT32_T;
    case PG_UINT32: return MPI_UINT32_T;
    case PG_INT64: return MPI_INT64_T;
    case PG_UINT64: return MPI_UINT64_T;
    case PG_FLOAT16:
    case PG_BFLOAT16: return MPI_UINT16_T;
    case PG_FLOAT32: return MPI_FLOAT;
    case PG_FLOAT64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

pg_status operation(pg_dtype dtype, pg_op op, MPI_Op *out) {
  if (dtype == PG_FLOAT16 || dtype == PG_BFLOAT16) {
    static std::once_flag once;
    static MPI_Op ops[2][4];
    static int error = MPI_SUCCESS;
    std::call_once(once, [] {
      for (int t = 0; t < 2; ++t)
        for (int o = 0; o < 4; ++o)
          if (error == MPI_SUCCESS) error = MPI_Op_create(k16BitFns[t][o], /*commute=*/1, &ops[t][o]);
    });
    if (error != MPI_SUCCESS) return mpi_failure(error, "MPI_Op_create", __FILE__, __LINE__);
    *out = ops[dtype == PG_BFLOAT16][op == PG_AVG ? PG_SUM : op];
    return PG_OK;
  }
  if (is_floating(dtype) && (op == PG_MIN || op == PG_MAX)) {
    // MPI's built-in MIN/MAX are not symmetric for NaN and signed zeros.
    static std::once_flag once;
    static MPI_Op ops[2][2];  // [float32 | float64][min | max]
    static int error = MPI_SUCCESS;
    std::call_once(once, [] {
      using Fn = void (*)(void *, void *, int *, MPI_Datatype *);
      const Fn fns[2][2] = {{combine_extreme<float, false>, combine_extreme<float, true>},
                            {combine_extreme<double, false>, combine_extreme<double, true>}};
      for (int t = 0; t < 2; ++t)
        for (int m = 0; m < 2; ++m)
          if (error == MPI_SUCCESS) error = MPI_Op_create(fns[t][m], /*commute=*/1, &ops[t][m]);
    });
    if (error != MPI_SUCCESS) return mpi_failure(error, "MPI_Op_create", __FILE__, __LINE__);
    *out = ops[dtype == PG_FLOAT64][op == PG_MAX];
    return PG_OK;
  }
  switch (op) {
    case PG_SUM:
    case PG_AVG: *out = MPI_SUM; break;
    case PG_PROD: *out = MPI_PROD; break;
    case PG_MIN: *out = MPI_MIN; break;
    case PG_MAX: *out = MPI_MAX; break;
    case PG_BAND: *out = MPI_BAND; break;
    case PG_BOR: *out = MPI_BOR; break;
    case PG_BXOR: *out = MPI_BXOR; break;
  }
  return PG_OK;
}

void divide(void *buf, std::size_t count, pg_dtype dtype, int divisor) {
  switch (dtype) {
    case PG_FLOAT16: divide16<half_to_float, float_to_half>(buf, count, divisor); break;
    case PG_BFLOAT16: divide16<bf16_to_float, float_to_bf16>(buf, count, divisor); break;
    case PG_FLOAT32: divide_as<float>(buf, count, divisor); break;
    case PG_FLOAT64: divide_as<double>(buf, count, divisor); break;
    default: break;  // PG_AVG is refused on integers before a backend is called
  }
}

}  // namespace pg::mpi
