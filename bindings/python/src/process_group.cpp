// The group itself (process_group.h): its life, its subgroups, and how an
// operation runs (launch). The collectives: collectives.cpp and
// collectives_uneven.cpp; the communicator: comm.cpp; works: work.cpp.
#include "process_group.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <string>
#include <utility>

#include "completion.h"
#include "errors.h"

namespace pgstrategy_torch {
namespace {

// Live communicators in creation order, for the exit (same order on every rank).
std::mutex g_comms_mutex;
std::vector<std::weak_ptr<Comm>> g_comms;

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, const std::vector<int64_t> &global_ranks, std::string backend,
                           std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      comm_(std::make_shared<Comm>(rank, size, global_ranks, backend, timeout)),
      timeout_(timeout),
      backend_(std::move(backend)),
      world_ranks_(global_ranks) {
  if (world_ranks_.empty())
    for (int r = 0; r < size; ++r) world_ranks_.push_back(r);
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  g_comms.erase(std::remove_if(g_comms.begin(), g_comms.end(), [](const auto &c) { return c.expired(); }),
                g_comms.end());
  g_comms.push_back(comm_);
}

ProcessGroup::~ProcessGroup() { shutdown(); }

void ProcessGroup::shutdown() {
  std::lock_guard<std::mutex> lock(comm_->mutex);
  comm_->close();
}

void ProcessGroup::abort() { comm_->abort(); }

c10d::ErrorType ProcessGroup::getError() {
  return comm_->error().empty() ? c10d::ErrorType::SUCCESS : c10d::ErrorType::COMM_ERROR;
}

uint64_t ProcessGroup::getSequenceNumberForGroup() {
  std::lock_guard<std::mutex> lock(comm_->mutex);
  return comm_->sequence();
}

bool ProcessGroup::supportsTensorAlloc(c10::DeviceIndex device_index) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return device_index < 0 && comm_->serves_cpu() && level == MPI_THREAD_MULTIPLE;
}

at::Tensor ProcessGroup::allocateTensor(long size, at::TensorOptions options) {
  if (options.device().is_cuda()) return at::empty({size}, options);  // (a CUDA device without an index)
  return comm_->allocate_tensor(size, options);
}

std::string ProcessGroup::describe(const std::string &device) {
  std::lock_guard<std::mutex> lock(comm_->mutex);
  return comm_->describe(c10::Device(device));
}

Operation ProcessGroup::operation(const char *name, c10d::OpType type, const c10::Device &device,
                                  std::chrono::milliseconds timeout) const {
  return Operation{name, type, device, timeout.count() >= 0 ? timeout : timeout_, {}, {}, {}};
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::launch(Operation op, const Call &call) {
  std::unique_lock<std::mutex> lock(comm_->mutex);
  // A call refused at its start (a peer's failure, the abort) is the group's
  // error too: errored() reports it.
  const auto started = [&](pg_status st) {
    if (st == PG_OK) return;
    const std::string message = library_error(op.name, st);
    comm_->record_error(message);
    raise(message);
  };
  pg_strategy *s = comm_->strategy(op.device);
  if (!op.device.is_cuda()) {
    pg_work *w = nullptr;
    started(call(s, &w));
    if (w) comm_->started(w);
    lock.unlock();
    return issued(c10::make_intrusive<Work>(comm_, w, std::move(op), rank_));
  }
  // Enqueued on torch's current stream: staging copies, the collective and
  // the copies back run in that order on it.
  const c10::Stream stream = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(op.device);
  check(pg_strategy_set_stream(s, stream.native_handle()), op.name);
  started(call(s, nullptr));
  for (auto &copy : op.finish) copy();
  // Memory freed now may be reused only after the stream reaches this point.
  for (at::Tensor &t : op.keep) t.record_stream(stream);
  op.finish.clear();
  op.keep.clear();
  lock.unlock();
  return issued(c10::make_intrusive<Work>(comm_, nullptr, std::move(op), rank_));
}

c10::intrusive_ptr<Work> ProcessGroup::issued(c10::intrusive_ptr<Work> work) {
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroup::startCoalescing() {
  if (coalescing_) raise("pgstrategy: startCoalescing while this group is coalescing already");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::endCoalescing() {
  if (!coalescing_) raise("pgstrategy: endCoalescing without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(std::move(coalesced_), rank_);
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroup::getBackendOptions() {
  auto options = c10::make_intrusive<c10d::Backend::Options>(getBackendName(), timeout_);
  for (int64_t r : world_ranks_) options->global_ranks_in_group.push_back(static_cast<uint64_t>(r));
  return options;
}

c10::intrusive_ptr<c10d::Backend> ProcessGroup::split(const c10::intrusive_ptr<c10d::Store> &,
                                                      const std::vector<int> &ranks,
                                                      const c10::intrusive_ptr<c10d::Backend::Options> &opts) {
  // `ranks`: members, as ranks of this group; the subgroup's rank is this
  // rank's place among them.
  std::vector<int64_t> world;
  int mine = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_)
      raise(c10::str("pgstrategy split: rank ", ranks[i], " is not in this group of ", size_));
    if (ranks[i] == rank_) mine = static_cast<int>(i);
    world.push_back(world_ranks_[static_cast<std::size_t>(ranks[i])]);
  }
  // Not a member: torch's NON_GROUP_MEMBER (the members' communicator needs no part of it).
  if (mine < 0) return nullptr;
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  return c10::make_intrusive<ProcessGroup>(mine, static_cast<int>(ranks.size()), world, backend_, timeout);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroup::shrink(const std::vector<int64_t> &ranks_to_exclude,
                                                       int shrink_flags,
                                                       const c10::intrusive_ptr<c10d::Backend::Options> &opts_override) {
  constexpr int kShrinkAbort = 0x01;  // torch.distributed.SHRINK_ABORT
  std::vector<int> survivors;
  for (int r = 0; r < size_; ++r)
    if (std::find(ranks_to_exclude.begin(), ranks_to_exclude.end(), r) == ranks_to_exclude.end())
      survivors.push_back(r);
  if (std::find(survivors.begin(), survivors.end(), rank_) == survivors.end())
    raise(c10::str("pgstrategy shrink: rank ", rank_, " is excluded; only the ranks that remain call shrink_group"));
  const char *why = "pgstrategy: the group was shrunk (shrink_group); use the group it returned";
  if (shrink_flags & kShrinkAbort) comm_->abort(why);
  c10::intrusive_ptr<c10d::Backend> shrunk = split(nullptr, survivors, opts_override);
  comm_->abort(why);
  return shrunk;
}

void shutdown_all() {
  stop_completion();
  std::vector<std::shared_ptr<Comm>> live;
  {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    for (auto &weak : g_comms)
      if (auto comm = weak.lock()) live.push_back(std::move(comm));
    g_comms.clear();
  }
  for (auto &comm : live) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->close_at_exit();
  }
}

}  // namespace pgstrategy_torch
