#include "backends/fairring/fairring_backend.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "backends/fairring/algorithms.h"
#include "backends/fairring/cuda_transport.h"
#include "backends/fairring/fairring_internal.h"
#include "backends/fairring/fast_path.h"
#include "backends/fairring/handoff.h"
#include "backends/fairring/probe.h"
#include "backends/fairring/schedule.h"
#include "backends/fairring/settings.h"
#include "backends/fairring/shm_transport.h"
#include "core/instance.h"
#include "core/selection.h"
#include "core/trace.h"
#include "topology/machine.h"
#include "util/dtype.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::fairring {
namespace {

// A core's L1 data cache and its share of the L2, as hwloc sees them; 0
// where it cannot say.
struct Caches {
  std::size_t l1d = 0, l2_per_core = 0;
};

// The smallest of every rank's (0 if any does not know), so that every rank
// finds the same places in the fast path's slots and cuts the same slices.
// Collective over comm.
pg_status agreed_caches(MPI_Comm comm, Caches *out) {
  std::shared_ptr<const topology::Machine> machine;  // loaded once per process
  unsigned long long sizes[2] = {0, 0};
  if (topology::load_machine("", &machine) == PG_OK)
    sizes[0] = machine->l1d_bytes, sizes[1] = machine->l2_bytes / static_cast<std::size_t>(machine->l2_cores);
  PG_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm));
  *out = {static_cast<std::size_t>(sizes[0]), static_cast<std::size_t>(sizes[1])};
  return PG_OK;
}

class FairringBackend final : public Backend {
 public:
  pg_status init(const MakeArgs &args) {
    const pg_backend_context &c = args.ctx;
    const bool cuda = c.device_index >= 0, irregular = args.layout.irregular;
    const Settings &given = args.settings_of<Settings>("fairring");
    slice_given_ = given.slice_bytes.has_value();
    split_given_ = given.split_bytes.has_value();
    fast_given_ = given.fast_bytes.has_value();
    if (!cuda) {
      PG_CHECK(agreed_caches(c.comm, &caches_));
      // Timed only where a shared-memory path will run: the fast path, or the hierarchical one (regular layouts).
      const bool shares = given.fast_path_on() || !irregular;
      PG_CHECK(choose_handoff(c.node_comm, given, c.node_count, shares, caches_.l1d, caches_.l2_per_core, &handoff_));
    }
    settings_ = given.for_device(cuda, caches_.l2_per_core, c.local_size, c.node_count);
    if (handoff_.split_bytes > 0) settings_.split_bytes = handoff_.split_bytes;
    learn_shape(c, args.layout);
    const std::vector<int> &failing = settings_.fail_across;
    fails_across_ = std::find(failing.begin(), failing.end(), c.rank) != failing.end();
    // Shared memory inside nodes of several ranks (CPU); NCCL inside the node
    // with MPI across several nodes (CUDA). Regular layouts only.
    const bool transport = !irregular && (cuda ? shape_.nodes > 1 : shape_.local_size > 1);
    // PGS_FAIRRING_FAST_BYTES unset: timed where both paths run, every rank
    // has a CPU (virtual nodes share one host's), and no step across nodes is
    // to fail on request (PGS_FAIRRING_FAULT). The same on every rank.
    int time_fast = !cuda && !given.fast_bytes && !given.algorithm && failing.empty() && transport;
    if (time_fast) {  // the same on every rank so far: the collective is too
      topology::HostShare share;
      PG_CHECK(topology::host_share(c.comm, &share));
      time_fast = handoff_.timed && !share.oversubscribed();
      PG_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &time_fast, 1, MPI_INT, MPI_LAND, c.comm));
    }
    if (!settings_.fast_bytes) settings_.fast_bytes = time_fast ? Settings::kTimedFastBytes : Settings::kFastBytes;
    situation_ = {cuda, irregular, transport, c.size, *settings_.min_bytes};
    situation_.nodes = c.node_count;
    situation_.local_size = c.local_size;
    // The sub-instances, through the library's own factory: the device default
    // (mpi, or nccl on CUDA) on the whole communicator; mpi on the node (CPU)
    // and on the rail, on host memory.
    InstanceEnv host = args.env;
    host.cuda = false;
    host.device_index = -1;
    host.stream = nullptr;
    // The flat path is the device's default backend; the node's and the
    // rails' steps run on the CPU default (MPI).
    const char *host_default = default_backend(Device{});
    PG_CHECK(make_instance(default_backend(Device{cuda, -1}), c.comm, args.layout, args.env, &flat_));
    if (!cuda)
      PG_CHECK(make_instance(host_default, c.node_comm, topology::single_node_layout(c.node_comm), host, &node_));
    PG_CHECK(make_instance(host_default, c.rail_comm, topology::one_rank_per_node_layout(c.rail_comm), host, &rail_));
    // Every rank makes it or none does: on irregular layouts nodes of one rank too.
    if (!cuda && *settings_.fast_bytes > 0 && (irregular || shape_.local_size > 1)) {
      // Its own instance on the rail, so its MPI calls never interleave with the schedule's.
      PG_CHECK(make_instance(host_default, c.rail_comm, topology::one_rank_per_node_layout(c.rail_comm), host,
                             &fast_rail_));
      FastPath::Config config{*settings_.fast_bytes, *settings_.split_bytes, settings_.tree_ranks, shape_.nodes,
                              c.size, c.rank, !irregular, fails_across_, caches_.l1d, handoff_.reduce_in_buffer,
                              handoff_.pages_up_to,
                              args.env.memory};
      PG_CHECK(FastPath::create(c.node_comm, config, fast_rail_->backend.get(), &fast_));
      situation_.fast = fast_.get();
    }
    // The same on every rank (the layout and the settings are agreed), so
    // every rank fails together (and frees what it made together).
    PG_CHECK(check_forced(situation_, settings_.algorithm));
    if (transport && !cuda) {
      // A slot holds a slice, or a whole rank's share of one element per block.
      const std::size_t slot = std::max<std::size_t>(*settings_.slice_bytes, 8 * static_cast<std::size_t>(c.size));
      std::unique_ptr<ShmTransport> shm;
      PG_CHECK(ShmTransport::create(c.node_comm, slot, settings_.inflight, handoff_, args.env.memory, &shm));
      transport_ = std::move(shm);
    }
    if (transport && cuda)
      PG_CHECK(make_cuda_transport(c, args.env, *settings_.slice_bytes, settings_.inflight, &transport_));
    if (transport_) schedule_ = std::make_unique<Schedule>(*transport_, *rail_->backend, settings_.inflight);
    memory_ = args.env.memory;
    if (time_fast && fast_) PG_CHECK(choose_fast_limit(c.comm));
    return PG_OK;
  }

  // After a failure in the schedule, peers may not reach the collective free
  // of the shared window, and failed rail requests may still write into it:
  // it is left.
  ~FairringBackend() override {
    if (transport_ && transport_->failed()) abandon();
  }

  // The node's shared window (or NCCL communicators) are freed collectively: left as they are.
  void abandon() override {
    static_cast<void>(transport_.release());
    static_cast<void>(fast_.release());
  }

  // The fast path serves these too; the flat path (the device default) what it does not take.
  bool implements(Coll coll) const override {
    switch (coll) {
      case Coll::allreduce:
      case Coll::reduce_scatter:
      case Coll::allgather: return true;
      case Coll::broadcast:
      case Coll::reduce:
      case Coll::barrier: return fast_ != nullptr;
      default: return false;
    }
  }

  pg_status run(const CollArgs &a) override {
    const Algorithm algorithm = choose(situation_, a, settings_.algorithm);
    if (algorithm != Algorithm::hierarchical) trace::annotate(info(algorithm).name);
    switch (algorithm) {
      case Algorithm::fast: return fast_->run(a);
      case Algorithm::hierarchical: return hierarchical(a)->wait();
      case Algorithm::leaders: {
        std::unique_ptr<Request> op;
        PG_CHECK(leaders(a, &op));
        return op->wait();
      }
      case Algorithm::flat: break;
    }
    return flat_->backend->run(a);
  }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    const Algorithm algorithm = choose(situation_, a, settings_.algorithm);
    if (algorithm != Algorithm::hierarchical) trace::annotate(info(algorithm).name);
    switch (algorithm) {
      case Algorithm::fast: return fast_->start(a, out);
      case Algorithm::hierarchical: *out = hierarchical(a); return PG_OK;
      case Algorithm::leaders: return leaders(a, out);
      case Algorithm::flat: break;
    }
    return flat_->backend->start(a, out);
  }

  pg_status set_stream(void *stream) override {
    if (!situation_.cuda) return Backend::set_stream(stream);
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
    if (situation_.irregular)
      d += nodes + " with different numbers of ranks (irregular)";
    else
      d += nodes + " x " + std::to_string(shape_.local_size) + " ranks per node, " +
           std::to_string(shape_.local_size) + " rails of " + std::to_string(shape_.nodes);
    if (fast_)
      d += ", fast path up to " + text::format_bytes(fast_->limit()) + " (" + fast_reason() + "), " +
           text::format_bytes(fast_->footprint()) + " per rank (its places round " +
           text::format_bytes(fast_->cycle_bytes()) + " of a slot: " +
           (caches_.l1d ? "the L1 data cache hwloc reports" : "hwloc reports no L1 data cache, a common size") +
           "; split allreduces read pg_mem_alloc inputs in place where a rank's block outgrows that)";
    if (fast_)
      d += ", allreduces split from " + text::format_bytes(*settings_.split_bytes) + " (" + split_reason() + ")" +
           (fast_->tree() ? ", up a tree below that" : "");
    return d + ", slices of " + text::format_bytes(*settings_.slice_bytes) + " (" + slice_reason() + "), " +
           std::to_string(settings_.inflight) + " in flight, " +
           (situation_.cuda ? "NCCL in the node, MPI on the rails through pinned host memory (device memory where MPI is "
                    "CUDA-aware)"
                  : "shared memory in the node (ordinary buffers copied into its slots, pg_mem_alloc buffers "
                    "read in place; " + handoff_.why + ")") +
           "; " + describe_rule(situation_, settings_.algorithm);
  }

 private:
  // Where the fast path stops, timed (Settings::fast_bytes): a 512 KiB
  // allreduce on it and on the hierarchical path, and the faster keeps it.
  pg_status choose_fast_limit(MPI_Comm comm) {
    ProbeAllreduce call(std::size_t(512) << 10);
    const CollArgs a = call.args().placed(shape_.rank);
    std::vector<double> medians;
    PG_CHECK(time_turns(comm, 2, [&](std::size_t way) { return way == 0 ? fast_->run(a) : hierarchical(a)->wait(); },
                        &medians));
    fast_->set_limit(keep_first_unless(medians, 1.0) == 0 ? Settings::kTimedFastBytes : Settings::kFastBytes);
    char why[128];
    std::snprintf(why, sizeof why, "a 512 KiB allreduce took %.2f of the hierarchical path's time on it, timed here",
                  medians[0] / medians[1]);
    fast_why_ = why;
    return PG_OK;
  }

  // Why the fast path stops where it does.
  std::string fast_reason() const {
    if (fast_given_) return "PGS_FAIRRING_FAST_BYTES";
    if (!fast_why_.empty()) return fast_why_;
    return "not timed: the default";
  }

  // Why the fast path splits allreduces from where it does.
  std::string split_reason() const {
    if (split_given_) return "PGS_FAIRRING_SPLIT_BYTES";
    if (!handoff_.split_why.empty()) return handoff_.split_why;
    return Settings::split_reason(shape_.local_size, shape_.nodes);
  }

  // Why the slices are as large as they are (Settings::cpu_slice_bytes).
  std::string slice_reason() const {
    if (slice_given_) return "PGS_FAIRRING_SLICE_BYTES";
    if (situation_.cuda) return "CUDA's default";
    if (caches_.l2_per_core == 0) return "hwloc reports no L2 cache, a common size";
    return std::to_string(2 * settings_.inflight) + " of them, an input and a result for each in flight, fit a core's " +
           text::format_bytes(caches_.l2_per_core) + " of L2 cache";
  }

  // Which rank sits where: the layout knows every rank's node and local rank,
  // so the algorithms need no communication to find a block's owner.
  void learn_shape(const pg_backend_context &c, const topology::Layout &layout) {
    shape_.local = c.local_rank;
    shape_.local_size = c.local_size;
    shape_.node = c.node_rank;
    shape_.nodes = c.node_count;
    shape_.rank = c.rank;
    shape_.size = c.size;
    shape_.rank_of = layout.rank_of;
  }

  pg_status leaders(const CollArgs &a, std::unique_ptr<Request> *out) {
    return start_leaders(a, shape_, *node_->backend, *rail_->backend, leaders_order_, fails_across_, out);
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
    trace::annotate(info(Algorithm::hierarchical).name, static_cast<std::uint32_t>(plan->slices));
    trace::annotate_shared(plan->send_spot.id >= 0, plan->recv_spot.id >= 0);
    return schedule_->start(std::move(plan));
  }

  Settings settings_;
  bool slice_given_ = false;      // PGS_FAIRRING_SLICE_BYTES was set
  bool split_given_ = false;      // PGS_FAIRRING_SPLIT_BYTES was set
  bool fast_given_ = false;       // PGS_FAIRRING_FAST_BYTES was set
  std::string fast_why_;          // where the fast path stops, as timed (choose_fast_limit)
  Caches caches_;  // the caches the places and slices were cut for (CPU; agreed over the ranks)
  Handoff handoff_;  // where blocks and shards are reduced and how peers copy them (CPU; agreed over the node)
  bool fails_across_ = false;  // testing: this rank's steps across nodes fail (PGS_FAIRRING_FAULT)
  LeadersOrder leaders_order_;
  Shape shape_;
  Situation situation_;
  const Memory *memory_ = nullptr;
  std::unique_ptr<Instance> flat_, node_, rail_, fast_rail_;
  // Declared after the instances they use, so destroyed before them.
  std::unique_ptr<FastPath> fast_;
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
