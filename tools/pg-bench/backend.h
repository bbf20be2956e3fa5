// What pg-bench measures: a Backend runs one collective call at a time. The
// pgstrategy backends (any registered or plugin name), the baselines that
// call the underlying libraries directly (mpi-raw, gloo-raw, nccl-raw) and the
// memory-copy baseline (memcpy) share this interface, so the sweep treats
// them alike.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives.h"
#include "pg_strategy.h"

namespace pgbench {

struct Options;

// One collective call, with the buffers in pg_strategy.h's layout: for an
// in-place call `send` sits where pg_strategy.h says (allreduce, alltoall,
// alltoallv: send == recv; allgather: send == recv + rank*count*size;
// reduce_scatter: recv == send + rank*count*size; allgatherv: send == recv +
// rdispls[rank]*size; reduce_scatterv: recv == send + sdispls[rank]*size).
// Broadcast uses `recv` only.
struct Call {
  Collective coll;
  const void *send;
  void *recv;
  size_t count;  // the count argument of the pg_<collective> call
  pg_dtype dtype;
  pg_op op;
  int root;
  bool in_place;
  // The uneven collectives: this rank's counts and displacements (elements,
  // one per rank), as pg_strategy.h's calls take them; NULL for the others.
  const size_t *sendcounts = nullptr, *sdispls = nullptr, *recvcounts = nullptr, *rdispls = nullptr;
};

struct SetupInfo {
  MPI_Comm world;    // pg-bench's view of MPI_COMM_WORLD (duplicate it for own use)
  int rank;
  int nranks;
  size_t max_bytes;  // largest buffer any call will use
  bool mem_alloc;    // --mem-alloc
  bool cuda;         // --device cuda
};

// setup() throws Unavailable when the backend cannot run here (it is skipped
// and the reason reported) and Error for anything the user must fix.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  explicit Backend(std::string name) : name_(std::move(name)) {}
  virtual ~Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  const std::string &name() const { return name_; }
  // One line for the report header: what runs underneath.
  virtual std::string description() const = 0;
  // Local check before any collective setup: "" when this rank can run it.
  virtual std::string probe() { return ""; }
  // Collective over SetupInfo::world.
  virtual void setup(const SetupInfo &info) = 0;
  // "" when this backend runs `c` on dtype/op, else why not. Same on every rank.
  virtual std::string unsupported(Collective c, pg_dtype dtype, pg_op op) const {
    (void)c, (void)dtype, (void)op;
    return "";
  }
  // True for a baseline that copies the row's bytes instead of running the
  // collective: its results are not checked, and its busbw is bytes / time.
  virtual bool copies_only() const { return false; }
  // Whether the sweep checks its results (not for copy baselines, nor the bound).
  virtual bool checked() const { return !copies_only(); }

  // Buffers. By default the sweep hands every backend the same host buffers;
  // a backend that needs its own (device memory, pg_mem_alloc) says so and
  // allocates them (collectively, in the same order on every rank).
  virtual bool own_buffers() const { return false; }
  virtual void *alloc(size_t bytes) { (void)bytes; return nullptr; }
  virtual void release(void *ptr) { (void)ptr; }
  // Whether the host can read and write the buffers directly; if not the
  // sweep fills and checks through copy_in/copy_out.
  virtual bool host_accessible() const { return true; }
  virtual void copy_in(void *dst, const void *host, size_t bytes);
  virtual void copy_out(void *host, const void *src, size_t bytes);

  // Runs one call. Returns "" on success, else a message (local to the rank).
  virtual std::string run(const Call &call) = 0;
  // The backend's own barrier, run before each timed call: an MPI barrier
  // busy-polls, and on a node with fewer cores than threads that polling
  // would starve the helper threads of a backend that does not use MPI
  // (Gloo's I/O threads), so each backend synchronizes the way its own
  // applications would. Returns "" or a message.
  virtual std::string barrier() = 0;
  // Waits until the work started by run() has finished (device backends).
  virtual void synchronize() {}
  // Collective teardown, before MPI_Finalize.
  virtual void teardown() {}

 private:
  std::string name_;
};

// A baseline whose barrier is MPI_Barrier on its own duplicate of
// SetupInfo::world (mpi-raw, memcpy).
class MpiBarrierBackend : public Backend {
 public:
  using Backend::Backend;
  std::string barrier() override {
    return MPI_Barrier(comm_) == MPI_SUCCESS ? "" : "MPI_Barrier failed";
  }
  void teardown() override {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

 protected:
  void dup_world(const SetupInfo &info) { MPI_Comm_dup(info.world, &comm_); }
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// The baselines; each lives in its own file, with a stand-in (make_not_built)
// when its library is absent from the build.
std::unique_ptr<Backend> make_mpi_raw();
// The copy ceilings (baseline_memcpy.cpp): host memory, or device memory with cuda.
std::unique_ptr<Backend> make_memcpy(bool cuda);
std::unique_ptr<Backend> make_memcpy_pinned(bool cuda);
// The bound (baseline_bound.cpp): an allreduce's data movement in shared memory, copies only.
std::unique_ptr<Backend> make_bound();
// A baseline whose library is not in this build: it reports itself unavailable.
std::unique_ptr<Backend> make_not_built(const std::string &name, const std::string &library);
std::unique_ptr<Backend> make_gloo_raw();
std::unique_ptr<Backend> make_nccl_raw();
bool gloo_raw_built();
// A pgstrategy backend, created with pg_strategy_create(device, name, ...).
std::unique_ptr<Backend> make_pg_backend(const std::string &name);

// The -B default: the device's default backend and the library under it (cpu:
// mpi, mpi-raw, and gloo-raw when built; cuda: nccl, nccl-raw).
std::vector<std::string> default_backends(bool cuda);

// Creates and sets up the backends named in `names`, in that order, agreeing
// across ranks: one skipped anywhere is skipped everywhere, with its reason in
// `skipped` ("name: reason"). Throws Error when one must stop the run (an
// unknown backend name, say). Collective over info.world.
std::vector<std::unique_ptr<Backend>> open_backends(const std::vector<std::string> &names,
                                                    const SetupInfo &info,
                                                    std::vector<std::string> *skipped);

// Agreement over `comm`: `local` is "" when this rank succeeded.
// Returns "" when every rank did, else the same message on every rank, naming
// the ranks that failed (unless all did) and why.
std::string agree_on_failure(MPI_Comm comm, const std::string &local);

}  // namespace pgbench
