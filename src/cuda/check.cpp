#include "cuda/check.h"

#include <cstring>

#include "util/poll.h"

namespace pg::cuda {
namespace {

const char *base_name(const char *file) {
  const char *slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

pg_status cuda_failure(cudaError_t error, const char *call, const char *file, int line) {
  cudaGetLastError();
  return fail(PG_ERR_BACKEND, "%s failed (%s:%d): %s: %s (code %d)", call, base_name(file), line,
              cudaGetErrorName(error), cudaGetErrorString(error), static_cast<int>(error));
}

pg_status nccl_failure(ncclResult_t result, ncclComm_t comm, const char *call, const char *file,
                       int line) {
  const char *detail = ncclGetLastError(comm);
  return fail(result == ncclInvalidArgument ? PG_ERR_INVALID_ARGUMENT : PG_ERR_BACKEND,
              "%s failed (%s:%d): %s%s%s", call, base_name(file), line, ncclGetErrorString(result),
              detail && *detail ? ": " : "", detail ? detail : "");
}

pg_status nccl_settle(ncclResult_t result, ncclComm_t comm, const char *call, const char *file,
                      int line) {
  Backoff backoff;
  while (result == ncclInProgress && comm) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t queried = ncclCommGetAsyncError(comm, &state);
    result = queried != ncclSuccess ? queried : state;
    if (result == ncclInProgress) backoff.idle();
  }
  return result == ncclSuccess ? PG_OK : nccl_failure(result, comm, call, file, line);
}

DeviceGuard::DeviceGuard(int device) {
  error_ = cudaGetDevice(&previous_);
  if (error_ == cudaSuccess && previous_ != device) {
    error_ = cudaSetDevice(device);
    switched_ = error_ == cudaSuccess;
  }
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

}  // namespace pg::cuda
