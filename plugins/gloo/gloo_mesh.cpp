#include "gloo_mesh.h"

#include <gloo/allreduce.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <vector>

#include "pg_backend.h"

namespace pg_gloo {
namespace {

constexpr std::chrono::seconds kConnectTimeout{120};

void check_mpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(call) + " failed: " + text);
}

// Every rank learns whether all ranks succeeded.
bool all_agree(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
  return all == 1;
}

// Whether every rank of `comm` runs on this host (collective), and this rank's
// index among the ranks on its host.
bool single_host(MPI_Comm comm, int size, int *host_rank) {
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  int shared_size = 0;
  MPI_Comm_size(shared, &shared_size);
  MPI_Comm_rank(shared, host_rank);
  MPI_Comm_free(&shared);
  return all_agree(comm, shared_size == size);
}

// GLOO_SOCKET_IFNAME is the variable PyTorch's Gloo backend reads.
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

// A gloo::Context whose full mesh is connected over MPI.
//
// Gloo's own rendezvous::Context::connectFullMesh would also work over MPI:
// every rank calls Store::set() the same number of times in the same order
// and only reads keys already set, so a Store whose set() is an MPI
// all-gather can serve it. But a rank that failed between two set() calls
// would leave its peers inside that all-gather. This does the same work in
// separate steps — one TCP pair per peer (local), each pair's address sent to
// that peer with one MPI_Alltoall, every pair connected — so the ranks can
// agree between them.
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
  void connect(const std::vector<char> &in, size_t slot, std::chrono::milliseconds timeout) {
    for (int i = 0; i < size; ++i) {
      if (i == rank) continue;
      std::vector<char> peer(in.begin() + i * slot, in.begin() + (i + 1) * slot);
      transport_->getPair(i)->connect(peer);
    }
    transport_->setTimeout(timeout);
    setTimeout(timeout);
    transportContext_ = std::move(transport_);
  }

 private:
  std::shared_ptr<gloo::transport::Context> transport_;
  std::vector<std::vector<char>> addresses_;
};

std::string or_elsewhere(const std::string &error, const char *elsewhere) {
  return error.empty() ? elsewhere : error;
}

// T has the element's size; Gloo uses nothing else of it.
template <typename T>
void allreduce_as(const std::shared_ptr<gloo::Context> &context, const void *send, void *recv,
                  size_t count, pg_dtype dtype, pg_op op, uint32_t tag) {
  gloo::AllreduceOptions opts(context);
  if (send != recv) opts.setInput(static_cast<T *>(const_cast<void *>(send)), count);
  opts.setOutput(static_cast<T *>(recv), count);
  opts.setReduceFunction([dtype, op](void *out, const void *in1, const void *in2, size_t n) {
    if (out != in1) std::memcpy(out, in1, n * sizeof(T));
    pg_reduce_local(dtype, op, out, in2, n);
  });
  // The ring reduces each element once, on one rank, and copies the result to
  // the others: every rank gets the same bits, whatever the op.
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setTag(tag);
  gloo::allreduce(opts);
  pg_reduce_finish(dtype, op, recv, count, context->size);
}

}  // namespace

std::string connect_mesh(MPI_Comm comm, std::chrono::milliseconds operation_timeout, Mesh *mesh) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string error;

  // The device: local, after one collective that cannot fail on one rank only.
  int host_rank = 0;
  try {
    const bool loopback = single_host(comm, size, &host_rank);
    mesh->device = gloo::transport::tcp::CreateDevice(device_attr(loopback, &mesh->where));
  } catch (const std::exception &e) {
    error = "cannot create the TCP device on " + mesh->where + ": " + e.what();
  }
  if (!all_agree(comm, error.empty()))
    return or_elsewhere(error, "another rank could not create its device");

  // The pairs (local), then in one reduction the agreement and the largest
  // address, so every rank exchanges slots of the same size.
  auto context = std::make_shared<MeshContext>(rank, size);
  size_t slot = 0;
  try {
    slot = context->create_pairs(mesh->device, host_rank);
  } catch (const std::exception &e) {
    error = "cannot create connections on " + mesh->where + ": " + e.what();
  }
  long long mine[2] = {error.empty() ? 0 : 1, static_cast<long long>(slot)}, all[2] = {1, 0};
  if (MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, comm) != MPI_SUCCESS) all[0] = 1;
  if (all[0] == 0 && size > 1 && (all[1] <= 0 || all[1] > 65536))  // not a TCP address
    return "pair addresses of " + std::to_string(all[1]) + " bytes: not Gloo TCP addresses";
  if (all[0] != 0) return or_elsewhere(error, "another rank could not create its connections");
  slot = static_cast<size_t>(all[1]);

  // Addresses over MPI, then the connections.
  try {
    context->connect(context->exchange(comm, slot), slot, operation_timeout);
  } catch (const std::exception &e) {
    error = "cannot connect the ranks over " + mesh->where + ": " + e.what();
  }
  if (!all_agree(comm, error.empty())) return or_elsewhere(error, "another rank could not connect");
  mesh->context = context;
  return "";
}

void allreduce(const std::shared_ptr<gloo::Context> &context, const void *send, void *recv,
               size_t count, pg_dtype dtype, pg_op op, uint32_t tag) {
  switch (pg_dtype_size(dtype)) {
    case 1: return allreduce_as<uint8_t>(context, send, recv, count, dtype, op, tag);
    case 2: return allreduce_as<uint16_t>(context, send, recv, count, dtype, op, tag);
    case 4: return allreduce_as<uint32_t>(context, send, recv, count, dtype, op, tag);
    default: return allreduce_as<uint64_t>(context, send, recv, count, dtype, op, tag);
  }
}

}  // namespace pg_gloo
