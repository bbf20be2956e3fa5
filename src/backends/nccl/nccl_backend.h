// The CUDA default backend: every operation on NCCL, on one communicator per
// backend instance. Compiled only with CUDA; the registry includes this header
// under PG_HAVE_CUDA.
#pragma once

#include <cstddef>
#include <string>

#include "core/registry.h"

namespace pg::nccl {

// The registry entry of "nccl" (devices: PG_DEVICE_CUDA).
BackendEntry entry();

// GPUs the CUDA runtime can use here. PG_ERR_UNAVAILABLE, saying why, when
// there are none: no driver, a runtime error, or no visible device.
pg_status cuda_device_count(int *count);

// Device memory on GPU `device` for pg_mem_alloc on a CUDA strategy (cudaMalloc;
// the caller's current device is left as it was). Not collective by itself.
pg_status mem_alloc(int device, std::size_t bytes, void **ptr);
pg_status mem_free(int device, void *ptr);

// The PCI bus id of GPU `device` ("0000:93:00.0"), to find it in hwloc's topology.
pg_status pci_bus_id(int device, std::string *bus_id);

}  // namespace pg::nccl
