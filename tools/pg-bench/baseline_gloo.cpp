// gloo-raw: Gloo's collective API called directly, over its TCP transport (on
// 127.0.0.1 when all ranks share a host). Ranks find each other through a
// gloo::rendezvous::Store whose set() is an MPI all-gather, so no file system
// or key-value server is needed. Only Gloo's newer functions are used (never
// its older algorithm classes on the same context), each call with a fresh tag.
// Gloo has no reduce_scatter in that API: the collective is reported as such.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>

#include "backend.h"
#include "dtypes.h"

namespace pgbench {
namespace {

// A rendezvous store over MPI: every rank calls set() the same number of times
// in the same order (Gloo's full-mesh connect publishes one or two keys per
// rank), so each set() is an all-gather of (key, value) and get() is local.
class MpiStore : public gloo::rendezvous::Store {
 public:
  explicit MpiStore(MPI_Comm comm) : comm_(comm) {}

  void set(const std::string &key, const std::vector<char> &data) override {
    // Record: [key length][key][value].
    std::vector<char> rec(sizeof(uint32_t) + key.size() + data.size());
    const auto klen = static_cast<uint32_t>(key.size());
    std::memcpy(rec.data(), &klen, sizeof klen);
    std::memcpy(rec.data() + sizeof klen, key.data(), key.size());
    if (!data.empty()) std::memcpy(rec.data() + sizeof klen + key.size(), data.data(), data.size());
    int size = 1;
    MPI_Comm_size(comm_, &size);
    int mine = static_cast<int>(rec.size());
    std::vector<int> lens(static_cast<size_t>(size)), offs(static_cast<size_t>(size));
    MPI_Allgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_);
    int total = 0;
    for (int r = 0; r < size; ++r) {
      offs[static_cast<size_t>(r)] = total;
      total += lens[static_cast<size_t>(r)];
    }
    std::vector<char> all(static_cast<size_t>(total));
    MPI_Allgatherv(rec.data(), mine, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, comm_);
    for (int r = 0; r < size; ++r) {
      const char *p = all.data() + offs[static_cast<size_t>(r)];
      uint32_t kl = 0;
      std::memcpy(&kl, p, sizeof kl);
      const std::string k(p + sizeof kl, kl);
      const char *v = p + sizeof kl + kl;
      const size_t vlen = static_cast<size_t>(lens[static_cast<size_t>(r)]) - sizeof kl - kl;
      values_[k] = std::vector<char>(v, v + vlen);
    }
  }

  std::vector<char> get(const std::string &key) override {
    const auto it = values_.find(key);
    if (it == values_.end()) throw std::runtime_error("rendezvous key '" + key + "' was never set");
    return it->second;
  }

  void wait(const std::vector<std::string> &keys) override {
    for (const auto &k : keys) get(k);
  }

  void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &) override {
    wait(keys);
  }

 private:
  MPI_Comm comm_;
  std::map<std::string, std::vector<char>> values_;
};

class GlooRaw : public Backend {
 public:
  GlooRaw() : Backend("gloo-raw") {}

  std::string description() const override {
    return "Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." + std::to_string(GLOO_VERSION_MINOR) +
           "." + std::to_string(GLOO_VERSION_PATCH) + " called directly, TCP on " + where_;
  }

  std::string unsupported(Collective c, pg_dtype, pg_op) const override {
    if (c == Collective::ReduceScatter) return "Gloo's collective API has no reduce_scatter";
    return "";
  }

  void setup(const SetupInfo &info) override {
    rank_ = info.rank;
    nranks_ = info.nranks;
    MPI_Comm_dup(info.world, &comm_);
    // Loopback when every rank is on this host, else the host name.
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    gloo::transport::tcp::attr attr;
    if (node_size == nranks_) {
      attr.hostname = "127.0.0.1";
      where_ = "127.0.0.1";
    } else {
      char host[256] = {0};
      gethostname(host, sizeof host - 1);
      attr.hostname = host;
      where_ = "each rank's host name";
    }
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(rank_, nranks_);
      context_->setTimeout(std::chrono::seconds(300));
      MpiStore store(comm_);
      context_->connectFullMesh(store, device_);
    } catch (const std::exception &e) {
      throw Unavailable(std::string("Gloo TCP setup failed: ") + e.what());
    }
    staging_.resize(info.max_bytes);
  }

  std::string run(const Call &c) override {
    try {
      switch (dtype_size(c.dtype)) {
        case 1: return run_typed<uint8_t>(c);
        case 2: return run_typed<uint16_t>(c);
        case 4: return run_typed<uint32_t>(c);
        default: return run_typed<uint64_t>(c);
      }
    } catch (const std::exception &e) {
      return std::string("Gloo ") + collective_name(c.coll) + " failed: " + e.what();
    }
  }

  std::string barrier() override {
    try {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag());
      gloo::barrier(opts);
      return "";
    } catch (const std::exception &e) {
      return std::string("Gloo barrier failed: ") + e.what();
    }
  }

  void teardown() override {
    context_.reset();
    device_.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

 private:
  // T only gives Gloo the element size; reductions go through reduce3.
  template <typename T>
  std::string run_typed(const Call &c) {
    T *recv = static_cast<T *>(c.recv);
    T *send = static_cast<T *>(const_cast<void *>(c.send));
    const size_t n = static_cast<size_t>(nranks_);
    switch (c.coll) {
      case Collective::Allreduce: {
        gloo::AllreduceOptions opts(context_);
        if (!c.in_place) opts.setInput(send, c.count);
        opts.setOutput(recv, c.count);
        const pg_dtype dtype = c.dtype;
        const pg_op op = c.op;
        opts.setReduceFunction([dtype, op](void *out, const void *a, const void *b, size_t k) {
          reduce3(dtype, op, out, a, b, k);
        });
        opts.setTag(next_tag());
        gloo::allreduce(opts);
        if (c.op == PG_AVG) scale_for_avg(c.dtype, c.recv, c.count, nranks_);
        break;
      }
      case Collective::Allgather: {
        gloo::AllgatherOptions opts(context_);
        if (!c.in_place) opts.setInput(send, c.count);
        opts.setOutput(recv, c.count * n);
        opts.setTag(next_tag());
        gloo::allgather(opts);
        break;
      }
      case Collective::Broadcast: {
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(recv, c.count);
        opts.setRoot(c.root);
        opts.setTag(next_tag());
        gloo::broadcast(opts);
        break;
      }
      case Collective::Alltoall: {
        gloo::AlltoallOptions opts(context_);
        if (c.in_place) {
          // Gloo's alltoall needs distinct buffers: stage, as the library does.
          std::memcpy(staging_.data(), c.recv, c.count * n * sizeof(T));
          send = reinterpret_cast<T *>(staging_.data());
        }
        opts.setInput(send, c.count * n);
        opts.setOutput(recv, c.count * n);
        opts.setTag(next_tag());
        gloo::alltoall(opts);
        break;
      }
      case Collective::ReduceScatter:
        return "Gloo's collective API has no reduce_scatter";
    }
    return "";
  }

  uint32_t next_tag() { return tag_++; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int nranks_ = 1;
  std::string where_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::vector<unsigned char> staging_;
  uint32_t tag_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_gloo_raw() { return std::make_unique<GlooRaw>(); }
bool gloo_raw_built() { return true; }

}  // namespace pgbench
