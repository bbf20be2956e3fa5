#include "backends/nccl/nccl_check.h"

#include <cstring>

namespace pg::nccl {
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

}  // namespace pg::nccl
