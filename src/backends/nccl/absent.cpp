// A build without CUDA: "nccl" stays registered, so that selection can say why
// it cannot run, and the core's CUDA calls report the missing support.
#include "backends/nccl/nccl_backend.h"
#include "core/cuda_runtime.h"
#include "core/status.h"

namespace pg {
namespace {

pg_status no_cuda(const char *what) {
  return fail(PG_ERR_UNAVAILABLE,
              "%s is not available: this build of pgstrategy has no CUDA support (configure with "
              "-DPGS_ENABLE_CUDA=ON and a CUDA toolkit with NCCL)",
              what);
}

}  // namespace

namespace nccl {

BackendEntry entry() {
  BackendEntry e;
  e.name = "nccl";
  e.devices = PG_DEVICE_CUDA;
  e.make = [](const MakeArgs &, std::unique_ptr<Backend> *) { return no_cuda("backend 'nccl'"); };
  return e;
}

}  // namespace nccl

namespace cuda {

pg_status device_count(int *count) {
  if (count) *count = 0;
  return no_cuda("device 'cuda'");
}
// Unreachable: no CUDA strategy exists without CUDA.
pg_status mem_alloc(int, std::size_t, void **) { return no_cuda("device 'cuda'"); }
pg_status mem_free(int, void *) { return no_cuda("device 'cuda'"); }
pg_status pci_bus_id(int, std::string *) { return no_cuda("device 'cuda'"); }

}  // namespace cuda
}  // namespace pg
