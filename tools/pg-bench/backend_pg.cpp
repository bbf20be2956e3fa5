// A pgstrategy backend — registered or loaded as a plugin — through the public
// C API, exactly as an application calls it. With --device cuda its buffers
// are device memory from pg_mem_alloc and its calls go to a stream of
// pg-bench's own (pg_strategy_set_stream); each call is timed to the end of
// that stream (synchronize), as nccl-raw's calls are.
//
// "NAME+trace" is the same backend with the flight recorder on: pg-bench takes
// PGS_TRACE out of its environment at the start and gives it to these
// strategies alone, so a traced and an untraced backend run side by side.
// "NAME+VAR=VALUE" (any number of them) is the same backend made with VAR set
// to VALUE while pg_strategy_create reads its settings: two settings of one
// backend, measured size by size in one run (fairring,fairring+PGS_FAIRRING_REDUCE=slot),
// so that the machine's slow moments fall on both alike.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "device.h"

namespace pgbench {
namespace {

// PGS_TRACE as pg-bench was started with it, taken out of the environment.
const std::string &trace_dir() {
  static const std::string dir = [] {
    const char *v = std::getenv("PGS_TRACE");
    std::string d = v ? v : "";
    unsetenv("PGS_TRACE");
    return d;
  }();
  return dir;
}

// What a backend's name in -B asks for: the library's backend, and what to
// set while it is made.
struct Variant {
  std::string library;
  bool trace = false;
  std::vector<std::pair<std::string, std::string>> env;
};

Variant parse_variant(const std::string &name) {
  Variant v;
  std::size_t at = name.find('+');
  v.library = name.substr(0, at);
  while (at != std::string::npos) {
    const std::size_t next = name.find('+', at + 1);
    const std::string part = name.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const std::size_t eq = part.find('=');
    if (part == "trace")
      v.trace = true;
    else if (eq != std::string::npos && eq > 0)
      v.env.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    else
      throw Error("backend '" + name + "': '+" + part + "' is neither +trace nor +VAR=VALUE");
    at = next;
  }
  return v;
}

// Sets each variable for the scope's life, then puts back what was there.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>> &vars) {
    for (const auto &[var, value] : vars) {
      const char *was = std::getenv(var.c_str());
      saved_.emplace_back(var, was ? std::optional<std::string>(was) : std::nullopt);
      setenv(var.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it)
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The library's call for `c`, on `s`.
pg_status run_collective(pg_strategy *s, const Call &c) {
  switch (c.coll) {
    case Collective::Allreduce:
      return pg_allreduce(s, c.send, c.recv, c.count, c.dtype, c.op);
    case Collective::Allgather:
      return pg_allgather(s, c.send, c.recv, c.count, c.dtype);
    case Collective::ReduceScatter:
      return pg_reduce_scatter(s, c.send, c.recv, c.count, c.dtype, c.op);
    case Collective::Broadcast:
      return pg_broadcast(s, c.recv, c.count, c.dtype, c.root);
    case Collective::Alltoall:
      return pg_alltoall(s, c.send, c.recv, c.count, c.dtype);
    case Collective::Allgatherv:
      return pg_allgatherv(s, c.send, c.count, c.recv, c.recvcounts, c.rdispls, c.dtype);
    case Collective::ReduceScatterv:
      return pg_reduce_scatterv(s, c.send, c.recv, c.recvcounts, c.dtype, c.op);
    case Collective::Alltoallv:
      return pg_alltoallv(s, c.send, c.sendcounts, c.sdispls, c.recv, c.recvcounts, c.rdispls, c.dtype);
  }
  return PG_ERR_INTERNAL;
}

class PgBackend : public Backend {
 public:
  explicit PgBackend(const std::string &name) : Backend(name), variant_(parse_variant(name)) {}

  std::string description() const override { return description_; }

  void setup(const SetupInfo &info) override {
    cuda_ = info.cuda;
    mem_alloc_ = info.mem_alloc || cuda_;
    const char *device = cuda_ ? "cuda" : "cpu";
    // Every strategy pg-bench makes goes without PGS_TRACE but the traced ones.
    const std::string &dir = trace_dir();
    if (variant_.trace && dir.empty())
      throw Error("'" + name() + "' needs PGS_TRACE=DIR (the folder of the flight recorder's dumps)");
    auto env = variant_.env;
    if (variant_.trace) env.emplace_back("PGS_TRACE", dir);
    pg_status st = PG_OK;
    {
      const ScopedEnv set(env);
      st = pg_strategy_create(device, variant_.library.c_str(), &strategy_);
    }
    if (st != PG_OK) {
      const std::string msg = std::string(pg_status_name(st)) + ": " + pg_last_error();
      strategy_ = nullptr;
      // A backend that exists but cannot serve the device here is skipped; a
      // name the library does not know (a typo) or a broken plugin stops the run.
      if (st == PG_ERR_UNSUPPORTED || st == PG_ERR_UNAVAILABLE) throw Unavailable(msg);
      throw Error(msg);
    }
    if (cuda_) {
      // Creation left the strategy's GPU current: the stream is made there.
      stream_ = std::make_unique<device::Stream>();
      const pg_status set = pg_strategy_set_stream(strategy_, stream_->get());
      if (set != PG_OK)
        throw Error(std::string("pg_strategy_set_stream: ") + pg_status_name(set) + ": " + pg_last_error());
    }
    char text[8192] = {0};  // fairring's plan says what its probes chose and why: over 1 KiB
    pg_strategy_describe(strategy_, text, sizeof text);
    // First line of describe, then what pg-bench adds.
    std::string first(text);
    const auto nl = first.find('\n');
    if (nl != std::string::npos) first.resize(nl);
    description_ = "pgstrategy backend '" + std::string(pg_strategy_backend(strategy_)) + "' (device " + device +
                   (cuda_ ? ", device buffers from pg_mem_alloc, calls on a stream of pg-bench's"
                          : mem_alloc_ ? ", buffers from pg_mem_alloc" : "") +
                   (variant_.trace ? ", flight recorder on" : "") + settings() + "): " + first;
  }

  bool own_buffers() const override { return mem_alloc_; }

  // ", made with VAR=VALUE, ..." for a variant's settings.
  std::string settings() const {
    std::string text;
    for (const auto &[var, value] : variant_.env) text += (text.empty() ? ", made with " : ", ") + var + "=" + value;
    return text;
  }

  void *alloc(size_t bytes) override {
    void *p = nullptr;
    const pg_status st = pg_mem_alloc(strategy_, bytes, &p);
    if (st != PG_OK)
      throw Error("pg_mem_alloc(" + std::to_string(bytes) + ") on '" + name() +
                  "': " + pg_status_name(st) + ": " + pg_last_error());
    return p;
  }

  void release(void *ptr) override {
    if (ptr) pg_mem_free(strategy_, ptr);
  }

  bool host_accessible() const override { return !cuda_; }
  void copy_in(void *dst, const void *host, size_t bytes) override {
    if (cuda_) device::copy(dst, host, bytes);
    else std::memcpy(dst, host, bytes);
  }
  void copy_out(void *host, const void *src, size_t bytes) override {
    if (cuda_) device::copy(host, src, bytes);
    else std::memcpy(host, src, bytes);
  }

  std::string run(const Call &c) override {
    const pg_status st = run_collective(strategy_, c);
    if (st == PG_OK) return "";
    return std::string("pg_") + collective_name(c.coll) + " returned " + pg_status_name(st) +
           ": " + pg_last_error();
  }

  void synchronize() override {
    if (stream_) stream_->synchronize();
  }

  std::string barrier() override {
    const pg_status st = pg_barrier(strategy_);
    if (st == PG_OK) return "";
    return std::string("pg_barrier returned ") + pg_status_name(st) + ": " + pg_last_error();
  }

  // The strategy goes first: it enqueues on the stream.
  void teardown() override {
    pg_strategy_destroy(strategy_);
    strategy_ = nullptr;
    stream_.reset();
  }

 private:
  const Variant variant_;
  pg_strategy *strategy_ = nullptr;
  bool cuda_ = false;
  bool mem_alloc_ = false;
  std::unique_ptr<device::Stream> stream_;
  std::string description_;
};

}  // namespace

std::unique_ptr<Backend> make_pg_backend(const std::string &name) {
  return std::make_unique<PgBackend>(name);
}

}  // namespace pgbench
