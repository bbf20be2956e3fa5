// The backends built into the library: one line each. A backend folder is
// removed with its line here (and its sources in src/CMakeLists.txt).
#include "backends/fairring/fairring_backend.h"
#include "backends/mpi/mpi_backend.h"
#include "backends/nccl/nccl_backend.h"

namespace pg::registry {

std::vector<BackendEntry> builtins() {
  return {mpi::entry(), nccl::entry(), fairring::entry()};
}

}  // namespace pg::registry
