#include "backends/mpi/mpi_types.h"

#include <mutex>

#include "core/dtype.h"
#include "core/reduce.h"
#include "core/status.h"

namespace pg::mpi {
namespace {

// User operations for the pairs MPI's built-ins get wrong for the library:
// fp16/bf16 (combined in float, rounded) and float MIN/MAX (MPI's are not
// symmetric for NaN and signed zeros). All go through the library's kernel.
template <pg_dtype Dtype, pg_op Op>
void combine(void *in, void *inout, int *len, MPI_Datatype *) {
  reduce_local(Dtype, Op, inout, in, static_cast<std::size_t>(*len));
}

using Fn = void (*)(void *, void *, int *, MPI_Datatype *);

// The user operations of one dtype, indexed by op: sum, prod, min, max.
template <pg_dtype Dtype>
constexpr Fn kUserFns[4] = {combine<Dtype, PG_SUM>, combine<Dtype, PG_PROD>, combine<Dtype, PG_MIN>,
                            combine<Dtype, PG_MAX>};

// One MPI_Op per (dtype, op) pair that needs one, created on first use.
pg_status user_op(pg_dtype dtype, pg_op op, MPI_Op *out) {
  constexpr pg_dtype kTypes[4] = {PG_FLOAT16, PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64};
  static const Fn *const fns[4] = {kUserFns<PG_FLOAT16>, kUserFns<PG_BFLOAT16>, kUserFns<PG_FLOAT32>,
                                   kUserFns<PG_FLOAT64>};
  static std::once_flag once;
  static MPI_Op ops[4][4];
  static int error = MPI_SUCCESS;
  std::call_once(once, [] {
    for (int t = 0; t < 4; ++t)
      for (int o = 0; o < 4; ++o)
        if (error == MPI_SUCCESS) error = MPI_Op_create(fns[t][o], /*commute=*/1, &ops[t][o]);
  });
  if (error != MPI_SUCCESS) return mpi_failure(error, "MPI_Op_create", __FILE__, __LINE__);
  int t = 0;
  while (kTypes[t] != dtype) ++t;
  *out = ops[t][op];
  return PG_OK;
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
  const pg_op combine_op = op == PG_AVG ? PG_SUM : op;
  if (dtype == PG_FLOAT16 || dtype == PG_BFLOAT16) return user_op(dtype, combine_op, out);
  if (is_floating(dtype) && (op == PG_MIN || op == PG_MAX)) return user_op(dtype, op, out);
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

}  // namespace pg::mpi
