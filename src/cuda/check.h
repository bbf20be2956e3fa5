// Check macros for CUDA runtime and NCCL calls, in NCCL's own style: a
// failing call returns early with the failing library's error text in
// pg_last_error(), and where it failed.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "util/status.h"

namespace pg::cuda {

// A CUDA runtime error as PG_ERR_BACKEND with cudaGetErrorName/String. Clears
// the runtime's last error so a non-sticky error does not reach later calls.
pg_status cuda_failure(cudaError_t error, const char *call, const char *file, int line);

// An NCCL error with ncclGetErrorString and ncclGetLastError(comm) (comm may be
// NULL). ncclInvalidArgument, which NCCL reports before it communicates, is
// PG_ERR_INVALID_ARGUMENT (a host pointer given as a device buffer, say); every
// other error is PG_ERR_BACKEND.
pg_status nccl_failure(ncclResult_t result, ncclComm_t comm, const char *call, const char *file,
                       int line);

// What a call that did not return ncclSuccess comes to. The backend's
// communicators are nonblocking (nccl_backend.cpp), so a call may return
// ncclInProgress while NCCL finishes it in the background: this waits for the
// communicator's state (ncclCommGetAsyncError) to settle, and is PG_OK when it
// settles to ncclSuccess. Anything else is nccl_failure.
pg_status nccl_settle(ncclResult_t result, ncclComm_t comm, const char *call, const char *file,
                      int line);

// Makes `device` current for the guard's lifetime and restores the caller's
// device afterwards. Operations, destroy and the memory helpers run under one,
// so they leave the current device as they found it; creation alone leaves the
// rank's GPU current, on purpose (nccl_backend.cpp, docs/nccl.md).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;
  // cudaSuccess, or the error of switching.
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace pg::cuda

#define PG_CUDA_CHECK(call)                                                        \
  do {                                                                             \
    cudaError_t pg_cuda_error_ = (call);                                           \
    if (pg_cuda_error_ != cudaSuccess)                                             \
      return ::pg::cuda::cuda_failure(pg_cuda_error_, #call, __FILE__, __LINE__);  \
  } while (0)

#define PG_NCCL_CHECK(comm, call)                                                                 \
  do {                                                                                            \
    ncclResult_t pg_nccl_result_ = (call);                                                        \
    if (pg_nccl_result_ != ncclSuccess) {                                                         \
      pg_status pg_nccl_status_ = ::pg::cuda::nccl_settle(pg_nccl_result_, (comm), #call, __FILE__, \
                                                          __LINE__);                              \
      if (pg_nccl_status_ != PG_OK) return pg_nccl_status_;                                       \
    }                                                                                             \
  } while (0)

// Switches to `device` until the end of the scope, or returns the error.
#define PG_CUDA_DEVICE_GUARD(var, device)                                            \
  ::pg::cuda::DeviceGuard var(device);                                               \
  if (var.error() != cudaSuccess)                                                    \
  return ::pg::cuda::cuda_failure(var.error(), "cudaSetDevice", __FILE__, __LINE__)
