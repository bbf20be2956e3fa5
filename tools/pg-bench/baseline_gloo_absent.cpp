// Stand-in for gloo-raw in builds without Gloo (PGS_HAVE_GLOO off).
#include "backend.h"

namespace pgbench {
namespace {

class GlooAbsent : public Backend {
 public:
  GlooAbsent() : Backend("gloo-raw") {}
  std::string description() const override { return "Gloo (not built)"; }
  std::string probe() override { return "unavailable: pg-bench was built without Gloo"; }
  void setup(const SetupInfo &) override {}
  std::string run(const Call &) override { return "not built"; }
  std::string barrier() override { return "not built"; }
};

}  // namespace

std::unique_ptr<Backend> make_gloo_raw() { return std::make_unique<GlooAbsent>(); }
bool gloo_raw_built() { return false; }

}  // namespace pgbench
