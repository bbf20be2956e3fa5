#include "cuda/runtime.h"

#include <cuda_runtime.h>

#include <cstdlib>

#include "cuda/check.h"
#include "util/status.h"

namespace pg::cuda {

pg_status device_count(int *count) {
  *count = 0;
  int n = 0;
  cudaError_t error = cudaGetDeviceCount(&n);
  if (error == cudaErrorNoDevice || (error == cudaSuccess && n == 0)) {
    cudaGetLastError();
    const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible)
      return fail(PG_ERR_UNAVAILABLE, "no GPU visible (CUDA_VISIBLE_DEVICES=%s)", visible);
    return fail(PG_ERR_UNAVAILABLE, "no GPU visible (CUDA_VISIBLE_DEVICES is unset)");
  }
  if (error != cudaSuccess) {
    cudaGetLastError();
    return fail(PG_ERR_UNAVAILABLE, "no usable GPU: cudaGetDeviceCount: %s (code %d)",
                cudaGetErrorString(error), static_cast<int>(error));
  }
  *count = n;
  return PG_OK;
}

pg_status mem_alloc(int device, std::size_t bytes, void **ptr) {
  *ptr = nullptr;
  PG_CUDA_DEVICE_GUARD(guard, device);
  cudaError_t error = cudaMalloc(ptr, bytes ? bytes : 1);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return fail(PG_ERR_NO_MEMORY, "pg_mem_alloc: cannot allocate %zu bytes on cuda:%d: %s", bytes,
                device, cudaGetErrorString(error));
  }
  PG_CUDA_CHECK(error);
  return PG_OK;
}

pg_status mem_free(int device, void *ptr) {
  if (!ptr) return PG_OK;
  PG_CUDA_DEVICE_GUARD(guard, device);
  PG_CUDA_CHECK(cudaFree(ptr));
  return PG_OK;
}

pg_status pci_bus_id(int device, std::string *bus_id) {
  char text[32] = "";
  PG_CUDA_CHECK(cudaDeviceGetPCIBusId(text, sizeof text, device));
  *bus_id = text;
  return PG_OK;
}

}  // namespace pg::cuda
