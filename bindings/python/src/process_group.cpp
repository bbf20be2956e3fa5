#include "process_group.h"

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <algorithm>
#include <string>
#include <utility>

#include "completion.h"

namespace pgstrategy_torch {
namespace {

[[noreturn]] void raise(const std::string &message) { C10_THROW_ERROR(DistBackendError, message); }

std::exception_ptr error_of(const std::string &message) {
  try {
    raise(message);
  } catch (...) {
    return std::current_exception();
  }
}

// The library's own message, read on the thread that made the failing call.
std::string library_error(const char *what, pg_status st) {
  return c10::str("pgstrategy ", what, ": ", pg_status_name(st), ": ", pg_last_error());
}

void check(pg_status st, const char *what) {
  if (st != PG_OK) raise(library_error(what, st));
}

// torch's dtypes and the library's. bool travels as uint8 (its reductions
// below are the logical ones, as in NCCL).
struct DtypeName {
  at::ScalarType torch;
  pg_dtype pg;
};
constexpr DtypeName kDtypes[] = {
    {at::kChar, PG_INT8},        {at::kByte, PG_UINT8},    {at::kBool, PG_UINT8},
    {at::kInt, PG_INT32},        {at::kUInt32, PG_UINT32}, {at::kLong, PG_INT64},
    {at::kUInt64, PG_UINT64},    {at::kHalf, PG_FLOAT16},  {at::kBFloat16, PG_BFLOAT16},
    {at::kFloat, PG_FLOAT32},    {at::kDouble, PG_FLOAT64}};

pg_dtype dtype_of(const at::Tensor &t, const char *what) {
  for (const DtypeName &d : kDtypes)
    if (d.torch == t.scalar_type()) return d.pg;
  std::string supported;
  for (const DtypeName &d : kDtypes) supported += (supported.empty() ? "" : ", ") + std::string(c10::toString(d.torch));
  raise(c10::str("pgstrategy ", what, ": dtype ", t.scalar_type(), " is not supported; supported: ", supported));
}

pg_op op_of(const c10d::ReduceOp &op, const at::Tensor &t, const char *what) {
  const bool logical = t.scalar_type() == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return logical ? PG_MAX : PG_SUM;
    case c10d::ReduceOp::PRODUCT: return logical ? PG_MIN : PG_PROD;
    case c10d::ReduceOp::AVG: return PG_AVG;
    case c10d::ReduceOp::MIN: return PG_MIN;
    case c10d::ReduceOp::MAX: return PG_MAX;
    case c10d::ReduceOp::BAND: return PG_BAND;
    case c10d::ReduceOp::BOR: return PG_BOR;
    case c10d::ReduceOp::BXOR: return PG_BXOR;
    case c10d::ReduceOp::PREMUL_SUM:
      raise(c10::str("pgstrategy ", what, ": ReduceOp.PREMUL_SUM is not supported; scale the tensor and use SUM"));
    default: raise(c10::str("pgstrategy ", what, ": unknown ReduceOp ", static_cast<int>(op.op_)));
  }
}

// Checks a tensor the library will see: dense, on a CPU or CUDA device, of a
// dtype it has.
const at::Tensor &checked(const at::Tensor &t, const char *what) {
  if (!t.defined()) raise(c10::str("pgstrategy ", what, ": the tensor is undefined"));
  if (t.layout() != at::kStrided)
    raise(c10::str("pgstrategy ", what, ": only dense tensors are supported; got layout ", t.layout()));
  if (!t.is_cpu() && !t.is_cuda())
    raise(c10::str("pgstrategy ", what, ": tensors must be on cpu or cuda; got ", t.device()));
  dtype_of(t, what);
  return t;
}

// The output of a single-tensor form (allgather_into_tensor, ...) on the
// input's device, of its dtype: the strategy is chosen by the input's device.
void check_pair(const at::Tensor &output, const at::Tensor &input, const char *what) {
  checked(input, what);
  checked(output, what);
  if (output.scalar_type() != input.scalar_type() || output.device() != input.device())
    raise(c10::str("pgstrategy ", what, ": the output must be ", input.scalar_type(), " on ", input.device(),
                   " as the input; got ", output.scalar_type(), " on ", output.device()));
}

const at::Tensor &single(const std::vector<at::Tensor> &tensors, const char *what) {
  if (tensors.size() != 1)
    raise(c10::str("pgstrategy ", what, ": expected one tensor per rank; got ", tensors.size()));
  return checked(tensors[0], what);
}

// A list of `expected` tensors of one dtype, device and element count.
void check_list(const std::vector<at::Tensor> &parts, std::size_t expected, const at::Tensor &like,
                const char *what) {
  if (parts.size() != expected)
    raise(c10::str("pgstrategy ", what, ": expected a list of ", expected, " tensors; got ", parts.size()));
  for (const at::Tensor &p : parts) {
    checked(p, what);
    if (p.scalar_type() != like.scalar_type() || p.device() != like.device() || p.numel() != like.numel())
      raise(c10::str("pgstrategy ", what, ": every tensor of the list must match ", like.scalar_type(), " on ",
                     like.device(), " with ", like.numel(), " elements; got ", p.scalar_type(), " on ",
                     p.device(), " with ", p.numel()));
  }
}

// A list of `expected` tensors of one dtype and device, of any sizes.
void check_uneven_list(const std::vector<at::Tensor> &parts, std::size_t expected, const at::Tensor &like,
                       const char *what) {
  if (parts.size() != expected)
    raise(c10::str("pgstrategy ", what, ": expected a list of ", expected, " tensors; got ", parts.size()));
  for (const at::Tensor &p : parts) {
    checked(p, what);
    if (p.scalar_type() != like.scalar_type() || p.device() != like.device())
      raise(c10::str("pgstrategy ", what, ": every tensor of the list must be ", like.scalar_type(), " on ",
                     like.device(), "; got ", p.scalar_type(), " on ", p.device()));
  }
}

// The element counts of `parts` and where each starts once they are joined.
struct Layout {
  std::vector<std::size_t> counts, displs;
  bool even = true;  // every count the same
};

Layout layout_of(const std::vector<at::Tensor> &parts) {
  Layout l;
  std::size_t at = 0;
  for (const at::Tensor &p : parts) {
    l.counts.push_back(static_cast<std::size_t>(p.numel()));
    l.displs.push_back(at);
    at += l.counts.back();
    l.even = l.even && l.counts.back() == l.counts.front();
  }
  return l;
}

// all_to_all_single's blocks of `t`, cut along its first dimension by
// `splits` (rows per rank; empty: equal parts).
Layout split_rows(const at::Tensor &t, const std::vector<int64_t> &splits, int size, const char *side) {
  const char *what = "all_to_all_single";
  if (t.dim() == 0) raise(c10::str("pgstrategy ", what, ": the ", side, " must have a first dimension to split"));
  const int64_t rows = t.size(0), row = rows == 0 ? 0 : t.numel() / rows;
  Layout l;
  if (splits.empty()) {
    if (rows % size != 0)
      raise(c10::str("pgstrategy ", what, ": the ", side, " has ", rows, " rows, which do not split into ", size,
                     " equal parts; give ", side, "_split_sizes"));
    l.counts.assign(static_cast<std::size_t>(size), static_cast<std::size_t>(rows / size * row));
  } else {
    if (static_cast<int>(splits.size()) != size)
      raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes has ", splits.size(), " entries; expected one per rank (",
                     size, ")"));
    int64_t total = 0;
    for (std::size_t r = 0; r < splits.size(); ++r) {
      if (splits[r] < 0)
        raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes[", r, "] is ", splits[r], "; sizes are rows, >= 0"));
      total += splits[r];
      l.counts.push_back(static_cast<std::size_t>(splits[r] * row));
    }
    if (total != rows)
      raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes [", c10::Join(", ", splits), "] add up to ", total,
                     " rows; the ", side, " has ", rows));
  }
  std::size_t at = 0;
  for (std::size_t c : l.counts) {
    l.displs.push_back(at);
    at += c;
    l.even = l.even && c == l.counts.front();
  }
  return l;
}

// --- staging: what the library reads and writes for a tensor ---------------

// The tensor itself when contiguous, else a contiguous copy.
at::Tensor readable(Operation &op, const at::Tensor &t) {
  at::Tensor c = t.contiguous();
  op.keep.push_back(c);
  return c;
}

// The tensor itself when contiguous, else a contiguous copy (with its values,
// for in-place operations) that is copied back once the operation finished.
at::Tensor writable(Operation &op, const at::Tensor &t) {
  at::Tensor c = t.contiguous();
  op.keep.push_back(c);
  if (!c.is_same(t)) op.finish.push_back([t, c] { t.copy_(c); });
  return c;
}

// One contiguous buffer holding `parts` one after the other.
at::Tensor joined(Operation &op, const std::vector<at::Tensor> &parts) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor &p : parts) flat.push_back(p.reshape({-1}));
  at::Tensor c = at::cat(flat);
  op.keep.push_back(c);
  return c;
}

// Once the operation finished, `flat` is copied into `parts`, one after the other.
void copy_back(Operation &op, const at::Tensor &flat, const std::vector<at::Tensor> &parts) {
  op.finish.push_back([flat, parts] {
    int64_t offset = 0;
    for (const at::Tensor &p : parts) {
      p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  });
}

// A buffer for `parts` one after the other, copied into them once the
// operation finished.
at::Tensor split_back(Operation &op, const std::vector<at::Tensor> &parts) {
  int64_t total = 0;
  for (const at::Tensor &p : parts) total += p.numel();
  at::Tensor flat = at::empty({total}, parts.at(0).options());
  op.keep.push_back(flat);
  copy_back(op, flat, parts);
  return flat;
}

std::size_t count_of(const at::Tensor &t) { return static_cast<std::size_t>(t.numel()); }

// Live communicators in creation order, for the exit (same order on every rank).
std::mutex g_comms_mutex;
std::vector<std::weak_ptr<Comm>> g_comms;

}  // namespace

// --- Comm ------------------------------------------------------------------

Comm::Comm(int rank, int size, const std::vector<int64_t> &ranks, std::string backend)
    : backend_(std::move(backend)) {
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
  cpu_ = cpu;

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
  if (device.is_cpu()) {
    if (!cpu_) raise(c10::str("pgstrategy: this group has no CPU strategy: ", no_cpu_));
    return cpu_;
  }
  if (device.is_cuda()) {
    c10::DeviceIndex index = device.index();
    if (index < 0) index = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getDevice().index();
    if (!cuda_) {
      cuda_ = create("cuda:" + std::to_string(index));
      cuda_index_ = index;
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
  pg_strategy_destroy(cuda_);
  pg_strategy_destroy(cpu_);
  cuda_ = cpu_ = nullptr;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

std::string Comm::describe(const c10::Device &device) {
  char text[2048] = "";
  check(pg_strategy_describe(strategy(device), text, sizeof text), "describe");
  return text;
}

// --- Work ------------------------------------------------------------------

Work::Work(std::shared_ptr<Comm> comm, pg_work *pending, Operation op, int rank)
    : c10d::Work(rank, op.type), comm_(std::move(comm)), pending_(pending), op_(std::move(op)) {
  std::vector<c10::Device> devices;
  if (op_.device.is_cuda()) devices.push_back(op_.device);
  static const c10::TypePtr kTensors = c10::ListType::create(c10::TensorType::get());  // the future's type
  future_ = c10::make_intrusive<c10::ivalue::Future>(kTensors, devices);
  if (!pending_) {
    finished_ = true;
    publish();
  }
}

Work::~Work() {
  // A work dropped unfinished still owns the buffers the library uses. No
  // other thread holds this work any more, so pending_ is read unlocked.
  if (!pending_) return;
  std::lock_guard<std::mutex> lock(comm_->mutex);
  pg_work_wait(pending_, -1);
  pg_work_free(pending_);
}

Work::Released Work::settle(pg_status st, const std::string &error) {
  if (st == PG_OK) {
    try {
      for (auto &copy : op_.finish) copy();
    } catch (...) {
      error_ = std::current_exception();
    }
  } else {
    error_ = error_of(error);
  }
  pg_work_free(pending_);
  pending_ = nullptr;
  finished_ = true;
  return Released{std::move(op_.keep), std::move(op_.finish)};
}

void Work::publish() {
  if (published_.exchange(true)) return;
  if (error_)
    future_->setError(error_);
  else
    future_->markCompleted(c10::IValue(op_.outputs));
}

bool Work::poll() {
  if (published_) return true;
  Released released;  // dropped after the unlock
  {
    std::lock_guard<std::mutex> lock(comm_->mutex);
    if (!finished_) {
      int done = 0;
      const pg_status st = pg_work_test(pending_, &done);
      if (!done && st == PG_OK) return false;
      released = settle(st, st == PG_OK ? std::string() : library_error(op_.name, st));
    }
  }
  publish();
  return true;
}

bool Work::isCompleted() { return poll(); }

bool Work::isSuccess() const { return published_ && !error_; }

std::exception_ptr Work::exception() const { return error_; }

std::vector<at::Tensor> Work::result() { return op_.outputs; }

bool Work::wait(std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds limit = timeout == ::kNoTimeout ? op_.timeout : timeout;
  Released released;  // dropped after the unlock
  {
    std::unique_lock<std::mutex> lock(comm_->mutex);
    if (!finished_) {
      const double seconds = static_cast<double>(limit.count()) / 1000.0;
      const pg_status st = pg_work_wait(pending_, seconds);
      if (st == PG_ERR_TIMEOUT) {
        const std::string message =
            c10::str("pgstrategy ", op_.name, ": timed out after ", seconds, " s (", pg_last_error(),
                     "); the work stays valid: wait for it again");
        lock.unlock();
        raise(message);
      }
      released = settle(st, st == PG_OK ? std::string() : library_error(op_.name, st));
    }
  }
  publish();
  // Returns once the future is set (by this thread or the completion thread),
  // raises its error; on CUDA the caller's current stream waits for the
  // operation's stream.
  future_->waitAndThrow();
  return true;
}

// A CPU work's future is set only once someone waits for or polls the work.
void Work::synchronize() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  if (!published_) complete_later(c10::intrusive_ptr<Work>::reclaim_copy(this));
  return future_;
}

// --- ProcessGroup ------------------------------------------------------------

ProcessGroup::ProcessGroup(int rank, int size, const std::vector<int64_t> &global_ranks, std::string backend,
                           std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      comm_(std::make_shared<Comm>(rank, size, global_ranks, backend)),
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
  pg_strategy *s = comm_->strategy(op.device);
  if (!op.device.is_cuda()) {
    pg_work *w = nullptr;
    check(call(s, &w), op.name);
    lock.unlock();
    return c10::make_intrusive<Work>(comm_, w, std::move(op), rank_);
  }
  // Enqueued on torch's current stream: staging copies, the collective and
  // the copies back run in that order on it.
  const c10::Stream stream = c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA).getStream(op.device);
  check(pg_strategy_set_stream(s, stream.native_handle()), op.name);
  check(call(s, nullptr), op.name);
  for (auto &copy : op.finish) copy();
  // Memory freed now may be reused only after the stream reaches this point.
  for (at::Tensor &t : op.keep) t.record_stream(stream);
  op.finish.clear();
  op.keep.clear();
  lock.unlock();
  return c10::make_intrusive<Work>(comm_, nullptr, std::move(op), rank_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::broadcast(std::vector<at::Tensor> &tensors,
                                                       const c10d::BroadcastOptions &opts) {
  const at::Tensor &t = single(tensors, "broadcast");
  Operation op = operation("broadcast", c10d::OpType::BROADCAST, t.device(), opts.timeout);
  void *buf = writable(op, t).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  const int root = static_cast<int>(opts.rootRank);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ibroadcast(s, buf, n, dt, root, w) : pg_broadcast(s, buf, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce(std::vector<at::Tensor> &tensors,
                                                       const c10d::AllreduceOptions &opts) {
  const at::Tensor &t = single(tensors, "allreduce");
  Operation op = operation("allreduce", c10d::OpType::ALLREDUCE, t.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, t, op.name);
  void *buf = writable(op, t).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallreduce(s, buf, buf, n, dt, rop, w) : pg_allreduce(s, buf, buf, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                                                 const c10d::AllreduceCoalescedOptions &opts) {
  if (tensors.empty()) raise("pgstrategy allreduce_coalesced: no tensors");
  const at::Tensor &first = checked(tensors[0], "allreduce_coalesced");
  for (const at::Tensor &t : tensors) {
    checked(t, "allreduce_coalesced");
    if (t.scalar_type() != first.scalar_type() || t.device() != first.device())
      raise(c10::str("pgstrategy allreduce_coalesced: every tensor must be ", first.scalar_type(), " on ",
                     first.device(), "; got ", t.scalar_type(), " on ", t.device()));
  }
  Operation op = operation("allreduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, first.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, first, op.name);
  at::Tensor flat = joined(op, tensors);
  copy_back(op, flat, tensors);
  op.outputs = tensors;
  void *buf = flat.data_ptr();
  const std::size_t n = count_of(flat);
  const pg_dtype dt = dtype_of(first, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallreduce(s, buf, buf, n, dt, rop, w) : pg_allreduce(s, buf, buf, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce(std::vector<at::Tensor> &tensors,
                                                    const c10d::ReduceOptions &opts) {
  const at::Tensor &t = single(tensors, "reduce");
  Operation op = operation("reduce", c10d::OpType::REDUCE, t.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, t, op.name);
  const int root = static_cast<int>(opts.rootRank);
  void *buf = (root == rank_ ? writable(op, t) : readable(op, t)).data_ptr();
  void *recv = root == rank_ ? buf : nullptr;
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce(s, buf, recv, n, dt, rop, root, w) : pg_reduce(s, buf, recv, n, dt, rop, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                                       std::vector<at::Tensor> &inputs,
                                                       const c10d::AllgatherOptions &opts) {
  const at::Tensor &in = single(inputs, "allgather");
  if (outputs.size() != 1) raise(c10::str("pgstrategy allgather: expected one output list; got ", outputs.size()));
  // Tensors of different sizes per rank: an allgatherv into the joined list.
  check_uneven_list(outputs[0], static_cast<std::size_t>(size_), in, "allgather");
  const Layout l = layout_of(outputs[0]);
  if (l.counts[static_cast<std::size_t>(rank_)] != count_of(in))
    raise(c10::str("pgstrategy allgather: this rank's tensor has ", in.numel(), " elements but its place in the output list (",
                   rank_, ") has ", l.counts[static_cast<std::size_t>(rank_)]));
  Operation op = operation("allgather", c10d::OpType::ALLGATHER, in.device(), opts.timeout);
  const void *send = readable(op, in).data_ptr();
  void *recv = split_back(op, outputs[0]).data_ptr();
  op.outputs = outputs[0];
  const std::size_t n = count_of(in);
  const pg_dtype dt = dtype_of(in, op.name);
  if (!l.even)
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      const std::size_t *c = l.counts.data(), *d = l.displs.data();
      return w ? pg_iallgatherv(s, send, n, recv, c, d, dt, w) : pg_allgatherv(s, send, n, recv, c, d, dt);
    });
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::_allgather_base(at::Tensor &output, at::Tensor &input,
                                                             const c10d::AllgatherOptions &opts) {
  check_pair(output, input, "allgather_into_tensor");
  if (output.numel() != input.numel() * size_)
    raise(c10::str("pgstrategy allgather_into_tensor: the output must hold ", size_, " x ", input.numel(),
                   " elements; got ", output.numel()));
  Operation op = operation("allgather_into_tensor", c10d::OpType::_ALLGATHER_BASE, input.device(), opts.timeout);
  void *recv = writable(op, output).data_ptr();
  const void *send = readable(op, input).data_ptr();
  op.outputs = {output};
  const std::size_t n = count_of(input);
  const pg_dtype dt = dtype_of(input, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, send, recv, n, dt, w) : pg_allgather(s, send, recv, n, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce_scatter(std::vector<at::Tensor> &outputs,
                                                            std::vector<std::vector<at::Tensor>> &inputs,
                                                            const c10d::ReduceScatterOptions &opts) {
  const at::Tensor &out = single(outputs, "reduce_scatter");
  if (inputs.size() != 1) raise(c10::str("pgstrategy reduce_scatter: expected one input list; got ", inputs.size()));
  // Tensors of different sizes per rank: a reduce_scatterv of the joined list.
  check_uneven_list(inputs[0], static_cast<std::size_t>(size_), out, "reduce_scatter");
  const Layout l = layout_of(inputs[0]);
  if (l.counts[static_cast<std::size_t>(rank_)] != count_of(out))
    raise(c10::str("pgstrategy reduce_scatter: the output has ", out.numel(), " elements but this rank's place in the input list (",
                   rank_, ") has ", l.counts[static_cast<std::size_t>(rank_)]));
  Operation op = operation("reduce_scatter", c10d::OpType::REDUCE_SCATTER, out.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, out, op.name);
  const void *send = joined(op, inputs[0]).data_ptr();
  void *recv = writable(op, out).data_ptr();
  op.outputs = {out};
  const std::size_t n = count_of(out);
  const pg_dtype dt = dtype_of(out, op.name);
  if (!l.even)
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      const std::size_t *c = l.counts.data();
      return w ? pg_ireduce_scatterv(s, send, recv, c, dt, rop, w) : pg_reduce_scatterv(s, send, recv, c, dt, rop);
    });
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, send, recv, n, dt, rop, w) : pg_reduce_scatter(s, send, recv, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                                  const c10d::ReduceScatterOptions &opts) {
  check_pair(output, input, "reduce_scatter_tensor");
  if (input.numel() != output.numel() * size_)
    raise(c10::str("pgstrategy reduce_scatter_tensor: the input must hold ", size_, " x ", output.numel(),
                   " elements; got ", input.numel()));
  Operation op = operation("reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, output.device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, output, op.name);
  const void *send = readable(op, input).data_ptr();
  void *recv = writable(op, output).data_ptr();
  op.outputs = {output};
  const std::size_t n = count_of(output);
  const pg_dtype dt = dtype_of(output, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, send, recv, n, dt, rop, w) : pg_reduce_scatter(s, send, recv, n, dt, rop);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::alltoall_base(at::Tensor &output, at::Tensor &input,
                                                           std::vector<int64_t> &output_splits,
                                                           std::vector<int64_t> &input_splits,
                                                           const c10d::AllToAllOptions &opts) {
  check_pair(output, input, "all_to_all_single");
  const Layout in = split_rows(input, input_splits, size_, "input");
  const Layout out = split_rows(output, output_splits, size_, "output");
  Operation op = operation("all_to_all_single", c10d::OpType::ALLTOALL_BASE, input.device(), opts.timeout);
  const void *send = readable(op, input).data_ptr();
  void *recv = writable(op, output).data_ptr();
  op.outputs = {output};
  const pg_dtype dt = dtype_of(input, op.name);
  if (in.even && out.even && in.counts[0] == out.counts[0]) {
    const std::size_t n = in.counts[0];
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      return w ? pg_ialltoall(s, send, recv, n, dt, w) : pg_alltoall(s, send, recv, n, dt);
    });
  }
  // Uneven splits (expert dispatch): the library's alltoallv.
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    const std::size_t *sc = in.counts.data(), *sd = in.displs.data(), *rc = out.counts.data(), *rd = out.displs.data();
    return w ? pg_ialltoallv(s, send, sc, sd, recv, rc, rd, dt, w) : pg_alltoallv(s, send, sc, sd, recv, rc, rd, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::alltoall(std::vector<at::Tensor> &outputs,
                                                      std::vector<at::Tensor> &inputs,
                                                      const c10d::AllToAllOptions &opts) {
  if (inputs.empty()) raise("pgstrategy all_to_all: no input tensors");
  const at::Tensor &like = checked(inputs[0], "all_to_all");
  check_uneven_list(inputs, static_cast<std::size_t>(size_), like, "all_to_all");
  check_uneven_list(outputs, static_cast<std::size_t>(size_), like, "all_to_all");
  const Layout in = layout_of(inputs), out = layout_of(outputs);
  Operation op = operation("all_to_all", c10d::OpType::ALLTOALL, like.device(), opts.timeout);
  const void *send = joined(op, inputs).data_ptr();
  void *recv = split_back(op, outputs).data_ptr();
  op.outputs = outputs;
  const pg_dtype dt = dtype_of(like, op.name);
  if (in.even && out.even && in.counts[0] == out.counts[0]) {
    const std::size_t n = count_of(like);
    return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
      return w ? pg_ialltoall(s, send, recv, n, dt, w) : pg_alltoall(s, send, recv, n, dt);
    });
  }
  // Tensors of different sizes: the library's alltoallv over the joined lists.
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    const std::size_t *sc = in.counts.data(), *sd = in.displs.data(), *rc = out.counts.data(), *rd = out.displs.data();
    return w ? pg_ialltoallv(s, send, sc, sd, recv, rc, rd, dt, w) : pg_alltoallv(s, send, sc, sd, recv, rc, rd, dt);
  });
}

namespace {

// The tensors of a coalesced call: pairs of one dtype and device, the output
// `ratio` times the input (allgather) or the input `ratio` times the output
// (reduce_scatter).
void check_coalesced(const std::vector<at::Tensor> &outputs, const std::vector<at::Tensor> &inputs, int64_t out_per_in,
                     int64_t in_per_out, const char *what) {
  if (inputs.empty() || inputs.size() != outputs.size())
    raise(c10::str("pgstrategy ", what, ": expected as many outputs as inputs, at least one; got ", outputs.size(),
                   " and ", inputs.size()));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    check_pair(outputs[k], inputs[k], what);
    if (inputs[k].scalar_type() != inputs[0].scalar_type() || inputs[k].device() != inputs[0].device())
      raise(c10::str("pgstrategy ", what, ": every tensor must be ", inputs[0].scalar_type(), " on ", inputs[0].device(),
                     "; tensor ", k, " is ", inputs[k].scalar_type(), " on ", inputs[k].device()));
    if (outputs[k].numel() * in_per_out != inputs[k].numel() * out_per_in)
      raise(c10::str("pgstrategy ", what, ": tensor ", k, ": the ", out_per_in > 1 ? "output" : "input", " must hold ",
                     out_per_in > 1 ? out_per_in : in_per_out, " x ", out_per_in > 1 ? inputs[k].numel() : outputs[k].numel(),
                     " elements; got ", out_per_in > 1 ? outputs[k].numel() : inputs[k].numel()));
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroup::allgather_into_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                             std::vector<at::Tensor> &inputs,
                                                                             const c10d::AllgatherOptions &opts) {
  const char *what = "allgather_into_tensor_coalesced";
  check_coalesced(outputs, inputs, size_, 1, what);
  if (inputs.size() == 1) return _allgather_base(outputs[0], inputs[0], opts);
  // The inputs joined (N elements), one allgather of N per rank, then rank
  // r's piece of each input to its place in that input's output.
  Operation op = operation(what, c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, inputs[0].device(), opts.timeout);
  at::Tensor send = joined(op, inputs);
  const int64_t n = send.numel(), p = size_;
  at::Tensor all = at::empty({p * n}, send.options());
  op.keep.push_back(all);
  op.outputs = outputs;
  std::vector<int64_t> sizes;
  for (const at::Tensor &t : inputs) sizes.push_back(t.numel());
  op.finish.push_back([all, outputs, sizes, n, p] {
    const at::Tensor by_rank = all.view({p, n});
    int64_t at = 0;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      outputs[k].copy_(by_rank.narrow(1, at, sizes[k]).reshape(outputs[k].sizes()));
      at += sizes[k];
    }
  });
  const void *sb = send.data_ptr();
  void *rb = all.data_ptr();
  const pg_dtype dt = dtype_of(inputs[0], what);
  const std::size_t count = static_cast<std::size_t>(n);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iallgather(s, sb, rb, count, dt, w) : pg_allgather(s, sb, rb, count, dt);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce_scatter_tensor_coalesced(std::vector<at::Tensor> &outputs,
                                                                             std::vector<at::Tensor> &inputs,
                                                                             const c10d::ReduceScatterOptions &opts) {
  const char *what = "reduce_scatter_tensor_coalesced";
  check_coalesced(outputs, inputs, 1, size_, what);
  if (inputs.size() == 1) return _reduce_scatter_base(outputs[0], inputs[0], opts);
  // Rank r's block of every input, joined, for r in rank order (M elements
  // per rank); one reduce_scatter of M; then this rank's M to the outputs.
  Operation op = operation(what, c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, inputs[0].device(), opts.timeout);
  const pg_op rop = op_of(opts.reduceOp, inputs[0], what);
  std::vector<int64_t> sizes;
  std::vector<at::Tensor> blocks;
  int64_t m = 0;
  for (const at::Tensor &t : outputs) {
    sizes.push_back(t.numel());
    m += t.numel();
  }
  for (int64_t r = 0; r < size_; ++r)
    for (std::size_t k = 0; k < inputs.size(); ++k) blocks.push_back(inputs[k].reshape({-1}).narrow(0, r * sizes[k], sizes[k]));
  at::Tensor send = at::cat(blocks);
  at::Tensor mine = at::empty({m}, send.options());
  op.keep.push_back(send);
  op.keep.push_back(mine);
  op.outputs = outputs;
  op.finish.push_back([mine, outputs, sizes] {
    int64_t at = 0;
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      outputs[k].copy_(mine.narrow(0, at, sizes[k]).view(outputs[k].sizes()));
      at += sizes[k];
    }
  });
  const void *sb = send.data_ptr();
  void *rb = mine.data_ptr();
  const pg_dtype dt = dtype_of(inputs[0], what);
  const std::size_t count = static_cast<std::size_t>(m);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_ireduce_scatter(s, sb, rb, count, dt, rop, w) : pg_reduce_scatter(s, sb, rb, count, dt, rop);
  });
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
  if (mine < 0) raise(c10::str("pgstrategy split: this rank (", rank_, ") is not among the members"));
  const std::chrono::milliseconds timeout = opts ? opts->timeout : timeout_;
  return c10::make_intrusive<ProcessGroup>(mine, static_cast<int>(ranks.size()), world, backend_, timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::gather(std::vector<std::vector<at::Tensor>> &outputs,
                                                    std::vector<at::Tensor> &inputs,
                                                    const c10d::GatherOptions &opts) {
  const at::Tensor &in = single(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  Operation op = operation("gather", c10d::OpType::GATHER, in.device(), opts.timeout);
  void *recv = nullptr;
  if (root == rank_) {
    if (outputs.size() != 1) raise(c10::str("pgstrategy gather: the root expects one output list; got ", outputs.size()));
    check_list(outputs[0], static_cast<std::size_t>(size_), in, "gather");
    recv = split_back(op, outputs[0]).data_ptr();
    op.outputs = outputs[0];
  } else if (!outputs.empty() && !outputs[0].empty()) {
    raise(c10::str("pgstrategy gather: only the root (rank ", root, ") takes an output list"));
  }
  const void *send = readable(op, in).data_ptr();
  const std::size_t n = count_of(in);
  const pg_dtype dt = dtype_of(in, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_igather(s, send, recv, n, dt, root, w) : pg_gather(s, send, recv, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::scatter(std::vector<at::Tensor> &outputs,
                                                     std::vector<std::vector<at::Tensor>> &inputs,
                                                     const c10d::ScatterOptions &opts) {
  const at::Tensor &out = single(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  Operation op = operation("scatter", c10d::OpType::SCATTER, out.device(), opts.timeout);
  const void *send = nullptr;
  if (root == rank_) {
    if (inputs.size() != 1) raise(c10::str("pgstrategy scatter: the root expects one input list; got ", inputs.size()));
    check_list(inputs[0], static_cast<std::size_t>(size_), out, "scatter");
    send = joined(op, inputs[0]).data_ptr();
  } else if (!inputs.empty() && !inputs[0].empty()) {
    raise(c10::str("pgstrategy scatter: only the root (rank ", root, ") takes an input list"));
  }
  void *recv = writable(op, out).data_ptr();
  op.outputs = {out};
  const std::size_t n = count_of(out);
  const pg_dtype dt = dtype_of(out, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_iscatter(s, send, recv, n, dt, root, w) : pg_scatter(s, send, recv, n, dt, root);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::send(std::vector<at::Tensor> &tensors, int dst, int tag) {
  const at::Tensor &t = single(tensors, "send");
  Operation op = operation("send", c10d::OpType::SEND, t.device(), c10d::kUnsetTimeout);
  const void *buf = readable(op, t).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_isend(s, buf, n, dt, dst, tag, w) : pg_send(s, buf, n, dt, dst, tag);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::recv(std::vector<at::Tensor> &tensors, int src, int tag) {
  const at::Tensor &t = single(tensors, "recv");
  Operation op = operation("recv", c10d::OpType::RECV, t.device(), c10d::kUnsetTimeout);
  void *buf = writable(op, t).data_ptr();
  op.outputs = {t};
  const std::size_t n = count_of(t);
  const pg_dtype dt = dtype_of(t, op.name);
  return launch(std::move(op), [=](pg_strategy *s, pg_work **w) {
    return w ? pg_irecv(s, buf, n, dt, src, tag, w) : pg_recv(s, buf, n, dt, src, tag);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::barrier(const c10d::BarrierOptions &opts) {
  // A host-side barrier: on the CPU strategy, or on the GPU's for a backend
  // that serves only CUDA.
  const c10::Device device(comm_->serves_cpu() ? c10::DeviceType::CPU : c10::DeviceType::CUDA);
  Operation op = operation("barrier", c10d::OpType::BARRIER, device, opts.timeout);
  return launch(std::move(op), [](pg_strategy *s, pg_work **w) { return w ? pg_ibarrier(s, w) : pg_barrier(s); });
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
    comm->close();
  }
}

}  // namespace pgstrategy_torch
