// memcpy: the memory-copy ceiling. Every rank copies the row's bytes at the
// same time, from a source buffer of its own into the row's output buffer, so
// a backend's busbw can be read as a fraction of what the memory system of
// this machine gives when every rank copies at once (docs/performance.md).
// It computes nothing, so its rows are not checked; allreduce only, the
// collective whose row size is the whole buffer on every rank.
#include <cstring>

#include "backend.h"
#include "core/dtype.h"

namespace pgbench {
namespace {

class Memcpy : public MpiBarrierBackend {
 public:
  Memcpy() : MpiBarrierBackend("memcpy") {}

  std::string description() const override {
    return "memcpy of each row's bytes on every rank at once (busbw = bytes copied / time)";
  }

  std::string unsupported(Collective c, pg_dtype, pg_op) const override {
    if (c != Collective::Allreduce) return "the memcpy baseline has allreduce rows only";
    return "";
  }

  bool copies_only() const override { return true; }

  void setup(const SetupInfo &info) override {
    dup_world(info);
    source_.assign(info.max_bytes, 1);  // every page touched before timing
  }

  std::string run(const Call &c) override {
    std::memcpy(c.recv, source_.data(), c.count * pg::dtype_size(c.dtype));
    return "";
  }

 private:
  std::vector<unsigned char> source_;
};

}  // namespace

std::unique_ptr<Backend> make_memcpy() { return std::make_unique<Memcpy>(); }

}  // namespace pgbench
