// The backends built into the library: one line each. A backend folder is
// removed with its line here and its line in src/CMakeLists.txt.
#include "backends/fairring/fairring_backend.h"
#include "backends/mpi/mpi_backend.h"
#include "backends/nccl/nccl_backend.h"
#include "core/registry.h"

namespace pg {
namespace {

std::vector<BackendEntry> builtins() { return {mpi::entry(), nccl::entry(), fairring::entry()}; }

// Handed to the registry when the library is loaded, before any call can reach it.
const bool provided = registry::provide_builtins(builtins);

}  // namespace
}  // namespace pg
