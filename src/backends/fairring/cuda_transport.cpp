// The CUDA node transport (node_transport.h) of the hierarchical allreduce.
//
// Slice t of the node (slot s = t mod W, W = PGS_FAIRRING_INFLIGHT) is cut
// into G parts, part l belonging to local rank l, and moves through four
// streams of this rank's GPU, ordered by CUDA events; the host only enqueues
// and polls:
//
//   publish   [reduce-scatter stream] ncclReduceScatter of the slice: part l,
//             summed over the node, lands in its own place in the receive
//             buffer ("the part"). An operation's first slice first waits for
//             its inputs (an event recorded on the user's stream, or on the
//             legacy default stream, when the operation began).
//             [device-to-host stream] the part into pinned slot s, after the
//             reduce-scatter and after slot s's previous copy back (slice t - W).
//   reduce    done when that copy has finished: slot s is the shard the
//             rail's MPI allreduce runs on (then PG_AVG's division, on the host).
//   finished  [host-to-device stream] slot s back into the part.
//   gather    [all-gather stream] ncclAllGather of the slice in place, after
//             the copy back.
//   released  the operation's last all-gather has finished.
//
// Slot s is published again (slice t + W) only once slice t's copy back is
// enqueued, and its device-to-host copy waits for that copy on the GPU. With a
// CUDA-aware MPI the rail runs on the part in device memory and neither copy
// is made, except where MPI could not reduce device memory: PG_AVG (divided
// on the host) and the pairs the library combines with user-defined MPI
// operations (mpi::host_combine).
//
// Reduce-scatter and all-gather go to two NCCL communicators of the node (two
// `nccl` instances from the factory, each enqueueing on its own stream), so
// each communicator sees its operations in slice order on every rank,
// whatever order the host's polling interleaves them in. A slice whose count
// does not split into G equal parts (only an operation's last: plans cut
// slices to multiples of G) takes one ncclReduce and one ncclBroadcast per part.
//
// Lifetime: everything on the GPU belongs to `Gpu`, freed in reverse order of
// creation, on the transport's device, after its streams have drained.
#include "backends/fairring/cuda_transport.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "core/selection.h"
#include "cuda/check.h"
#include "mpi/agree.h"
#include "mpi/cuda_aware.h"
#include "mpi/types.h"
#include "topology/layout.h"
#include "util/log.h"
#include "util/status.h"

namespace pg::fairring {
namespace {

// A CUDA object freed with `Free` when its owner goes.
template <typename T, cudaError_t (*Free)(T)>
class Owned {
 public:
  Owned() = default;
  Owned(Owned &&other) noexcept : value_(std::exchange(other.value_, nullptr)) {}
  Owned &operator=(Owned &&) = delete;
  ~Owned() {
    if (value_) Free(value_);
  }
  T get() const { return value_; }
  T *out() { return &value_; }

 private:
  T value_ = nullptr;
};
using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
using Event = Owned<cudaEvent_t, cudaEventDestroy>;
using Pinned = Owned<void *, cudaFreeHost>;

pg_status create_event(Event *event) {
  PG_CUDA_CHECK(cudaEventCreateWithFlags(event->out(), cudaEventDisableTiming));
  return PG_OK;
}

class CudaTransport final : public NodeTransport {
 public:
  CudaTransport(const pg_backend_context &ctx, std::size_t slice_bytes, int slots)
      : device_(ctx.device_index),
        local_(ctx.local_rank),
        local_size_(ctx.local_size),
        slots_(slots),
        slice_bytes_(slice_bytes),
        user_stream_(static_cast<cudaStream_t>(ctx.stream)),
        cuda_aware_(mpi::cuda_aware()),
        gpu_(std::make_unique<Gpu>()) {}

  ~CudaTransport() override {
    cuda::DeviceGuard guard(device_);
    for (cudaStream_t s : {gpu_->rs.get(), gpu_->d2h.get(), gpu_->h2d.get(), gpu_->ag.get()})
      if (s) cudaStreamSynchronize(s);
    gpu_.reset();
  }

  // This rank's part of creation: streams, events and pinned slots.
  pg_status prepare() {
    PG_CUDA_DEVICE_GUARD(guard, device_);
    for (Stream *s : {&gpu_->rs, &gpu_->d2h, &gpu_->h2d, &gpu_->ag})
      PG_CUDA_CHECK(cudaStreamCreateWithFlags(s->out(), cudaStreamNonBlocking));
    // A part of a slice: at most ceil(elements / G) elements of up to 8 bytes.
    const std::size_t part_bytes = slice_bytes_ / static_cast<std::size_t>(local_size_) + 8;
    gpu_->slots.reserve(static_cast<std::size_t>(slots_));
    for (int i = 0; i < slots_; ++i) {
      gpu_->slots.emplace_back();
      Slot &slot = gpu_->slots.back();
      PG_CUDA_CHECK(cudaHostAlloc(slot.host.out(), part_bytes, cudaHostAllocDefault));
      PG_CHECK(create_event(&slot.reduced));
      PG_CHECK(create_event(&slot.copied_out));
      PG_CHECK(create_event(&slot.copied_in));
    }
    return PG_OK;
  }

  // The node's two NCCL communicators (collective over the node, agreed).
  pg_status connect(const pg_backend_context &ctx, const InstanceEnv &env) {
    const topology::Layout node = topology::single_node_layout(ctx.node_comm);
    InstanceEnv on_stream = env;
    const char *gpu_default = default_backend(Device{true, -1});  // NCCL
    on_stream.stream = gpu_->rs.get();
    PG_CHECK(make_instance(gpu_default, ctx.node_comm, node, on_stream, &gpu_->reduce_scatter));
    on_stream.stream = gpu_->ag.get();
    PG_CHECK(make_instance(gpu_default, ctx.node_comm, node, on_stream, &gpu_->all_gather));
    PG_LOG(debug, "fairring: CUDA transport on cuda:%d, %d slots of %zu bytes, rails on %s", device_, slots_,
           slice_bytes_, cuda_aware_ ? "device memory (CUDA-aware MPI)" : "pinned host memory");
    return PG_OK;
  }

  std::size_t slot_bytes() const override { return slice_bytes_; }

  pg_status begin(const Plan &plan) override {
    PG_CUDA_DEVICE_GUARD(guard, device_);
    Begun b;
    b.tick = plan.first_tick;
    PG_CHECK(create_event(&b.inputs));
    PG_CUDA_CHECK(cudaEventRecord(b.inputs.get(), user_stream_ ? user_stream_ : cudaStreamLegacy));
    gpu_->begun.push_back(std::move(b));
    return PG_OK;
  }

  pg_status publish(const Plan &plan, std::size_t k, bool *done) override {
    const std::uint64_t t = plan.first_tick + k;
    *done = false;
    // Slot t mod W is free once slice t - W's copy back is enqueued.
    if (t >= finished_ticks_ + static_cast<std::uint64_t>(slots_)) return PG_OK;
    PG_CUDA_DEVICE_GUARD(guard, device_);
    Slot &slot = slot_of(t);
    if (k == 0) {
      // Operations begin and publish in the same order.
      if (gpu_->begun.empty() || gpu_->begun.front().tick != plan.first_tick)
        return pg::fail(PG_ERR_INTERNAL, "fairring: operation at slice %llu published before it began",
                    static_cast<unsigned long long>(t));
      PG_CUDA_CHECK(cudaStreamWaitEvent(gpu_->rs.get(), gpu_->begun.front().inputs.get(), 0));
      gpu_->begun.pop_front();
    }
    PG_CHECK(reduce_scatter(plan, k, &slot.reducing));
    if (staged(plan)) {
      cudaStream_t d2h = gpu_->d2h.get();
      PG_CUDA_CHECK(cudaEventRecord(slot.reduced.get(), gpu_->rs.get()));
      PG_CUDA_CHECK(cudaStreamWaitEvent(d2h, slot.reduced.get(), 0));
      PG_CUDA_CHECK(cudaStreamWaitEvent(d2h, slot.copied_in.get(), 0));
      if (const std::size_t bytes = part_bytes(plan, k))
        PG_CUDA_CHECK(cudaMemcpyAsync(slot.host.get(), part(plan, k), bytes, cudaMemcpyDeviceToHost, d2h));
      PG_CUDA_CHECK(cudaEventRecord(slot.copied_out.get(), d2h));
    }
    *done = true;
    return PG_OK;
  }

  pg_status reduce(const Plan &plan, std::size_t k, char **shard, bool *done) override {
    const std::uint64_t t = plan.first_tick + k;
    *done = false;
    PG_CUDA_DEVICE_GUARD(guard, device_);
    Slot &slot = slot_of(t);
    bool reduced = !slot.reducing;
    if (slot.reducing) PG_CHECK(slot.reducing->test(&reduced));  // NCCL's asynchronous errors surface here
    if (!reduced) return PG_OK;
    if (staged(plan)) {
      const cudaError_t copied = cudaEventQuery(slot.copied_out.get());
      if (copied == cudaErrorNotReady) return PG_OK;
      PG_CUDA_CHECK(copied);
      *shard = static_cast<char *>(slot.host.get());
    } else {
      *shard = part(plan, k);
    }
    slot.reducing.reset();
    *done = true;
    return PG_OK;
  }

  pg_status finished(const Plan &plan, std::size_t k) override {
    const std::uint64_t t = plan.first_tick + k;
    if (staged(plan)) {
      PG_CUDA_DEVICE_GUARD(guard, device_);
      Slot &slot = slot_of(t);
      cudaStream_t h2d = gpu_->h2d.get();
      if (const std::size_t bytes = part_bytes(plan, k))
        PG_CUDA_CHECK(cudaMemcpyAsync(part(plan, k), slot.host.get(), bytes, cudaMemcpyHostToDevice, h2d));
      PG_CUDA_CHECK(cudaEventRecord(slot.copied_in.get(), h2d));
    }
    finished_ticks_ = t + 1;
    return PG_OK;
  }

  pg_status gather(const Plan &plan, std::size_t k, bool *done) override {
    const std::uint64_t t = plan.first_tick + k;
    *done = false;
    PG_CUDA_DEVICE_GUARD(guard, device_);
    // Unstaged, the rail's MPI call has finished writing the part (the host saw it).
    if (staged(plan)) PG_CUDA_CHECK(cudaStreamWaitEvent(gpu_->ag.get(), slot_of(t).copied_in.get(), 0));
    std::unique_ptr<Request> gathering;
    PG_CHECK(all_gather(plan, k, &gathering));
    if (k + 1 == plan.slices) gpu_->ending.push_back({t, std::move(gathering)});
    *done = true;
    return PG_OK;
  }

  pg_status released(const Plan &plan, bool *done) override {
    const std::uint64_t last = plan.first_tick + plan.slices - 1;
    *done = false;
    auto &ending = gpu_->ending;
    for (auto it = ending.begin(); it != ending.end(); ++it) {
      if (it->last_tick != last) continue;
      PG_CUDA_DEVICE_GUARD(guard, device_);
      bool gathered = false;
      PG_CHECK(it->gathering->test(&gathered));
      if (gathered) {
        ending.erase(it);
        *done = true;
      }
      return PG_OK;
    }
    return pg::fail(PG_ERR_INTERNAL, "fairring: operation ending at slice %llu released before its last all-gather",
                static_cast<unsigned long long>(last));
  }

  void set_stream(void *stream) override { user_stream_ = static_cast<cudaStream_t>(stream); }

  // The node's NCCL kernels of this rank stop, so its streams drain; peers
  // that wait for it in NCCL see their communicator fail (over a network) or
  // wait for PGS_TIMEOUT's watchdog (docs/algorithms.md).
  void fail() override {
    failed_ = true;
    abort();
  }
  bool failed() const override { return failed_; }

  void abort() override {
    if (gpu_->reduce_scatter) gpu_->reduce_scatter->backend->abort();
    if (gpu_->all_gather) gpu_->all_gather->backend->abort();
  }

 private:
  struct Slot {
    Pinned host;            // the part on its way through the rail (staged)
    Event reduced;          // after the slice's reduce-scatter (reduce-scatter stream)
    Event copied_out;       // after the part's copy into `host` (device-to-host stream)
    Event copied_in;        // after the copy back: `host` is free (host-to-device stream)
    std::unique_ptr<Request> reducing;  // the slice's (last) reduce-scatter operation
  };
  // An operation that began: its inputs are ready at `inputs`.
  struct Begun {
    std::uint64_t tick = 0;
    Event inputs;
  };
  // An operation whose last all-gather is enqueued.
  struct Ending {
    std::uint64_t last_tick;
    std::unique_ptr<Request> gathering;
  };
  // What lives on the GPU, in order of creation (freed in reverse).
  struct Gpu {
    Stream rs, d2h, h2d, ag;
    std::vector<Slot> slots;
    std::unique_ptr<Instance> reduce_scatter, all_gather;  // nccl on the node, on `rs` and `ag`
    std::deque<Begun> begun;
    std::vector<Ending> ending;
  };

  Slot &slot_of(std::uint64_t tick) { return gpu_->slots[tick % static_cast<std::uint64_t>(slots_)]; }

  // Whether the rail runs on pinned host memory rather than on the part itself.
  bool staged(const Plan &plan) const {
    return !cuda_aware_ || plan.args.op == PG_AVG || mpi::host_combine(plan.args.dtype, plan.args.op);
  }

  // This rank's part of slice k, in the receive buffer, and its size.
  char *part(const Plan &plan, std::size_t k) const {
    return plan.recv() + plan.piece_offset(k, local_, 0) * plan.esize;
  }
  std::size_t part_bytes(const Plan &plan, std::size_t k) const { return plan.piece_len(k, local_) * plan.esize; }

  bool even(const Plan &plan, std::size_t k) const {
    for (int p = 1; p < local_size_; ++p)
      if (plan.piece_len(k, p) != plan.piece_len(k, 0)) return false;
    return true;
  }

  // Enqueues step (2) of slice k; *last: its last NCCL operation.
  pg_status reduce_scatter(const Plan &plan, std::size_t k, std::unique_ptr<Request> *last) {
    Backend &nccl = *gpu_->reduce_scatter->backend;
    const pg_op op = plan.combine_op();
    if (even(plan, k))
      return nccl.start(CollArgs::reduction(Coll::reduce_scatter, plan.send() + plan.slice_begin(k) * plan.esize,
                                            part(plan, k), plan.piece_len(k, 0), plan.args.dtype, op),
                        last);
    for (int p = 0; p < local_size_; ++p) {
      const std::size_t at = plan.piece_offset(k, p, 0) * plan.esize, len = plan.piece_len(k, p);
      if (len > 0)
        PG_CHECK(nccl.start(
            CollArgs::reduction(Coll::reduce, plan.send() + at, plan.recv() + at, len, plan.args.dtype, op, p), last));
    }
    return PG_OK;
  }

  // Enqueues step (4) of slice k; *last: its last NCCL operation.
  pg_status all_gather(const Plan &plan, std::size_t k, std::unique_ptr<Request> *last) {
    Backend &nccl = *gpu_->all_gather->backend;
    if (even(plan, k))
      return nccl.start(CollArgs::movement(Coll::allgather, part(plan, k), plan.recv() + plan.slice_begin(k) * plan.esize,
                                           plan.piece_len(k, 0), plan.args.dtype),
                        last);
    for (int p = 0; p < local_size_; ++p) {
      const std::size_t at = plan.piece_offset(k, p, 0) * plan.esize, len = plan.piece_len(k, p);
      if (len > 0)
        PG_CHECK(nccl.start(CollArgs::movement(Coll::broadcast, nullptr, plan.recv() + at, len, plan.args.dtype, p),
                            last));
    }
    return PG_OK;
  }

  const int device_, local_, local_size_, slots_;
  const std::size_t slice_bytes_;
  cudaStream_t user_stream_;
  const bool cuda_aware_;
  std::uint64_t finished_ticks_ = 0;  // slices through finished(), in node order
  bool failed_ = false;
  std::unique_ptr<Gpu> gpu_;
};

}  // namespace

pg_status make_cuda_transport(const pg_backend_context &ctx, const InstanceEnv &env, std::size_t slice_bytes,
                              int slots, std::unique_ptr<NodeTransport> *out) {
  auto t = std::make_unique<CudaTransport>(ctx, slice_bytes, slots);
  const pg_status local = t->prepare();
  PG_CHECK(agree(ctx.node_comm, local, local == PG_OK ? std::string() : last_error()));
  PG_CHECK(t->connect(ctx, env));
  *out = std::move(t);
  return PG_OK;
}

}  // namespace pg::fairring
