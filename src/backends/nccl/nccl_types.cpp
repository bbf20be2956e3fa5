#include "backends/nccl/nccl_types.h"

namespace pg::nccl {

ncclDataType_t datatype(pg_dtype dtype) {
  switch (dtype) {
    case PG_INT8: return ncclInt8;
    case PG_UINT8: return ncclUint8;
    case PG_INT32: return ncclInt32;
    case PG_UINT32: return ncclUint32;
    case PG_INT64: return ncclInt64;
    case PG_UINT64: return ncclUint64;
    case PG_FLOAT16: return ncclFloat16;
    case PG_BFLOAT16: return ncclBfloat16;
    case PG_FLOAT32: return ncclFloat32;
    case PG_FLOAT64: return ncclFloat64;
  }
  return ncclUint8;  // unreachable: the library validates dtypes first
}

bool reduction(pg_op op, ncclRedOp_t *out) {
  switch (op) {
    case PG_SUM: *out = ncclSum; return true;
    case PG_PROD: *out = ncclProd; return true;
    case PG_MIN: *out = ncclMin; return true;
    case PG_MAX: *out = ncclMax; return true;
    case PG_AVG: *out = ncclAvg; return true;
    case PG_BAND:
    case PG_BOR:
    case PG_BXOR: return false;
  }
  return false;
}

}  // namespace pg::nccl
