// pg dtypes and ops as MPI datatypes and operations. float16 and bfloat16
// travel as 16-bit words and reduce through user-defined operations that
// combine each pair in float.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "pg_strategy.h"

namespace pg::mpi {

MPI_Datatype datatype(pg_dtype dtype);
// The MPI operation for `op` on `dtype` (PG_AVG reduces as a sum; the caller
// divides). Created once per process. PG_ERR_BACKEND if MPI fails to create it.
pg_status operation(pg_dtype dtype, pg_op op, MPI_Op *out);
// Whether that operation is one of the library's user-defined ones, which
// combine on the host: MPI cannot apply it to device buffers, CUDA-aware or not.
bool host_combine(pg_dtype dtype, pg_op op);

}  // namespace pg::mpi
