// A build without CUDA: "nccl" stays registered, so that selection can say why
// it cannot run.
#include "backends/nccl/nccl_backend.h"
#include "cuda/runtime.h"

namespace pg::nccl {

BackendEntry entry() {
  BackendEntry e;
  e.name = "nccl";
  e.devices = PG_DEVICE_CUDA;
  e.default_for = PG_DEVICE_CUDA;
  e.make = [](const MakeArgs &, std::unique_ptr<Backend> *) { return cuda::unavailable("backend 'nccl'"); };
  return e;
}

}  // namespace pg::nccl
