// A build without CUDA: the CUDA calls of the core report the missing support
// (no CUDA strategy can be created, so only device_count is ever reached).
#include "cuda/runtime.h"
#include "util/status.h"

namespace pg::cuda {

pg_status unavailable(const char *what) {
  return fail(PG_ERR_UNAVAILABLE,
              "%s is not available: this build of pgstrategy has no CUDA support (configure with "
              "-DPGS_ENABLE_CUDA=ON and a CUDA toolkit with NCCL)",
              what);
}

pg_status device_count(int *count) {
  if (count) *count = 0;
  return unavailable("device 'cuda'");
}
pg_status mem_alloc(int, std::size_t, void **) { return unavailable("device 'cuda'"); }
pg_status mem_free(int, void *) { return unavailable("device 'cuda'"); }
pg_status pci_bus_id(int, std::string *) { return unavailable("device 'cuda'"); }

}  // namespace pg::cuda
