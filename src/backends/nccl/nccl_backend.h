// The CUDA default backend: every operation on NCCL, on one communicator per
// backend instance. Compiled with CUDA (nccl_backend.cpp, with its operations
// in nccl_collectives.cpp and nccl_peers.cpp); without it, absent.cpp
// registers a stand-in that says why NCCL is unavailable.
#pragma once

#include "core/registry.h"

namespace pg::nccl {

// The registry entry of "nccl" (devices: PG_DEVICE_CUDA).
BackendEntry entry();

}  // namespace pg::nccl
