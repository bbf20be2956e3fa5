// The library's element types and reduction operators as NCCL's.
#pragma once

#include <nccl.h>

#include "pg_strategy.h"

namespace pg::nccl {

// Every pg_dtype has an NCCL type.
ncclDataType_t datatype(pg_dtype dtype);

// The NCCL operator of `op` (PG_AVG is ncclAvg). False for the bitwise
// operators, which NCCL does not have.
bool reduction(pg_op op, ncclRedOp_t *out);

}  // namespace pg::nccl
