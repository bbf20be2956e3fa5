// The torch.distributed backend "pgstrategy": a c10d::Backend whose
// collectives run on pgstrategy strategies (include/pg_strategy.h), one per
// device type of the group, on the MPI communicator of the group's ranks.
//
// Threads. A strategy is used by one thread at a time, so every call into the
// library for a group holds the group's mutex (Comm::mutex), a wait only for
// a slice at a time (another thread may have to post what the peer waits
// for): the caller's thread starts operations and waits for them; the
// completion thread (completion.h) tests, without blocking, the works whose
// futures were asked for (DDP waits on futures, never on works), fails them
// at their timeout, and finishes the works dropped before they finished.
//
// CPU tensors run as nonblocking works (pg_i*), whatever torch's async_op says:
// a nonblocking call does not match its blocking twin, so every rank must make
// the same kind of call. CUDA tensors run as blocking calls on torch's current
// stream (pg_strategy_set_stream): they are enqueued, and the work is complete
// for the host when the call returns, as NCCL's are.
#pragma once

#include <mpi.h>
#include <pg_strategy.h>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "tensor_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pgstrategy_torch {

// The communicator of one torch group and its strategies, made on first use
// of each device type (creation is collective: every rank of a torch group
// uses its devices in the same order). Shared by the backend and its works.
class Comm : public std::enable_shared_from_this<Comm> {
 public:
  // `ranks`: the group's ranks in MPI_COMM_WORLD, in group order (empty: the
  // world). `backend`: the pgstrategy backend, "" for PGS_BACKEND, then the
  // device default. Makes the CPU strategy at once, so a bad backend name or
  // a torch rank that is not MPI's fails init_process_group itself.
  Comm(int rank, int size, const std::vector<int64_t> &ranks, std::string backend,
       std::chrono::milliseconds timeout);
  ~Comm();
  Comm(const Comm &) = delete;
  Comm &operator=(const Comm &) = delete;

  // Held for every call into the library on this group's strategies.
  std::mutex mutex;

  // The strategy for `device` (under `mutex`); throws when there is none.
  pg_strategy *strategy(const c10::Device &device);
  // Whether the backend serves CPU tensors (false: a backend for CUDA only).
  bool serves_cpu() const { return no_cpu_.empty(); }
  // Destroys the strategies (collective; under `mutex`; local after abort).
  // Later calls throw.
  void close();
  // Interpreter exit (under `mutex`): waits up to the group's timeout for
  // the works not settled yet, aborts the strategies when some did not
  // finish (so that destroy waits for no peer), then closes.
  void close_at_exit();
  // pg_strategy_abort of the strategies, from any thread and without `mutex`
  // (a thread waiting for a work holds it, and so may a destroy waiting for
  // its peers): the waits end with PG_ERR_ABORTED, and `why` is the group's
  // error. The first call aborts; later ones only record. No strategy is
  // made after.
  void abort(const char *why = "pgstrategy: the group was aborted (ProcessGroup.abort)");
  // The library works started and not yet freed (under `mutex`).
  void started(pg_work *w) { unfinished_.push_back(w); }
  void settled(pg_work *w) {
    unfinished_.erase(std::remove(unfinished_.begin(), unfinished_.end(), w), unfinished_.end());
  }
  // The first failure of an operation of the group, or the abort: "" when none.
  void record_error(const std::string &message);
  std::string error() const;
  // The collectives issued on the group's strategies (under `mutex`).
  uint64_t sequence() const;
  // pg_strategy_describe of the strategy for "cpu" or "cuda" (made if needed).
  std::string describe(const c10::Device &device);
  // allocateTensor: a CPU tensor of `elements` in pg_mem_alloc memory of the
  // CPU strategy, from the group's pool (tensor_pool.h). Collective: every rank
  // calls it in the same order (FSDP2 does), and the ranks agree whether the
  // pool must grow, since each frees its tensors when it drops them. Where
  // pg_mem_alloc fails (on every rank: the node's shared memory is full), an
  // ordinary tensor, with a warning. A size whose bytes overflow raises at
  // once, before any collective.
  at::Tensor allocate_tensor(int64_t elements, const at::TensorOptions &options);

 private:
  pg_strategy *create(const std::string &device);
  // Whether any rank's pool must grow: a MAX allreduce of `grow` on the CPU
  // strategy, in the order of the group's other collectives (pg_mem_alloc,
  // which follows it, is one too). A wait like a work's: a slice at a time,
  // ended by an abort (this rank's or, PG_ERR_BACKEND, a peer's) or by the
  // group's timeout, each of which raises and is the group's error.
  bool any_rank_grows(bool grow);

  MPI_Comm comm_ = MPI_COMM_NULL;  // MPI_COMM_WORLD, or the group's own (freed at close)
  std::string backend_;
  std::chrono::milliseconds timeout_;
  std::vector<pg_work *> unfinished_;  // under `mutex`
  std::atomic<bool> aborted_{false};   // set under `handles_`
  // Written under `mutex` and `handles_`, read by abort under `handles_` alone.
  // A handle leaves its slot (under `handles_`) as soon as its destroy has
  // returned (close); abort() calls the library once per handle at most.
  pg_strategy *cpu_ = nullptr;
  std::string no_cpu_;             // why there is no CPU strategy (a CUDA-only backend)
  pg_strategy *cuda_ = nullptr;
  c10::DeviceIndex cuda_index_ = -1;
  bool closed_ = false;
  std::shared_ptr<TensorPool> pool_;
  std::mutex handles_;             // the strategy pointers, for abort
  mutable std::mutex error_mutex_;
  std::string error_;
};

// What an operation hands to the library: the call itself (w == nullptr: the
// blocking call; otherwise the nonblocking twin, storing its work in *w).
using Call = std::function<pg_status(pg_strategy *s, pg_work **w)>;

// One operation: what its future holds, what must stay alive until it has
// finished, and what to do once it has (copies out of staging buffers).
struct Operation {
  const char *name;                  // "allreduce", as in error messages
  c10d::OpType type;
  c10::Device device;
  std::chrono::milliseconds timeout;  // torch's per-call timeout, or the group's
  std::vector<at::Tensor> outputs;   // the future's value
  std::vector<at::Tensor> keep;      // inputs and staging buffers
  std::vector<std::function<void()>> finish;
};

// A wait holds the group's mutex for a slice at a time, so that another
// thread can post the operation its peer waits for (an isend for an irecv).
constexpr double kWaitSlice_s = 0.002;

// `timeout` from now; torch's timeouts may be "forever" (milliseconds::max()).
std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout);

// A started operation. wait(timeout) waits through pg_work_wait with that
// timeout (the group's when torch gives none) and raises a DistBackendError
// when it runs out; the work stays valid and can be waited for again. Its
// future is set once: with the outcome, or with a timeout at the operation's
// timeout once the future was asked for (by the completion thread, or by a
// thread waiting for the work then). Such a work too stays valid: a later
// wait or isCompleted asks the library, and once the work finishes its copies
// run; wait, isSuccess and exception then give its own outcome.
class Work final : public c10d::Work {
 public:
  // A CPU work started with the library (pending) or an operation that is
  // already complete (pending == nullptr: CUDA, or nothing to do).
  Work(std::shared_ptr<Comm> comm, pg_work *pending, Operation op, int rank);
  ~Work() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  // A finished receive's sender (recvAnysource).
  int sourceRank() const override;
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  // Tests once without blocking (the completion thread, isCompleted): true
  // once finished and its future set.
  bool poll();
  // The completion thread: past its timeout, an unfinished work's future
  // fails (the group records the error); the work itself stays valid. True
  // when it did.
  bool expire_if_overdue(std::chrono::steady_clock::time_point now);

 private:
  // What settle releases: the caller drops it after unlocking comm_->mutex, as
  // dropping the last reference to a tensor Python made takes the GIL, which
  // a Python thread may hold while it waits for comm_->mutex.
  struct Released {
    std::vector<at::Tensor> keep;
    std::vector<std::function<void()>> finish;
  };
  Released settle(pg_status st, const std::string &error);  // under comm_->mutex
  void publish();                                        // sets the future once
  // Under comm_->mutex: a watched, unfinished work past its deadline whose
  // future nobody set yet; the caller then fails it with fail_future, unlocked.
  bool claim_expiry(std::chrono::steady_clock::time_point now);
  void fail_future();

  std::shared_ptr<Comm> comm_;
  pg_work *pending_ = nullptr;  // under comm_->mutex
  Operation op_;
  // Set once, by settle (under comm_->mutex) after error_ and source_, which
  // nothing writes again: a thread that sees it set reads them without a lock.
  std::atomic<bool> finished_{false};
  std::exception_ptr error_;    // the work's own failure (settle)
  int source_ = -1;             // a finished receive's sender (settle)
  std::chrono::steady_clock::time_point deadline_;  // the future fails after it
  std::atomic<bool> published_{false};  // the future is set, or being set (once)
  std::atomic<bool> watched_{false};    // its future was asked for: it fails at the deadline
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The works issued between startCoalescing and endCoalescing, as one (torch's
// coalescing manager, batch_isend_irecv): finished when each has; its future's
// value is their outputs, in the order they were issued; wait(timeout) gives
// each that long.
class CoalescedWork final : public c10d::Work {
 public:
  // (pgstrategy_torch::Work: inside this class, Work names c10d::Work.)
  CoalescedWork(std::vector<c10::intrusive_ptr<pgstrategy_torch::Work>> works, int rank);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  bool wait(std::chrono::milliseconds timeout = ::kNoTimeout) override;
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<c10::intrusive_ptr<pgstrategy_torch::Work>> works_;
};

class ProcessGroup final : public c10d::Backend {
 public:
  ProcessGroup(int rank, int size, const std::vector<int64_t> &global_ranks, std::string backend,
               std::chrono::milliseconds timeout);
  ~ProcessGroup() override;

  const std::string getBackendName() const override { return "pgstrategy"; }
  // Subgroups from this group's communicator (MPI_Comm_create_group over the
  // members only): torch's split_group, and new_group and DeviceMesh when the
  // default group is bound to a device.
  bool supportsSplitting() const override { return true; }
  // What torch hands a split: the timeout; the pgstrategy backend is the group's own.
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options> &opts) override;
  // torch.distributed.shrink_group: a group of the ranks not excluded, made by
  // them alone (as split makes one), so an excluded rank that hangs, aborted
  // or is gone takes no part. This group is then aborted, so the destroy torch
  // does next is local; SHRINK_ABORT aborts it first, failing its works in
  // flight (a collective an excluded rank never joins).
  bool supportsShrinking() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t> &ranks_to_exclude, int shrink_flags,
                                           const c10::intrusive_ptr<c10d::Backend::Options> &opts_override) override;
  // Coalescing groups the calls between start and end into one work; each is
  // already a nonblocking work issued in order, so nothing waits to be fused.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  // torch.distributed.destroy_process_group: the strategies go now.
  void shutdown() override;
  // ProcessGroup.abort (torchft's abort): pg_strategy_abort of the group's
  // strategies from any thread; calls in flight raise, later ones too, and
  // shutdown frees what is local. The peers learn of it (docs/errors.md): their
  // calls on the group raise, naming this rank.
  void abort() override;
  // COMM_ERROR once an operation failed or the group was aborted.
  c10d::ErrorType getError() override;
  // The collectives issued on the group so far (pg_strategy_sequence, both
  // devices): the same on every rank; TORCH_DISTRIBUTED_DEBUG=DETAIL compares it.
  uint64_t getSequenceNumberForGroup() override;
  // FSDP2's staging buffers from the group (set_allocate_memory_from_process_group):
  // CPU tensors in pg_mem_alloc memory, read in place by fairring
  // (Comm::allocate_tensor). Not for a GPU (device index >= 0), nor below
  // MPI_THREAD_MULTIPLE (the level the library asks for, the only one tested).
  bool supportsTensorAlloc(c10::DeviceIndex device_index) override;
  at::Tensor allocateTensor(long size, at::TensorOptions options) override;
  // The first failure's message ("" when none): what errored() reports.
  std::string error() const { return comm_->error(); }
  std::string describe(const std::string &device);

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                     const c10d::AllreduceCoalescedOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override;
  // Every rank's list of tensors (each rank's of the same sizes), as one allgather.
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                                     std::vector<at::Tensor> &inputs,
                                                     const c10d::AllgatherOptions &opts) override;
  // FSDP2's coalesced forms: one collective over the tensors packed together.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                 std::vector<at::Tensor> &inputs,
                                                                 const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                 std::vector<at::Tensor> &inputs,
                                                                 const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                      const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &output_splits,
                                               std::vector<int64_t> &input_splits,
                                               const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src, int tag) override;
  // The work's sourceRank() names the sender (MPI_ANY_SOURCE: the mpi and fairring backends).
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

 private:
  Operation operation(const char *name, c10d::OpType type, const c10::Device &device,
                      std::chrono::milliseconds timeout) const;
  c10::intrusive_ptr<c10d::Work> launch(Operation op, const Call &call);
  // A work launch made: kept for endCoalescing while the group coalesces.
  c10::intrusive_ptr<Work> issued(c10::intrusive_ptr<Work> work);
  // send, recv and recvAnysource (`type`) of the one tensor in `tensors`, with `peer`.
  c10::intrusive_ptr<c10d::Work> point_to_point(std::vector<at::Tensor> &tensors, int peer, int tag, c10d::OpType type);

  std::shared_ptr<Comm> comm_;
  std::chrono::milliseconds timeout_;
  std::string backend_;              // the pgstrategy backend asked for ("": the default rule)
  std::vector<int64_t> world_ranks_; // this group's ranks in MPI_COMM_WORLD, in group order
  bool coalescing_ = false;          // between startCoalescing and endCoalescing
  std::vector<c10::intrusive_ptr<Work>> coalesced_;
};

// Interpreter exit (called from Python's atexit, before Python tears down):
// stops the completion thread and destroys every group's strategies, in the
// order the groups were made, the same on every rank.
void shutdown_all();

}  // namespace pgstrategy_torch
