// Stand-in for nccl-raw in builds without CUDA (PGS_HAVE_CUDA off).
#include "backend.h"

namespace pgbench {

std::unique_ptr<Backend> make_nccl_raw() { return make_not_built("nccl-raw", "CUDA"); }

}  // namespace pgbench
