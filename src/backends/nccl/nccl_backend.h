// The CUDA default backend: every operation on NCCL, on one communicator per
// backend instance. Compiled only with CUDA; the registry includes this header
// under PG_HAVE_CUDA.
#pragma once

#include "core/registry.h"

namespace pg::nccl {

// The registry entry of "nccl" (devices: PG_DEVICE_CUDA).
BackendEntry entry();

// GPUs the CUDA runtime can use here. PG_ERR_UNAVAILABLE, saying why, when
// there are none: no driver, a runtime error, or no visible device.
pg_status cuda_device_count(int *count);

}  // namespace pg::nccl
