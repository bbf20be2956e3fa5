#include "backends/fairring/fairring_backend.h"

#include <algorithm>
#include <string>

#include "backends/fairring/algorithms.h"
#include "backends/fairring/cuda_transport.h"
#include "backends/fairring/fairring_internal.h"
#include "backends/fairring/schedule.h"
#include "backends/fairring/settings.h"
#include "backends/fairring/shm_transport.h"
#include "core/dtype.h"
#include "core/instance.h"
#include "core/status.h"

namespace pg::fairring {

const AlgorithmInfo &info(Algorithm algorithm) {
  for (const AlgorithmInfo &a : kAlgorithms)
    if (a.algorithm == algorithm) return a;
  return kAlgorithms[0];
}

std::size_t message_bytes(const CollArgs &a, int ranks) {
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  return a.coll == Coll::allreduce ? bytes : bytes * static_cast<std::size_t>(ranks);
}

namespace {

std::string bytes_text(std::size_t b) {
  if (b >= (std::size_t(1) << 20) && b % (std::size_t(1) << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

class FairringBackend final : public Backend {
 public:
  pg_status init(const MakeArgs &args) {
    const pg_backend_context &c = args.ctx;
    cuda_ = c.device_index >= 0;
    settings_ = args.settings_of<Settings>("fairring").for_device(cuda_);
    PG_CHECK(learn_shape(c));
    // The sub-instances, through the library's own factory: the device default
    // (mpi, or nccl on CUDA) on the whole communicator; mpi on the node (CPU)
    // and on the rail, on host memory.
    InstanceEnv host = args.env;
    host.cuda = false;
    host.device_index = -1;
    host.stream = nullptr;
    PG_CHECK(make_instance(cuda_ ? "nccl" : "mpi", c.comm, layout_of(c), args.env, &flat_));
    if (!cuda_) PG_CHECK(make_instance("mpi", c.node_comm, topology::single_node_layout(c.node_comm), host, &node_));
    PG_CHECK(make_instance("mpi", c.rail_comm, topology::one_rank_per_node_layout(c.rail_comm), host, &rail_));
    if (!irregular_ && !cuda_ && shape_.local_size > 1) {
      // A slot holds a slice, or a whole rank's share of one element per block.
      const std::size_t slot = std::max<std::size_t>(settings_.slice_bytes, 8 * static_cast<std::size_t>(c.size));
      std::unique_ptr<ShmTransport> shm;
      PG_CHECK(ShmTransport::create(c.node_comm, slot, settings_.inflight, args.env.memory, &shm));
      transport_ = std::move(shm);
    }
    if (!irregular_ && cuda_ && shape_.nodes > 1)
      PG_CHECK(make_cuda_transport(c, args.env, settings_.slice_bytes, settings_.inflight, &transport_));
    if (transport_) schedule_ = std::make_unique<Schedule>(*transport_, *rail_->backend, settings_.inflight);
    memory_ = args.env.memory;
    return PG_OK;
  }

  // After a failure in the schedule, peers may not reach the collective free
  // of the shared window, and failed rail requests may still write into it:
  // it is left.
  ~FairringBackend() override {
    if (transport_ && transport_->failed()) abandon();
  }

  // The node's shared window (or NCCL communicators) are freed collectively: left as they are.
  void abandon() override { static_cast<void>(transport_.release()); }

  bool implements(Coll coll) const override {
    return coll == Coll::allreduce || coll == Coll::reduce_scatter || coll == Coll::allgather;
  }

  pg_status run(const CollArgs &a) override {
    switch (choose(a)) {
      case Algorithm::hierarchical: return hierarchical(a)->wait();
      case Algorithm::leaders: return allreduce_leaders(a, shape_, *node_->backend, *rail_->backend);
      case Algorithm::flat: break;
    }
    return flat_->backend->run(a);
  }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    switch (choose(a)) {
      case Algorithm::hierarchical: *out = hierarchical(a); return PG_OK;
      case Algorithm::leaders: return PG_ERR_UNSUPPORTED;  // the library runs it asynchronously
      case Algorithm::flat: break;
    }
    return flat_->backend->start(a, out);
  }

  pg_status set_stream(void *stream) override {
    if (!cuda_) return Backend::set_stream(stream);
    PG_CHECK(flat_->backend->set_stream(stream));
    if (transport_) transport_->set_stream(stream);
    return PG_OK;
  }

  // The watchdog ends the job: NCCL's kernels are stopped first.
  void abort() override {
    flat_->backend->abort();
    if (transport_) transport_->abort();
  }

  std::string describe() const override {
    const std::string nodes = std::to_string(shape_.nodes) + " node" + (shape_.nodes == 1 ? "" : "s");
    std::string d = "fairring plan: ";
    if (irregular_)
      d += nodes + " with different numbers of ranks (irregular: allreduce over the nodes' first ranks)";
    else
      d += nodes + " x " + std::to_string(shape_.local_size) + " ranks per node, " +
           std::to_string(shape_.local_size) + " rails of " + std::to_string(shape_.nodes);
    d += ", slices of " + bytes_text(settings_.slice_bytes) + ", " + std::to_string(settings_.inflight) +
         " in flight, " +
         (cuda_ ? "NCCL in the node, MPI on the rails through pinned host memory (device memory where MPI is "
                  "CUDA-aware)"
                : "shared memory in the node") +
         "; allreduce: ";
    const Algorithm big = hierarchical_from_min(Coll::allreduce);
    if (big == Algorithm::flat)
      return d + "flat at every size (" + (cuda_ ? "NCCL's own: one node, or an irregular layout" : "one rank per node") + ")";
    return d + "flat below " + bytes_text(settings_.min_bytes) + ", " + info(big).name + " from there";
  }

 private:
  // Which rank sits where: the layout is agreed here (every rank learns every
  // rank's node and local rank), so the algorithms need no communication to
  // find a block's owner.
  pg_status learn_shape(const pg_backend_context &c) {
    shape_.local = c.local_rank;
    shape_.local_size = c.local_size;
    shape_.node = c.node_rank;
    shape_.nodes = c.node_count;
    shape_.rank = c.rank;
    shape_.size = c.size;
    std::vector<int> mine = {c.node_rank, c.local_rank, c.local_size}, all(3 * static_cast<std::size_t>(c.size));
    PG_MPI_CHECK(MPI_Allgather(mine.data(), 3, MPI_INT, all.data(), 3, MPI_INT, c.comm));
    for (int r = 0; r < c.size; ++r) irregular_ = irregular_ || all[3 * r + 2] != c.local_size;
    if (irregular_) return PG_OK;
    shape_.rank_of.assign(static_cast<std::size_t>(c.size), 0);
    for (int r = 0; r < c.size; ++r) shape_.rank_of[static_cast<std::size_t>(all[3 * r] * c.local_size + all[3 * r + 1])] = r;
    return PG_OK;
  }

  // The algorithm for `coll` from PGS_FAIRRING_MIN_BYTES on. CPU: shared memory
  // inside nodes of several ranks. CUDA: allreduce across nodes; inside one
  // node NCCL's own allreduce is what the hierarchy would do, and NCCL serves
  // irregular layouts itself.
  Algorithm hierarchical_from_min(Coll coll) const {
    if (!transport_) return irregular_ && !cuda_ && coll == Coll::allreduce ? Algorithm::leaders : Algorithm::flat;
    return !cuda_ || coll == Coll::allreduce ? Algorithm::hierarchical : Algorithm::flat;
  }

  Algorithm choose(const CollArgs &a) const {
    if (message_bytes(a, shape_.size) < settings_.min_bytes) return Algorithm::flat;
    // NCCL has no bitwise reductions: NCCL's flat path declines them.
    if (cuda_ && (a.op == PG_BAND || a.op == PG_BOR || a.op == PG_BXOR)) return Algorithm::flat;
    return hierarchical_from_min(a.coll);
  }

  std::unique_ptr<Request> hierarchical(const CollArgs &a) {
    const std::size_t slot = transport_->slot_bytes();
    std::unique_ptr<Plan> plan = a.coll == Coll::allreduce        ? allreduce_plan(a, shape_, slot)
                                 : a.coll == Coll::reduce_scatter ? reduce_scatter_plan(a, shape_, slot)
                                                                  : allgather_plan(a, shape_, slot);
    // pg_mem_alloc buffers are read in place by the node's other ranks.
    const std::size_t block = a.count * plan->esize, all = block * static_cast<std::size_t>(shape_.size);
    plan->send_spot = memory_->find(a.send, a.coll == Coll::reduce_scatter ? all : block);
    plan->recv_spot = memory_->find(a.recv, a.coll == Coll::allgather ? all : block);
    return schedule_->start(std::move(plan));
  }

  bool cuda_ = false;
  Settings settings_;
  Shape shape_;
  bool irregular_ = false;
  const Memory *memory_ = nullptr;
  std::unique_ptr<Instance> flat_, node_, rail_;
  // Declared after the instances they use, so destroyed before them.
  std::unique_ptr<NodeTransport> transport_;
  std::unique_ptr<Schedule> schedule_;
};

}  // namespace

BackendEntry entry() {
  BackendEntry e;
  e.name = "fairring";
  e.devices = PG_DEVICE_CPU | PG_DEVICE_CUDA;
  e.read_settings = Settings::read;
  e.make = [](const MakeArgs &args, std::unique_ptr<Backend> *out) -> pg_status {
    auto backend = std::make_unique<FairringBackend>();
    PG_CHECK(backend->init(args));
    *out = std::move(backend);
    return PG_OK;
  };
  return e;
}

}  // namespace pg::fairring
