#include <cuda_runtime.h>

#include <cstring>

#include "backend.h"
#include "device.h"

namespace pgbench::device {
namespace {

void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(error));
}

}  // namespace

std::string probe() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess)
    return std::string("unavailable: no usable GPU (cudaGetDeviceCount: ") + cudaGetErrorString(error) + ")";
  if (count == 0) return "unavailable: no GPU visible";
  return "";
}

void use_local_gpu(MPI_Comm world) {
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0, count = 1;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  check(cudaSetDevice(local % count), "cudaSetDevice");
}

void *alloc(std::size_t bytes) {
  void *p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  check(cudaMemset(p, 0, bytes), "cudaMemset");
  return p;
}

void release(void *ptr) {
  if (ptr) cudaFree(ptr);
}

void *alloc_pinned(std::size_t bytes) {
  void *p = nullptr;
  check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault), "cudaHostAlloc");
  std::memset(p, 1, bytes);
  return p;
}

void release_pinned(void *ptr) {
  if (ptr) cudaFreeHost(ptr);
}

void copy(void *dst, const void *src, std::size_t bytes) { check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy"); }

Stream::Stream() {
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  stream_ = s;
}

Stream::~Stream() { cudaStreamDestroy(static_cast<cudaStream_t>(stream_)); }

void Stream::copy_async(void *dst, const void *src, std::size_t bytes) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream_)),
        "cudaMemcpyAsync");
}

void Stream::synchronize() { check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize"); }

}  // namespace pgbench::device
