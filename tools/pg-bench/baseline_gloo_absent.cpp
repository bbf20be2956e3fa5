// Stand-in for gloo-raw in builds without Gloo (PGS_HAVE_GLOO off).
#include "backend.h"

namespace pgbench {

std::unique_ptr<Backend> make_gloo_raw() { return make_not_built("gloo-raw", "Gloo"); }
bool gloo_raw_built() { return false; }

}  // namespace pgbench
