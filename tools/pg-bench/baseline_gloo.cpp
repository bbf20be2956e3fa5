// gloo-raw: Gloo's collective API called directly, over its TCP transport,
// connected the way the gloo plugin connects (pg_gloo::connect_mesh in
// plugins/gloo/gloo_mesh.h) and reducing with the library's kernel. Only Gloo's
// newer functions are used (never its older algorithm classes on the same
// context), each call with a fresh tag. Gloo has no reduce_scatter in that
// API: the collective is reported as such.
#include <gloo/allgather.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>

#include <chrono>
#include <cstring>

#include "backend.h"
#include "gloo_mesh.h"

namespace pgbench {
namespace {

class GlooRaw : public Backend {
 public:
  GlooRaw() : Backend("gloo-raw") {}

  std::string description() const override {
    return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
           "." + std::to_string(GLOO_VERSION_PATCH) + " called directly, TCP on " + mesh_.where;
  }

  std::string unsupported(Collective c, pg_dtype, pg_op) const override {
    if (c == Collective::ReduceScatter) return "Gloo's collective API has no reduce_scatter";
    if (is_uneven(c)) return "the gloo-raw baseline has no uneven rows";
    return "";
  }

  void setup(const SetupInfo &info) override {
    nranks_ = info.nranks;
    MPI_Comm_dup(info.world, &comm_);
    // Unlike the plugin's, a stuck call fails (and stops the run) within minutes.
    const std::string error = pg_gloo::connect_mesh(comm_, std::chrono::minutes(5), &mesh_);
    if (!error.empty()) throw Unavailable("Gloo TCP setup failed: " + error);
    staging_.resize(info.max_bytes);
  }

  std::string run(const Call &c) override {
    try {
      return run_gloo(c);
    } catch (const std::exception &e) {
      return std::string("Gloo ") + collective_name(c.coll) + " failed: " + e.what();
    }
  }

  std::string barrier() override {
    try {
      gloo::BarrierOptions opts(mesh_.context);
      opts.setTag(next_tag());
      gloo::barrier(opts);
      return "";
    } catch (const std::exception &e) {
      return std::string("Gloo barrier failed: ") + e.what();
    }
  }

  void teardown() override {
    mesh_.context.reset();
    mesh_.device.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

 private:
  // Data movement passes bytes; only allreduce needs the element type.
  std::string run_gloo(const Call &c) {
    auto *recv = static_cast<uint8_t *>(c.recv);
    auto *send = static_cast<uint8_t *>(const_cast<void *>(c.send));
    const size_t bytes = c.count * pg_dtype_size(c.dtype);
    const size_t n = static_cast<size_t>(nranks_);
    switch (c.coll) {
      case Collective::Allreduce:
        pg_gloo::allreduce(mesh_.context, c.send, c.recv, c.count, c.dtype, c.op, next_tag());
        break;
      case Collective::Allgather: {
        gloo::AllgatherOptions opts(mesh_.context);
        if (!c.in_place) opts.setInput(send, bytes);
        opts.setOutput(recv, bytes * n);
        opts.setTag(next_tag());
        gloo::allgather(opts);
        break;
      }
      case Collective::Broadcast: {
        gloo::BroadcastOptions opts(mesh_.context);
        opts.setOutput(recv, bytes);
        opts.setRoot(c.root);
        opts.setTag(next_tag());
        gloo::broadcast(opts);
        break;
      }
      case Collective::Alltoall: {
        gloo::AlltoallOptions opts(mesh_.context);
        if (c.in_place) {
          // Gloo's alltoall needs distinct buffers: stage, as the library does.
          std::memcpy(staging_.data(), recv, bytes * n);
          send = staging_.data();
        }
        opts.setInput(send, bytes * n);
        opts.setOutput(recv, bytes * n);
        opts.setTag(next_tag());
        gloo::alltoall(opts);
        break;
      }
      case Collective::ReduceScatter:
        return "Gloo's collective API has no reduce_scatter";
      default:
        return std::string("gloo-raw has no ") + collective_name(c.coll);
    }
    return "";
  }

  uint32_t next_tag() { return tag_++; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int nranks_ = 1;
  pg_gloo::Mesh mesh_;
  std::vector<unsigned char> staging_;
  uint32_t tag_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_raw() { return std::make_unique<GlooRaw>(); }
bool gloo_raw_built() { return true; }

}  // namespace pgbench
