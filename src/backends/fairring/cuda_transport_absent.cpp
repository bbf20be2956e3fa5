// A build without CUDA: no CUDA strategy can be created, so this is never
// reached; it says why if it is.
#include "backends/fairring/cuda_transport.h"
#include "util/status.h"

namespace pg::fairring {

pg_status make_cuda_transport(const pg_backend_context &, const InstanceEnv &, std::size_t, int,
                              std::unique_ptr<NodeTransport> *) {
  return fail(PG_ERR_UNAVAILABLE, "fairring on CUDA: this build of pgstrategy has no CUDA support");
}

}  // namespace pg::fairring
