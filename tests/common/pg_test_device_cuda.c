#include <cuda_runtime_api.h>

#include "pg_test.h"
#include "pg_test_device.h"

void *pg_test_device_alloc(size_t bytes) {
  void *ptr = NULL;
  cudaError_t error = cudaMalloc(&ptr, bytes ? bytes : 1);
  if (!pg_test_check(error == cudaSuccess, __FILE__, __LINE__, "cudaMalloc(%zu): %s", bytes,
                     cudaGetErrorString(error)))
    return NULL;
  return ptr;
}

void pg_test_device_free(void *ptr) {
  if (ptr) cudaFree(ptr);
}

int pg_test_device_copy(void *dst, const void *src, size_t bytes) {
  cudaError_t error = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  return pg_test_check(error == cudaSuccess, __FILE__, __LINE__, "cudaMemcpy of %zu bytes: %s", bytes,
                       cudaGetErrorString(error));
}
