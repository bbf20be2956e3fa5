// Stand-in for nccl-raw in builds without CUDA (PGS_HAVE_CUDA off).
#include "backend.h"

namespace pgbench {
namespace {

class NcclAbsent : public Backend {
 public:
  NcclAbsent() : Backend("nccl-raw") {}
  std::string description() const override { return "NCCL (not built)"; }
  std::string probe() override { return "unavailable: pg-bench was built without CUDA"; }
  void setup(const SetupInfo &) override {}
  std::string run(const Call &) override { return "not built"; }
  std::string barrier() override { return "not built"; }
};

}  // namespace

std::unique_ptr<Backend> make_nccl_raw() { return std::make_unique<NcclAbsent>(); }

}  // namespace pgbench
