// The CUDA calls pg-bench's device rows make (device_cuda.cpp); a build
// without CUDA has stand-ins (device_absent.cpp) that say so. Failures throw
// Error, except probe(), which says why a GPU cannot be used.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace pgbench::device {

// "" when this rank can use a GPU, else why not ("unavailable: ...").
std::string probe();
// Makes GPU (local rank mod visible GPUs) current: ranks sharing a GPU share
// its copy engines, as a pgstrategy strategy's ranks on virtual nodes do.
// Local over `world`'s node (MPI_COMM_TYPE_SHARED).
void use_local_gpu(MPI_Comm world);

void *alloc(std::size_t bytes);         // device memory, zeroed
void release(void *ptr);
void *alloc_pinned(std::size_t bytes);  // page-locked host memory, touched
void release_pinned(void *ptr);
// Host <-> device, either way, complete on return.
void copy(void *dst, const void *src, std::size_t bytes);

// A non-blocking stream of the current GPU.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  void *get() const { return stream_; }
  // Enqueues a copy of `bytes` (either way, or device to device).
  void copy_async(void *dst, const void *src, std::size_t bytes);
  void synchronize();

 private:
  void *stream_ = nullptr;
};

}  // namespace pgbench::device
