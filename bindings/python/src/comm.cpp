// The communicator of one torch group and its strategies (process_group.h).
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include "completion.h"
#include "errors.h"
#include "process_group.h"

namespace pgstrategy_torch {

Comm::Comm(int rank, int size, const std::vector<int64_t> &ranks, std::string backend,
           std::chrono::milliseconds timeout)
    : backend_(std::move(backend)), timeout_(timeout) {
  if (ranks.empty()) {
    comm_ = MPI_COMM_WORLD;
  } else {
    int initialized = 0, world_rank = -1, world_size = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      raise("pgstrategy: a subgroup needs MPI running: make the default group with "
            "init_process_group(\"pgstrategy\") first, or initialize MPI (mpi4py) before new_group");
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    std::vector<int> members;
    for (int64_t r : ranks) {
      if (r < 0 || r >= world_size)
        raise(c10::str("pgstrategy: the subgroup names rank ", r, ", but MPI_COMM_WORLD has ", world_size,
                       " ranks: torch's global ranks must be MPI's"));
      members.push_back(static_cast<int>(r));
    }
    if (rank < 0 || rank >= static_cast<int>(members.size()) || members[rank] != world_rank)
      raise(c10::str("pgstrategy: torch puts this process at rank ", rank, " of a subgroup whose ranks are ",
                     c10::Join(", ", members), ", but it is MPI's rank ", world_rank,
                     ": torch's global ranks must be MPI's"));
    MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group);
    const int status = MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm_);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    if (status != MPI_SUCCESS) raise("pgstrategy: MPI_Comm_create_group failed for the subgroup");
  }

  // The CPU strategy now, so a bad backend name fails here. A backend that
  // serves only CUDA has none (every rank gets the same status).
  pg_strategy *cpu = nullptr;
  const pg_status st = pg_strategy_create_comm("cpu", backend_.empty() ? nullptr : backend_.c_str(), comm_, &cpu);
  if (st == PG_ERR_UNSUPPORTED) {
    no_cpu_ = pg_last_error();
  } else if (st != PG_OK) {
    const std::string message = library_error("init", st);
    close();
    raise(message);
  }
  {
    std::lock_guard<std::mutex> handles(handles_);
    cpu_ = cpu;
  }

  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(comm_, &mpi_rank);
  MPI_Comm_size(comm_, &mpi_size);
  if (mpi_rank != rank || mpi_size != size) {
    close();
    raise(c10::str("pgstrategy: torch's rank ", rank, " of ", size, " is MPI's rank ", mpi_rank, " of ", mpi_size,
                   ": start every rank in one MPI job (mpiexec, srun --mpi=pmi2) and give torch MPI's ranks"));
  }
}

Comm::~Comm() { close(); }

pg_strategy *Comm::create(const std::string &device) {
  pg_strategy *s = nullptr;
  check(pg_strategy_create_comm(device.c_str(), backend_.empty() ? nullptr : backend_.c_str(), comm_, &s),
        "init");
  return s;
}

pg_strategy *Comm::strategy(const c10::Device &device) {
  if (closed_)
    raise("pgstrategy: the process group has been shut down (destroy_process_group, or interpreter exit)");
  if (aborted_) raise("pgstrategy: the process group was aborted (ProcessGroup.abort)");
  if (device.is_cpu()) {
    if (!cpu_) raise(c10::str("pgstrategy: this group has no CPU strategy: ", no_cpu_));
    return cpu_;
  }
  if (device.is_cuda()) {
    c10::DeviceIndex index = device.index();
    if (index < 0) index = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice().index();
    if (!cuda_) {
      pg_strategy *cuda = create("cuda:" + std::to_string(index));
      std::lock_guard<std::mutex> handles(handles_);
      cuda_ = cuda;
      cuda_index_ = index;
      if (aborted_) pg_strategy_abort(cuda);  // an abort came while it was made: it is aborted too
    } else if (index != cuda_index_) {
      raise(c10::str("pgstrategy: a group runs on one GPU per process, cuda:", static_cast<int>(cuda_index_),
                     " here; got a tensor on cuda:", static_cast<int>(index)));
    }
    return cuda_;
  }
  raise(c10::str("pgstrategy: groups serve cpu and cuda tensors; got ", device));
}

void Comm::close() {
  if (closed_) return;
  closed_ = true;
  // The handle stays where abort() finds it while destroy waits for the
  // peers: an abort from another thread ends that wait (the library allows an
  // abort during a destroy). Once destroy has returned the handle is freed:
  // it leaves its slot before anything else, so a later abort() finds nothing
  // there, and after an abort that came first abort() calls the library no
  // more. An abort in the instant between destroy's return and the clear
  // below reads nothing of the freed strategy: the library looks the handle
  // up among its live strategies first and finds it gone.
  const auto destroy = [this](pg_strategy **slot) {
    pg_strategy *s = nullptr;
    {
      std::lock_guard<std::mutex> handles(handles_);
      s = *slot;
    }
    pg_strategy_destroy(s);
    std::lock_guard<std::mutex> handles(handles_);
    *slot = nullptr;
  };
  if (pool_ && pool_->in_use() > 0)
    TORCH_WARN_ONCE("pgstrategy: ", pool_->in_use(), " tensors from allocateTensor (FSDP2's staging buffers) are "
                    "still held as their group is destroyed; their memory (pg_mem_alloc) goes with the group, so "
                    "they must not be used again");
  pool_.reset();
  destroy(&cuda_);
  destroy(&cpu_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Comm::close_at_exit() {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  bool finished = true;
  for (pg_work *w : unfinished_) {
    const double left_s = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    finished = finished && pg_work_wait(w, std::max(left_s, 0.0)) != PG_ERR_TIMEOUT;
  }
  if (!finished) abort();
  pool_.reset();  // nothing uses the tensors from allocateTensor any more
  close();
}

void Comm::abort(const char *why) {
  record_error(why);
  std::lock_guard<std::mutex> handles(handles_);
  if (aborted_.exchange(true)) return;  // each handle is aborted once (a second abort does nothing)
  for (pg_strategy *s : {cpu_, cuda_})
    if (s) pg_strategy_abort(s);
}

void Comm::record_error(const std::string &message) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (error_.empty()) error_ = message;
}

std::string Comm::error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

uint64_t Comm::sequence() const {
  uint64_t total = 0;
  for (const pg_strategy *s : {cpu_, cuda_})
    if (s) total += static_cast<uint64_t>(pg_strategy_sequence(s));
  return total;
}

std::string Comm::describe(const c10::Device &device) {
  char text[2048] = "";
  check(pg_strategy_describe(strategy(device), text, sizeof text), "describe");
  return text;
}

bool Comm::any_rank_grows(bool grow) {
  // The flag in a tensor: should the wait run out, the completion thread
  // keeps it until the allreduce has finished.
  at::Tensor flag = at::full({1}, grow ? 1 : 0, at::kInt);
  const auto failed = [this](const std::string &message) {
    record_error(message);
    raise(message);
  };
  pg_work *w = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const pg_status st = pg_iallreduce(strategy(c10::Device(c10::kCPU)), flag.data_ptr(), flag.data_ptr(), 1,
                                       PG_INT32, PG_MAX, &w);
    if (st != PG_OK) failed(library_error("allocateTensor", st));
    started(w);
  }
  const auto deadline = deadline_after(timeout_);
  while (true) {
    std::unique_lock<std::mutex> lock(mutex);
    const double left_s = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    const pg_status st = pg_work_wait(w, std::clamp(left_s, 0.0, kWaitSlice_s));
    if (st != PG_ERR_TIMEOUT) {
      settled(w);
      pg_work_free(w);
      lock.unlock();
      if (st == PG_OK) return flag.item<int>() != 0;
      keep_until_exit({flag});  // a late peer may still write into it
      failed(library_error("allocateTensor", st));
    }
    if (left_s <= kWaitSlice_s) {
      lock.unlock();
      finish_later(Leftover{shared_from_this(), w, {flag}, {}});
      failed(c10::str("pgstrategy allocateTensor: the ranks did not agree within the group's timeout (",
                      static_cast<double>(timeout_.count()) / 1000.0,
                      " s): every rank of the group calls allocateTensor, in the same order"));
    }
    lock.unlock();
    std::this_thread::yield();
  }
}

at::Tensor Comm::allocate_tensor(int64_t elements, const at::TensorOptions &options) {
  // Checked before any collective: every rank asked for the same raises alike.
  const std::size_t itemsize = options.dtype().itemsize();
  if (elements < 0)
    raise(c10::str("pgstrategy allocateTensor: ", elements, " elements of ", itemsize, " bytes (",
                   options.dtype(), "): the size must not be negative"));
  if (itemsize > 0 && static_cast<uint64_t>(elements) > std::numeric_limits<std::size_t>::max() / itemsize)
    raise(c10::str("pgstrategy allocateTensor: ", elements, " elements of ", itemsize, " bytes (", options.dtype(),
                   ") are more bytes than a size_t holds (", std::numeric_limits<std::size_t>::max(), ")"));
  const std::size_t bytes = std::max<std::size_t>(static_cast<std::size_t>(elements) * itemsize, 1);
  std::shared_ptr<TensorPool> pool;
  {
    std::lock_guard<std::mutex> lock(mutex);
    strategy(c10::Device(c10::kCPU));  // raises once the group is closed or aborted
    if (!pool_) pool_ = std::make_shared<TensorPool>();
    pool = pool_;
  }
  void *buffer = pool->take(bytes);
  bool grow = false;
  try {
    grow = any_rank_grows(buffer == nullptr);
  } catch (...) {
    if (buffer) pool->put(buffer, bytes);
    throw;
  }
  if (grow) {
    if (buffer) pool->put(buffer, bytes);
    std::lock_guard<std::mutex> lock(mutex);
    const pg_status st = pg_mem_alloc(strategy(c10::Device(c10::kCPU)), bytes, &buffer);
    if (st != PG_OK) {
      TORCH_WARN_ONCE(library_error("allocateTensor", st), "; ordinary memory instead");
      return at::empty({elements}, options.device(at::kCPU));
    }
  }
  return pool->wrap(buffer, bytes, elements, options);
}

}  // namespace pgstrategy_torch
