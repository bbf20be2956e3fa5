#include "mpi/types.h"

#include <mutex>

#include "util/dtype.h"
#include "util/reduce.h"
#include "util/status.h"

namespace pg::mpi {
namespace {

// User operations for the pairs MPI's built-ins get wrong for the library:
// fp16/bf16 (combined in float, rounded), float MIN/MAX (MPI's are not
// symmetric for NaN and signed zeros), unsigned MIN/MAX (MPICH 4.0.2
// compares MPI_UINT8_T, MPI_UINT32_T and MPI_UINT64_T as signed) and 8-bit
// SUM (Open MPI 4.1's vectorized MPI_SUM saturates 8-bit integers instead of
// wrapping around, ompi issue 8045). All go through the library's kernel.
template <pg_dtype Dtype, pg_op Op>
void combine(void *in, void *inout, int *len, MPI_Datatype *) {
  reduce_local(Dtype, Op, inout, in, static_cast<std::size_t>(*len));
}

using Fn = void (*)(void *, void *, int *, MPI_Datatype *);

template <pg_dtype Dtype>
Fn user_fn(pg_op op) {
  switch (op) {
    case PG_PROD: return combine<Dtype, PG_PROD>;
    case PG_MIN: return combine<Dtype, PG_MIN>;
    case PG_MAX: return combine<Dtype, PG_MAX>;
    default: return combine<Dtype, PG_SUM>;
  }
}

Fn user_fn(pg_dtype dtype, pg_op op) {
  switch (dtype) {
    case PG_INT8: return user_fn<PG_INT8>(op);
    case PG_UINT8: return user_fn<PG_UINT8>(op);
    case PG_UINT32: return user_fn<PG_UINT32>(op);
    case PG_UINT64: return user_fn<PG_UINT64>(op);
    case PG_FLOAT16: return user_fn<PG_FLOAT16>(op);
    case PG_BFLOAT16: return user_fn<PG_BFLOAT16>(op);
    case PG_FLOAT32: return user_fn<PG_FLOAT32>(op);
    default: return user_fn<PG_FLOAT64>(op);
  }
}

// One MPI_Op per (dtype, op) pair that needs one, created on first use and
// kept for the life of the process. Found without a lock once made (a
// reduction's hot path asks for its operation on every call).
pg_status user_op(pg_dtype dtype, pg_op op, MPI_Op *out) {
  struct Slot {
    std::once_flag once;
    MPI_Op op = MPI_OP_NULL;
    int error = MPI_SUCCESS;
  };
  static Slot slots[kDtypeCount][kOpCount];
  Slot &slot = slots[dtype][op];
  std::call_once(slot.once, [&] { slot.error = MPI_Op_create(user_fn(dtype, op), /*commute=*/1, &slot.op); });
  if (slot.error != MPI_SUCCESS) return mpi_failure(slot.error, "MPI_Op_create", __FILE__, __LINE__);
  *out = slot.op;
  return PG_OK;
}

}  // namespace

bool host_combine(pg_dtype dtype, pg_op op) {
  if (dtype == PG_FLOAT16 || dtype == PG_BFLOAT16) return true;
  const pg_op combine = combining_op(op);
  const bool extreme = combine == PG_MIN || combine == PG_MAX;
  const bool is_unsigned = dtype == PG_UINT8 || dtype == PG_UINT32 || dtype == PG_UINT64;
  const bool byte_sum = combine == PG_SUM && (dtype == PG_INT8 || dtype == PG_UINT8);
  return byte_sum || (extreme && (is_floating(dtype) || is_unsigned));
}

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
  if (host_combine(dtype, op)) return user_op(dtype, combining_op(op), out);
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
