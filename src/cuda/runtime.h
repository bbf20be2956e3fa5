// The few CUDA runtime calls the core makes: how many GPUs there are, a GPU's
// PCI bus id (to find it in hwloc's topology) and device memory for
// pg_mem_alloc. With CUDA they are runtime.cpp; without it, absent.cpp says
// why CUDA is unavailable.
#pragma once

#include <cstddef>
#include <string>

#include "pg_strategy.h"

namespace pg::cuda {

// GPUs the CUDA runtime can use here. PG_ERR_UNAVAILABLE, saying why, when
// there are none: a build without CUDA, no driver, a runtime error, or no
// visible device.
pg_status device_count(int *count);
// Device memory on GPU `device` (cudaMalloc; the caller's current device is
// left as it was). Not collective by itself.
pg_status mem_alloc(int device, std::size_t bytes, void **ptr);
pg_status mem_free(int device, void *ptr);
// The PCI bus id of GPU `device` ("0000:93:00.0").
pg_status pci_bus_id(int device, std::string *bus_id);

// Builds without CUDA only (absent.cpp): PG_ERR_UNAVAILABLE saying that
// `what` needs CUDA support.
pg_status unavailable(const char *what);

}  // namespace pg::cuda
