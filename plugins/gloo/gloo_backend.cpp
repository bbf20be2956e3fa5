// The gloo backend: a plugin (libpg_backend_gloo.so) that runs allreduce,
// broadcast, allgather and barrier on Gloo's TCP transport. Every other
// operation is left NULL and runs on the default backend.
//
// Set-up (pg_backend_ops.create, collective over ctx->comm):
//   1. a TCP device on the interface named by GLOO_SOCKET_IFNAME, else on
//      127.0.0.1 when every rank is on this host, else on the address this
//      host's name resolves to;
//   2. a full mesh of TCP pairs, whose addresses are exchanged with one
//      MPI_Alltoall on ctx->comm (MeshContext), so no file system or key-value
//      store is needed;
//   3. every step ends with an agreement (an MPI_Allreduce), so all ranks
//      succeed or fail together and none is left waiting in a collective.
//
// Operations use Gloo's options-style collectives only (gloo::allreduce,
// broadcast, allgather, barrier), never its older algorithm classes, and each
// call gets a fresh tag. Pairs Gloo cannot reduce the way the library requires
// (fp16/bf16, AVG, bitwise ops) return PG_ERR_UNSUPPORTED before communicating.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "pg_backend.h"

namespace {

// Gloo's own default is 30 s per operation, which would fail a collective whose
// peers are merely late (a slow rank before a checkpoint). Hangs are the
// library's watchdog's business (PGS_TIMEOUT), so Gloo waits long.
constexpr std::chrono::hours kOperationTimeout{24};
constexpr std::chrono::seconds kConnectTimeout{120};

// --- rendezvous over MPI ----------------------------------------------------

void check_mpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(call) + " failed: " + text);
}

// A gloo::Context whose full mesh is connected over MPI.
//
// Gloo's own rendezvous (rendezvous::Context::connectFullMesh) goes through a
// key-value Store that peers read asynchronously, and its access pattern is not
// the same on every rank, so it cannot be served by MPI collectives. This does
// the same work directly: one TCP pair per peer, each pair's address sent to
// that peer with one MPI_Alltoall, then every pair connected.
//
// The steps are separate so the caller can make every rank agree between them:
// a rank that fails locally must not leave its peers waiting in a collective.
class MeshContext : public gloo::Context {
 public:
  MeshContext(int rank, int size) : gloo::Context(rank, size) {}

  // Local: one pair per peer. Returns the largest address size.
  size_t create_pairs(const std::shared_ptr<gloo::transport::Device> &device, int local_rank) {
    device_ = device;
    transport_ = device->createContext(rank, size);
    transport_->setTimeout(kConnectTimeout);
    addresses_.assign(size, std::vector<char>());
    size_t slot = 0;
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      auto &pair = transport_->createPair(i);
      pair->setLocalRank(local_rank);
      addresses_[i] = pair->address().bytes();
      slot = std::max(slot, addresses_[i].size());
    }
    return slot;
  }

  // Collective: sends peer i the address of this rank's pair for i, in slots of
  // `slot` bytes (the largest address anywhere; shorter ones are zero-padded).
  std::vector<char> exchange(MPI_Comm comm, size_t slot) const {
    std::vector<char> out(slot * size, 0), in(slot * size, 0);
    for (int i = 0; i < size; ++i)
      std::copy(addresses_[i].begin(), addresses_[i].end(), out.begin() + i * slot);
    check_mpi(MPI_Alltoall(out.data(), static_cast<int>(slot), MPI_BYTE, in.data(),
                           static_cast<int>(slot), MPI_BYTE, comm),
              "MPI_Alltoall");
    return in;
  }

  // Connects every pair to its peer (slot i of `in` is peer i's pair for this
  // rank; Gloo's TCP addresses are fixed-size, so no padding remains), then
  // makes the context usable.
  void connect(const std::vector<char> &in, size_t slot) {
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      std::vector<char> peer(in.begin() + i * slot, in.begin() + (i + 1) * slot);
      transport_->getPair(i)->connect(peer);
    }
    transport_->setTimeout(kOperationTimeout);
    setTimeout(kOperationTimeout);
    transportContext_ = std::move(transport_);
  }

 private:
  std::shared_ptr<gloo::transport::Context> transport_;
  std::vector<std::vector<char>> addresses_;
};

// --- one backend instance -----------------------------------------------------

struct GlooState {
  const pg_backend_context *ctx = nullptr;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> context;  // a MeshContext
  uint32_t next_tag = 1;

  // A fresh tag per collective: Gloo matches messages by (collective, tag).
  uint32_t tag() {
    uint32_t t = next_tag++;
    if (next_tag == 0) next_tag = 1;
    return t;
  }
};

void log_message(const pg_backend_context *ctx, int level, const std::string &text) {
  if (ctx != nullptr && ctx->log != nullptr) ctx->log(level, ("gloo: " + text).c_str());
}

// Every rank learns whether all ranks succeeded.
bool all_agree(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
  return all == 1;
}

size_t dtype_size(pg_dtype dtype) {
  switch (dtype) {
    case PG_INT8: case PG_UINT8: return 1;
    case PG_FLOAT16: case PG_BFLOAT16: return 2;
    case PG_INT32: case PG_UINT32: case PG_FLOAT32: return 4;
    case PG_INT64: case PG_UINT64: case PG_FLOAT64: return 8;
  }
  return 0;
}

// Whether every rank of this communicator runs on this host (collective), and
// this rank's index among the ranks on its host.
bool single_host(MPI_Comm comm, int size, int *host_rank) {
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  int shared_size = 0;
  MPI_Comm_size(shared, &shared_size);
  MPI_Comm_rank(shared, host_rank);
  MPI_Comm_free(&shared);
  int mine = shared_size == size ? 1 : 0, all = 0;
  check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  return all == 1;
}

// The interface: GLOO_SOCKET_IFNAME (PyTorch's variable for its Gloo backend;
// of a comma-separated list the first entry is used), else loopback when every
// rank is on this host, else the address this host's name resolves to.
gloo::transport::tcp::attr device_attr(bool loopback, std::string *where) {
  gloo::transport::tcp::attr attr;
  const char *ifname = std::getenv("GLOO_SOCKET_IFNAME");
  std::string iface = ifname ? ifname : "";
  iface = iface.substr(0, iface.find(','));
  if (!iface.empty()) {
    attr.iface = iface;
    *where = "interface '" + iface + "' (GLOO_SOCKET_IFNAME)";
  } else if (loopback) {
    attr.hostname = "127.0.0.1";
    *where = "127.0.0.1 (all ranks on one host)";
  } else {
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) throw std::runtime_error("gethostname failed");
    attr.hostname = host;
    *where = std::string("the address of host '") + host + "' (set GLOO_SOCKET_IFNAME to choose)";
  }
  return attr;
}

pg_status gloo_create(const pg_backend_context *ctx, void * /*user_data*/, void **state) {
  std::unique_ptr<GlooState> st;
  std::string error;
  std::string where;
  int host_rank = 0;

  // Step 1: this rank's device (local, after one collective that cannot fail
  // on one rank only).
  try {
    st.reset(new GlooState());
    st->ctx = ctx;
    if (ctx->size > 1) {
      const bool loopback = single_host(ctx->comm, ctx->size, &host_rank);
      st->device = gloo::transport::tcp::CreateDevice(device_attr(loopback, &where));
    }
  } catch (const std::exception &e) {
    error = std::string("cannot create the TCP device on ") + where + ": " + e.what();
  }
  if (!all_agree(ctx->comm, error.empty())) {
    log_message(ctx, PG_LOG_ERROR, error.empty() ? "another rank could not create its device" : error);
    return PG_ERR_BACKEND;
  }

  // Step 2: the full mesh. Pairs (local), then the same slot size everywhere
  // and agreement in one reduction, addresses over MPI, connections, agreement.
  if (ctx->size > 1) {
    auto context = std::make_shared<MeshContext>(ctx->rank, ctx->size);
    size_t slot = 0;
    try {
      slot = context->create_pairs(st->device, host_rank);
    } catch (const std::exception &e) {
      error = std::string("cannot create connections on ") + where + ": " + e.what();
    }
    // {failed anywhere, largest address}
    long long mine[2] = {error.empty() ? 0 : 1, static_cast<long long>(slot)}, all[2] = {1, 0};
    if (MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, ctx->comm) != MPI_SUCCESS) all[0] = 1;
    if (all[0] == 0 && (all[1] <= 0 || all[1] > 65536)) all[0] = 1;  // not a TCP address
    if (all[0] != 0) {
      log_message(ctx, PG_LOG_ERROR,
                  error.empty() ? "another rank could not create its connections" : error);
      return PG_ERR_BACKEND;
    }
    slot = static_cast<size_t>(all[1]);
    try {
      context->connect(context->exchange(ctx->comm, slot), slot);
      st->context = context;
    } catch (const std::exception &e) {
      error = std::string("cannot connect the ranks over ") + where + ": " + e.what();
    }
    if (!all_agree(ctx->comm, error.empty())) {
      log_message(ctx, PG_LOG_ERROR, error.empty() ? "another rank could not connect" : error);
      return PG_ERR_BACKEND;
    }
    log_message(ctx, PG_LOG_DEBUG, "connected " + std::to_string(ctx->size) + " ranks over " + where);
  }
  *state = st.release();
  return PG_OK;
}

void gloo_destroy(void *state) {
  auto *st = static_cast<GlooState *>(state);
  if (st == nullptr) return;
  // Nobody may still be reading from a connection when its peer closes it.
  if (st->context) MPI_Barrier(st->ctx->comm);
  try {
    st->context.reset();
    st->device.reset();
  } catch (...) {
  }
  delete st;
}

// Runs a Gloo call; an exception becomes PG_ERR_BACKEND with its text logged.
template <typename Fn>
pg_status guarded(GlooState *st, const char *what, Fn &&fn) {
  try {
    fn();
    return PG_OK;
  } catch (const std::exception &e) {
    log_message(st->ctx, PG_LOG_ERROR, std::string(what) + " failed: " + e.what());
  } catch (...) {
    log_message(st->ctx, PG_LOG_ERROR, std::string(what) + " failed");
  }
  return PG_ERR_BACKEND;
}

// --- allreduce ----------------------------------------------------------------

// Element-wise reductions with Gloo's signature (out, in1, in2, n). Integer
// sums and products wrap around, as MPI's do.
template <typename T, bool = std::is_integral<T>::value>
struct Arithmetic {
  using type = T;
};
template <typename T>
struct Arithmetic<T, true> {  // integers compute in the unsigned type: defined wrap-around
  using type = typename std::make_unsigned<T>::type;
};

template <typename T>
struct Reduce {
  using Wide = typename Arithmetic<T>::type;
  static void sum(void *c, const void *a, const void *b, size_t n) {
    T *o = static_cast<T *>(c);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<Wide>(x[i]) + static_cast<Wide>(y[i]));
  }
  static void prod(void *c, const void *a, const void *b, size_t n) {
    T *o = static_cast<T *>(c);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(static_cast<Wide>(x[i]) * static_cast<Wide>(y[i]));
  }
  static void min(void *c, const void *a, const void *b, size_t n) {
    T *o = static_cast<T *>(c);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i) o[i] = y[i] < x[i] ? y[i] : x[i];
  }
  static void max(void *c, const void *a, const void *b, size_t n) {
    T *o = static_cast<T *>(c);
    const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
    for (size_t i = 0; i < n; ++i) o[i] = y[i] > x[i] ? y[i] : x[i];
  }
};

template <typename T>
gloo::AllreduceOptions::Func reduce_function(pg_op op) {
  switch (op) {
    case PG_SUM: return &Reduce<T>::sum;
    case PG_PROD: return &Reduce<T>::prod;
    case PG_MIN: return &Reduce<T>::min;
    case PG_MAX: return &Reduce<T>::max;
    default: return nullptr;
  }
}

template <typename T>
pg_status allreduce_typed(GlooState *st, const void *send, void *recv, size_t count, pg_op op) {
  gloo::AllreduceOptions::Func fn = reduce_function<T>(op);
  if (!fn) return PG_ERR_UNSUPPORTED;
  if (send != recv) std::memcpy(recv, send, count * sizeof(T));
  if (st->ctx->size == 1) return PG_OK;
  // In place on the output: Gloo reduces into it, with the output as input.
  return guarded(st, "allreduce", [&] {
    gloo::AllreduceOptions opts(st->context);
    opts.setOutput(static_cast<T *>(recv), count);
    opts.setReduceFunction(fn);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(st->tag());
    gloo::allreduce(opts);
  });
}

pg_status gloo_allreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                         pg_op op) {
  auto *st = static_cast<GlooState *>(state);
  if (op != PG_SUM && op != PG_PROD && op != PG_MIN && op != PG_MAX) return PG_ERR_UNSUPPORTED;
  if (count == 0) return PG_OK;
  switch (dtype) {
    case PG_INT8: return allreduce_typed<int8_t>(st, send, recv, count, op);
    case PG_UINT8: return allreduce_typed<uint8_t>(st, send, recv, count, op);
    case PG_INT32: return allreduce_typed<int32_t>(st, send, recv, count, op);
    case PG_UINT32: return allreduce_typed<uint32_t>(st, send, recv, count, op);
    case PG_INT64: return allreduce_typed<int64_t>(st, send, recv, count, op);
    case PG_UINT64: return allreduce_typed<uint64_t>(st, send, recv, count, op);
    case PG_FLOAT32: return allreduce_typed<float>(st, send, recv, count, op);
    case PG_FLOAT64: return allreduce_typed<double>(st, send, recv, count, op);
    default: return PG_ERR_UNSUPPORTED;  // fp16/bf16: the library's float combine rule
  }
}

// --- data movement: any dtype, moved as bytes ------------------------------------

pg_status gloo_broadcast(void *state, void *buf, size_t count, pg_dtype dtype, int root) {
  auto *st = static_cast<GlooState *>(state);
  const size_t bytes = count * dtype_size(dtype);
  if (bytes == 0 || st->ctx->size == 1) return PG_OK;
  return guarded(st, "broadcast", [&] {
    gloo::BroadcastOptions opts(st->context);
    opts.setOutput(static_cast<uint8_t *>(buf), bytes);  // the root sends from it
    opts.setRoot(root);
    opts.setTag(st->tag());
    gloo::broadcast(opts);
  });
}

pg_status gloo_allgather(void *state, const void *send, void *recv, size_t sendcount,
                         pg_dtype dtype) {
  auto *st = static_cast<GlooState *>(state);
  const size_t bytes = sendcount * dtype_size(dtype);
  const int rank = st->ctx->rank, size = st->ctx->size;
  uint8_t *out = static_cast<uint8_t *>(recv);
  const bool in_place = send == out + static_cast<size_t>(rank) * bytes;
  if (bytes == 0) return PG_OK;
  if (size == 1) {
    if (!in_place) std::memcpy(out, send, bytes);
    return PG_OK;
  }
  return guarded(st, "allgather", [&] {
    gloo::AllgatherOptions opts(st->context);
    // Without an input Gloo takes this rank's block from the output: in place.
    if (!in_place) opts.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(send)), bytes);
    opts.setOutput(out, bytes * static_cast<size_t>(size));
    opts.setTag(st->tag());
    gloo::allgather(opts);
  });
}

pg_status gloo_barrier(void *state) {
  auto *st = static_cast<GlooState *>(state);
  if (st->ctx->size == 1) return PG_OK;
  return guarded(st, "barrier", [&] {
    gloo::BarrierOptions opts(st->context);
    opts.setTag(st->tag());
    gloo::barrier(opts);
  });
}

}  // namespace

// The plugin's entry point, called once when a strategy first asks for "gloo".
extern "C" PG_API pg_status pg_backend_plugin_init(void) {
  pg_backend_ops ops;
  std::memset(&ops, 0, sizeof ops);  // operations not set here run on the default backend
  ops.abi_version = PG_BACKEND_ABI_VERSION;
  ops.struct_size = sizeof ops;
  ops.name = "gloo";
  ops.devices = PG_DEVICE_CPU;
  ops.create = gloo_create;
  ops.destroy = gloo_destroy;
  ops.allreduce = gloo_allreduce;
  ops.broadcast = gloo_broadcast;
  ops.allgather = gloo_allgather;
  ops.barrier = gloo_barrier;
  return pg_backend_register(&ops);
}
