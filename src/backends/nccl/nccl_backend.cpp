// The nccl backend: the CUDA default. One NCCL communicator per backend
// instance, over the ranks of the instance's MPI communicator.
//
// Creation (collective): make the rank's GPU current, create the backend's own
// non-blocking stream unless the strategy already has a user stream, then agree
// over MPI that every rank got this far, broadcast rank 0's ncclUniqueId with
// MPI_Bcast and start NCCL's initialisation nonblocking
// (ncclCommInitRankConfig, blocking = 0), polled with ncclCommGetAsyncError.
// A rank whose initialisation fails tells every other rank over MPI, and a rank
// still inside NCCL's initialisation that hears it aborts its own: no rank is
// left waiting inside NCCL for a rank that gave up. Then the ranks agree on the
// outcome, so creation returns the same status on every rank. The communicator
// stays nonblocking: a call that returns ncclInProgress is waited for
// (PG_NCCL_CHECK, cuda/check.h).
//
// The current device: creation leaves the rank's GPU current on purpose, so
// that what the application allocates after pg_strategy_create lands on that
// GPU (docs/nccl.md). Everything else (operations, destroy, the memory helpers)
// switches to the backend's GPU under a DeviceGuard and restores the caller's.
//
// Streams and completion:
// - No user stream (the default): operations run on the backend's own stream.
//   It first waits for the work already issued to the legacy default stream
//   (and so to every blocking stream, the per-thread default streams included),
//   so buffers written by earlier kernels there are ready. A blocking call then
//   waits for its operation: the result is complete when the call returns. Work
//   on a user stream created with cudaStreamNonBlocking is not waited for:
//   synchronize it first, or hand the stream over with pg_strategy_set_stream.
// - User stream (pg_strategy_set_stream): operations are enqueued on it and the
//   call returns (CUDA stream semantics); the result is ready for later work on
//   that stream, and for the host after cudaStreamSynchronize. Barrier is the
//   exception: it waits for its stream, so it is a host-side barrier.
//   set_stream(NULL) returns to the backend's own stream.
// - Nonblocking calls (pg_i*) enqueue and record a CUDA event on the stream in
//   use; pg_work_test is cudaEventQuery and pg_work_wait waits for the event.
// - While waiting, the communicator's asynchronous error (a peer or network
//   failure) is polled, so a failure returns PG_ERR_BACKEND with NCCL's text
//   instead of hanging.
//
// Operations (nccl_collectives.cpp, nccl_peers.cpp): allreduce, broadcast,
// reduce, allgather and reduce_scatter are NCCL's collectives, whose in-place
// layouts are the library's. alltoall, gather, scatter, send, recv and
// sendrecv are ncclSend/ncclRecv in a group; a rank's own block is a
// device-to-device copy. barrier is a one-element allreduce on a device
// scratch buffer. Counts are size_t in NCCL too, so no operation is split.
// The bitwise operators, which NCCL lacks, are PG_ERR_UNSUPPORTED before
// anything is enqueued. NCCL matches point-to-point messages in order per pair
// of ranks and ignores tags; the two sides of a message must name the same
// count.
//
// Destroy: ncclCommFinalize and ncclCommDestroy, or ncclCommAbort when an
// operation of this backend failed (or creation failed on some rank); then the
// scratch buffer, events and the backend's own stream, in reverse order of creation.
#include "backends/nccl/nccl_backend.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/nccl/nccl_ops.h"
#include "backends/nccl/nccl_types.h"
#include "cuda/check.h"
#include "mpi/agree.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/poll.h"

namespace pg::nccl {
namespace {

// What a backend shares with the operations it started: the communicator (NULL
// once the backend is gone) and whether something failed on it.
// The mutex guards `comm` between a waiting thread and the watchdog's abort.
struct CommState {
  std::mutex mutex;
  ncclComm_t comm = nullptr;
  bool failed = false;
};

// PG_ERR_BACKEND if NCCL has recorded an asynchronous error on the communicator.
pg_status async_error(CommState &state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.comm) return PG_OK;
  ncclResult_t async = ncclSuccess;
  ncclResult_t result = ncclCommGetAsyncError(state.comm, &async);
  if (result != ncclSuccess) async = result;
  if (async == ncclSuccess || async == ncclInProgress) return PG_OK;
  state.failed = true;
  const char *detail = ncclGetLastError(state.comm);
  return fail(PG_ERR_BACKEND, "NCCL reported an asynchronous error on the communicator: %s%s%s",
              ncclGetErrorString(async), detail && *detail ? ": " : "", detail ? detail : "");
}

// *done once `event` has completed; meanwhile, the communicator's asynchronous error.
pg_status query(cudaEvent_t event, CommState &state, bool *done) {
  cudaError_t error = cudaEventQuery(event);
  *done = error == cudaSuccess;
  if (error == cudaSuccess) return PG_OK;
  if (error != cudaErrorNotReady) {
    state.failed = true;
    return cuda::cuda_failure(error, "cudaEventQuery", __FILE__, __LINE__);
  }
  return async_error(state);
}

// Returns once `event` has completed, or with the failure that keeps it from completing.
pg_status wait_event(cudaEvent_t event, CommState &state) {
  bool done = false;
  return poll([&](bool *d) { return query(event, state, d); }, Until{}, &done);
}

// A started operation: an event recorded on the stream after it.
class EventRequest final : public Request {
 public:
  explicit EventRequest(std::shared_ptr<CommState> state) : state_(std::move(state)) {}
  ~EventRequest() override {
    if (event_) cudaEventDestroy(event_);  // released by CUDA once it has completed
  }
  pg_status create() {
    PG_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    return PG_OK;
  }
  cudaEvent_t event() const { return event_; }

  pg_status test(bool *done) override {
    if (finished_) {
      *done = true;
      return PG_OK;
    }
    pg_status st = query(event_, *state_, done);
    if (st != PG_OK) *done = true;
    finished_ = *done && st == PG_OK;
    return st;
  }

 private:
  std::shared_ptr<CommState> state_;
  cudaEvent_t event_ = nullptr;
  bool finished_ = false;
};

// The one-byte message a rank whose NCCL initialisation failed sends every
// other rank of the backend's communicator (its own duplicate: the tag is free).
constexpr int kInitFailedTag = 1;
constexpr char kInitFailed = 1;

// MPI requests left pending when creation ends early: receives are cancelled,
// sends are left to complete on their own.
struct PendingRequests {
  std::vector<MPI_Request> receives, sends;
  PendingRequests() = default;
  PendingRequests(const PendingRequests &) = delete;
  PendingRequests &operator=(const PendingRequests &) = delete;
  ~PendingRequests() {
    for (MPI_Request &r : receives)
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
      }
    for (MPI_Request &r : sends)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  }
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const pg_backend_context &ctx)
      : device_(ctx.device_index),
        rank_(ctx.rank),
        size_(ctx.size),
        user_stream_(static_cast<cudaStream_t>(ctx.stream)),
        state_(std::make_shared<CommState>()) {}

  ~NcclBackend() override {
    cuda::DeviceGuard guard(device_);
    if (state_->comm) {
      ncclComm_t comm = state_->comm;
      state_->comm = nullptr;
      // Finalize is nonblocking on this communicator: settled before the destroy.
      bool clean = !state_->failed &&
                   cuda::nccl_settle(ncclCommFinalize(comm), comm, "ncclCommFinalize", __FILE__, __LINE__) == PG_OK;
      if (clean) {
        ncclCommDestroy(comm);
      } else {
        PG_LOG(info, "nccl backend: aborting the NCCL communicator after a failure");
        ncclCommAbort(comm);
      }
    }
    if (scratch_) cudaFree(scratch_);
    if (done_) cudaEventDestroy(done_);
    if (inputs_ready_) cudaEventDestroy(inputs_ready_);
    if (own_stream_) cudaStreamDestroy(own_stream_);
  }

  // Collective over ctx.comm; the same status on every rank. After a failure
  // anywhere, the destructor aborts what this rank made of the communicator.
  pg_status init(const pg_backend_context &ctx) {
    pg_status st = init_unchecked(ctx);
    if (st != PG_OK) state_->failed = true;
    return st;
  }

  bool implements(Coll) const override { return true; }

  pg_status run(const CollArgs &a) override { return watch(run_unchecked(a)); }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    return watch(start_unchecked(a, out));
  }

  pg_status set_stream(void *stream) override {
    user_stream_ = static_cast<cudaStream_t>(stream);
    return PG_OK;
  }

  // The watchdog ends the job next; kernels stuck waiting for peers are freed.
  void abort() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->comm) ncclCommAbort(state_->comm);
    state_->comm = nullptr;
  }

 private:
  pg_status init_unchecked(const pg_backend_context &ctx) {
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    pg_status local = prepare(&id);
    PG_CHECK(agree(ctx.comm, local, local == PG_OK ? std::string() : last_error()));
    PG_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, ctx.comm));
    PG_CHECK(init_comm(ctx.comm, id));
    int version = 0;
    ncclGetVersion(&version);
    PG_LOG(debug, "nccl backend: rank %d of %d on cuda:%d, NCCL %d (built with %d)", rank_, size_,
           device_, version, NCCL_VERSION_CODE);
    return PG_OK;
  }

  // NCCL's initialisation, nonblocking, with every other rank's failure
  // notice listened for while it runs (the top of this file), then agreed.
  pg_status init_comm(MPI_Comm comm, const ncclUniqueId &id) {
    // The inbox outlives the receives into it (cancelled when `notices` goes).
    std::vector<char> inbox(static_cast<std::size_t>(size_));
    PendingRequests notices;
    notices.receives.assign(inbox.size(), MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r)
      if (r != rank_) PG_MPI_CHECK(MPI_Irecv(&inbox[r], 1, MPI_CHAR, r, kInitFailedTag, comm, &notices.receives[r]));

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t nccl = nullptr;
    ncclResult_t result = ncclCommInitRankConfig(&nccl, size_, id, rank_, &config);
    state_->comm = nccl;  // from here on, the destructor finalizes or aborts it
    int stopped_by = -1;  // the rank whose notice stopped this rank's initialisation
    Backoff backoff;
    while (result == ncclInProgress) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t queried = ncclCommGetAsyncError(nccl, &async);
      result = queried != ncclSuccess ? queried : async;
      if (result != ncclInProgress) break;
      int index = MPI_UNDEFINED, heard = 0;
      PG_MPI_CHECK(MPI_Testany(size_, notices.receives.data(), &index, &heard, MPI_STATUS_IGNORE));
      if (heard && index != MPI_UNDEFINED) {
        stopped_by = index;
        break;
      }
      backoff.idle();
    }
    pg_status local = PG_OK;
    if (stopped_by >= 0)
      local = fail(PG_ERR_BACKEND, "NCCL initialisation stopped because rank %d failed in its own", stopped_by);
    else if (result != ncclSuccess)
      local = cuda::nccl_failure(result, nccl, "ncclCommInitRankConfig", __FILE__, __LINE__);
    const std::string message = local == PG_OK ? std::string() : last_error();
    const int told = local != PG_OK && stopped_by < 0;
    if (told)
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        notices.sends.push_back(MPI_REQUEST_NULL);
        PG_MPI_CHECK(MPI_Isend(&kInitFailed, 1, MPI_CHAR, r, kInitFailedTag, comm, &notices.sends.back()));
      }
    // Which ranks told, so that each rank waits for exactly the notices that
    // were sent (the others are cancelled when `notices` goes).
    std::vector<int> tellers(static_cast<std::size_t>(size_));
    PG_MPI_CHECK(MPI_Allgather(&told, 1, MPI_INT, tellers.data(), 1, MPI_INT, comm));
    for (int r = 0; r < size_; ++r)
      if (tellers[r] && notices.receives[r] != MPI_REQUEST_NULL)
        PG_MPI_CHECK(MPI_Wait(&notices.receives[r], MPI_STATUS_IGNORE));
    PG_MPI_CHECK(MPI_Waitall(static_cast<int>(notices.sends.size()), notices.sends.data(), MPI_STATUSES_IGNORE));
    return agree(comm, local, message);
  }

  // This rank's part of creation, before NCCL's collective init.
  pg_status prepare(ncclUniqueId *id) {
    PG_CUDA_CHECK(cudaSetDevice(device_));  // not restored: see the top of this file
    if (!user_stream_) PG_CHECK(own_stream(nullptr));
    PG_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    PG_CUDA_CHECK(cudaEventCreateWithFlags(&inputs_ready_, cudaEventDisableTiming));
    PG_CUDA_CHECK(cudaMalloc(&scratch_, sizeof(float)));
    PG_CUDA_CHECK(cudaMemset(scratch_, 0, sizeof(float)));
    if (rank_ == 0) PG_NCCL_CHECK(nullptr, ncclGetUniqueId(id));
    return PG_OK;
  }

  // The backend's own stream, created on first need.
  pg_status own_stream(cudaStream_t *out) {
    if (!own_stream_) PG_CUDA_CHECK(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
    if (out) *out = own_stream_;
    return PG_OK;
  }

  // A backend failure marks the communicator for ncclCommAbort at destroy.
  pg_status watch(pg_status st) {
    if (st == PG_ERR_BACKEND) state_->failed = true;
    return st;
  }

  // PG_ERR_UNSUPPORTED, before anything is enqueued, for what NCCL lacks.
  static pg_status supported(const CollArgs &a, ncclRedOp_t *op) {
    *op = ncclSum;
    if (a.coll != Coll::allreduce && a.coll != Coll::reduce && a.coll != Coll::reduce_scatter &&
        a.coll != Coll::reduce_scatterv)
      return PG_OK;
    if (reduction(a.op, op)) return PG_OK;
    return fail(PG_ERR_UNSUPPORTED,
                "backend 'nccl' does not support %s with op %s: NCCL has no bitwise reductions "
                "(it has sum, prod, min, max and avg)",
                coll_name(a.coll), op_name(a.op));
  }

  // The stream operations go to; the own stream first waits for the legacy default stream.
  pg_status stream_for_work(cudaStream_t *out) {
    if (user_stream_) {
      *out = user_stream_;
      return PG_OK;
    }
    PG_CHECK(own_stream(out));
    PG_CUDA_CHECK(cudaEventRecord(inputs_ready_, cudaStreamLegacy));
    PG_CUDA_CHECK(cudaStreamWaitEvent(*out, inputs_ready_, 0));
    return PG_OK;
  }

  // Where an operation goes on `stream` (nccl_ops.h).
  Queue queue(cudaStream_t stream) const { return {state_->comm, rank_, size_, stream, scratch_}; }

  pg_status run_unchecked(const CollArgs &a) {
    ncclRedOp_t op;
    PG_CHECK(supported(a, &op));
    PG_CUDA_DEVICE_GUARD(guard, device_);
    PG_CHECK(async_error(*state_));
    cudaStream_t stream = nullptr;
    PG_CHECK(stream_for_work(&stream));
    PG_CHECK(enqueue(queue(stream), a, op));
    if (user_stream_ && a.coll != Coll::barrier) return PG_OK;
    PG_CUDA_CHECK(cudaEventRecord(done_, stream));
    return wait_event(done_, *state_);
  }

  pg_status start_unchecked(const CollArgs &a, std::unique_ptr<Request> *out) {
    ncclRedOp_t op;
    PG_CHECK(supported(a, &op));
    PG_CUDA_DEVICE_GUARD(guard, device_);
    PG_CHECK(async_error(*state_));
    auto request = std::make_unique<EventRequest>(state_);
    PG_CHECK(request->create());
    cudaStream_t stream = nullptr;
    PG_CHECK(stream_for_work(&stream));
    PG_CHECK(enqueue(queue(stream), a, op));
    PG_CUDA_CHECK(cudaEventRecord(request->event(), stream));
    *out = std::move(request);
    return PG_OK;
  }

  const int device_, rank_, size_;
  cudaStream_t user_stream_ = nullptr;  // from pg_strategy_set_stream; NULL: own_stream_
  cudaStream_t own_stream_ = nullptr;
  cudaEvent_t inputs_ready_ = nullptr;  // recorded on the legacy default stream
  cudaEvent_t done_ = nullptr;          // completion of a blocking call
  void *scratch_ = nullptr;             // barrier's one element
  std::shared_ptr<CommState> state_;
};

}  // namespace

BackendEntry entry() {
  BackendEntry e;
  e.name = "nccl";
  e.devices = PG_DEVICE_CUDA;
  e.default_for = PG_DEVICE_CUDA;
  e.make = [](const MakeArgs &args, std::unique_ptr<Backend> *out) -> pg_status {
    if (args.ctx.device_index < 0) return fail(PG_ERR_INTERNAL, "nccl backend: created without a CUDA device");
    auto backend = std::make_unique<NcclBackend>(args.ctx);
    PG_CHECK(backend->init(args.ctx));
    *out = std::move(backend);
    return PG_OK;
  };
  return e;
}

}  // namespace pg::nccl
