// Strategy lifecycle: creation (collective, one agreed status), split, destroy,
// describe.
#include "core/strategy.h"

#include <algorithm>
#include <thread>

#include "core/dispatch.h"
#include "core/plugin.h"
#include "core/registry.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "cuda/runtime.h"
#include "launch/launcher.h"
#include "mpi/agree.h"
#include "topology/machine.h"
#include "util/keep_alive.h"
#include "util/log.h"
#include "util/names.h"
#include "util/poll.h"
#include "util/owned_comm.h"
#include "util/status.h"
#include "util/text.h"

namespace pg {
namespace {

pg_status dup_comm(MPI_Comm comm, MPI_Comm *out) {
  PG_MPI_CHECK(MPI_Comm_dup(comm, out));
  mark_owned(*out);
  // MPI errors come back as statuses with MPI's own text.
  PG_MPI_CHECK(MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN));
  return PG_OK;
}

std::string devices_list(uint32_t devices) {
  std::string out;
  if (devices & PG_DEVICE_CPU) out += "cpu";
  if (devices & PG_DEVICE_CUDA) out += out.empty() ? "cuda" : ", cuda";
  return out;
}

// The backend entry for `name`: registered, or loaded as a plugin.
pg_status find_backend(const std::string &name, const Device &device,
                       const Settings &settings, const BackendEntry **out) {
  *out = registry::find(name);
  if (*out) return PG_OK;
  if (!valid_backend_name(name))
    return fail(PG_ERR_UNKNOWN_BACKEND,
                "unknown backend '%s' for device '%s': not a valid name ([a-z0-9_]{1,63}); "
                "registered: %s",
                text::printable(name).c_str(), device.kind().c_str(), text::join(registry::names(), ", ").c_str());
  PG_CHECK(load_plugin(name, settings.plugin_path));
  *out = registry::find(name);
  if (!*out) return fail(PG_ERR_PLUGIN, "plugin for backend '%s' did not register it", name.c_str());
  return PG_OK;
}

// The checks every rank makes alone, in the order pg_strategy_create documents.
pg_status check_locally(pg_strategy *s, const char *device, const char *backend,
                        const BackendEntry **entry, int *gpus) {
  PG_CHECK(parse_device(device, &s->device));
  s->selection = select_backend(s->device, backend, s->settings);
  PG_CHECK(find_backend(s->selection.backend, s->device, s->settings, entry));
  uint32_t bit = s->device.cuda ? PG_DEVICE_CUDA : PG_DEVICE_CPU;
  if (!((*entry)->devices & bit))
    return fail(PG_ERR_UNSUPPORTED, "backend '%s' does not serve device '%s'; it serves: %s",
                s->selection.backend.c_str(), device, devices_list((*entry)->devices).c_str());
  if (!s->device.cuda) return PG_OK;
  PG_CHECK(cuda::device_count(gpus));
  if (s->device.index >= *gpus)
    return fail(PG_ERR_INVALID_ARGUMENT, "device '%s' is out of range: %d GPU%s visible (cuda:0..%d)",
                device, *gpus, *gpus == 1 ? "" : "s", *gpus - 1);
  return PG_OK;
}

// The local rank's GPU for "cuda"; the named one for "cuda:N".
pg_status choose_gpu(pg_strategy *s, int gpus) {
  if (s->device.index < 0)
    PG_CHECK(topology::choose_cuda_index(s->layout.local_rank, s->layout.local_size, gpus,
                                         &s->device.index));
  s->device_name = "cuda:" + std::to_string(s->device.index);
  return PG_OK;
}

// One collective step of creation: run `step` locally, then agree.
template <typename Step>
pg_status collective_step(pg_strategy *s, Step step) {
  pg_status local = step();
  return agree(s->comm, local, local == PG_OK ? std::string() : last_error());
}

// The process's wait rule (util/poll.h) from PGS_WAIT and how many ranks
// share this host's CPUs; `waiting` says which and why, for describe.
pg_status choose_wait_rule(pg_strategy *s) {
  topology::HostShare share;
  PG_CHECK(topology::host_share(s->comm, &share));
  const Settings::Wait wait = s->settings.wait;
  // Once a strategy of this process found more ranks than CPUs, automatic
  // yielding stays: a strategy on a subset of the ranks (a split) does not
  // make the host's other ranks go away.
  static std::atomic<bool> oversubscribed_before{false};
  const bool yielding = wait == Settings::Wait::auto_ && oversubscribed_before.load();
  if (share.oversubscribed()) oversubscribed_before = true;
  const bool yield = wait == Settings::Wait::yield ||
                     (wait == Settings::Wait::auto_ && (share.oversubscribed() || yielding));
  WaitRule rule;
  rule.budget_us = s->settings.wait_budget_us;
  rule.spin_us = yield ? 0 : wait == Settings::Wait::spin ? rule.budget_us : WaitRule::kSpinUs;
  set_wait_rule(rule);
  std::string why = "PGS_WAIT";
  if (wait == Settings::Wait::auto_)
    why = std::to_string(share.ranks) + " ranks on " + std::to_string(share.cpus) + " CPUs of this host" +
          (yielding && !share.oversubscribed() ? "; an earlier strategy of this process found more ranks than CPUs"
                                               : "");
  const std::string budget = std::to_string(s->settings.wait_budget_us) + " us";
  std::string how = "spin " + budget;
  if (yield) how = "yield " + budget;
  else if (rule.spin_us < rule.budget_us)
    how = "spin " + std::to_string(static_cast<int>(rule.spin_us)) + " us, yield to " + budget + ",";
  s->waiting = "wait=" + how + " then nap (" + why + ")";
  return PG_OK;
}

}  // namespace

pg_status check_usable(const char *fn, const pg_strategy *s) {
  if (runtime::finalizing())
    return fail(PG_ERR_STATE, "%s: MPI has been finalized; only pg_strategy_destroy is allowed", fn);
  if (s->health.poisoned())
    return fail(PG_ERR_STATE, "%s: the strategy is unusable after an earlier failure (%s); destroy it", fn,
                s->health.reason().c_str());
  return PG_OK;
}

namespace {

// What the selected backend delegates to the device default, worked out once:
// what it has no entry for. Point-to-point goes as a whole (send and recv
// must meet on one communicator); sendrecv is composed from send and recv.
std::bitset<kCollCount> delegated_by(const Backend &b) {
  std::bitset<kCollCount> delegated;
  const bool p2p = b.implements(Coll::send) && b.implements(Coll::recv);
  for (int c = 0; c < kCollCount; ++c) {
    const Coll coll = Coll(c);
    if (coll == Coll::send || coll == Coll::recv) delegated[c] = !p2p;
    else if (coll == Coll::sendrecv) delegated[c] = !p2p && !b.implements(coll);
    else delegated[c] = !b.implements(coll);
  }
  return delegated;
}

}  // namespace

// An instance of `entry` on the strategy's communicator (collective).
pg_status make_strategy_instance(pg_strategy *s, const BackendEntry &entry, std::unique_ptr<Instance> *out) {
  InstanceEnv env;
  env.cuda = s->device.cuda;
  env.device_index = s->device.index;
  env.stream = s->stream;
  env.settings = &s->backend_settings;
  env.memory = &s->memory;
  return make_instance(entry, s->instance_comm, s->layout, env, out);
}

pg_status make_device_default(pg_strategy *s) {
  if (s->routes.device_default) return PG_OK;
  const BackendEntry *entry = registry::find(default_backend(s->device));
  if (!entry) return fail(PG_ERR_INTERNAL, "the device default backend is not registered");
  return make_strategy_instance(s, *entry, &s->routes.device_default);
}

namespace {

pg_status init_strategy(pg_strategy *s, const char *device, const char *backend, MPI_Comm comm) {
  // A bad PGS_* value is reported through the agreement below like any local failure.
  pg_status settings_status = read_settings(&s->settings);
  std::string settings_error = last_error();
  if (settings_status == PG_OK) log::set_level(s->settings.log);
  PG_CHECK(runtime::ensure_mpi());
  if (comm == MPI_COMM_NULL) return fail(PG_ERR_INVALID_ARGUMENT, "the communicator is MPI_COMM_NULL");
  int inter = 0;
  PG_MPI_CHECK(MPI_Comm_test_inter(comm, &inter));
  if (inter) return fail(PG_ERR_INVALID_ARGUMENT, "an intercommunicator cannot hold a strategy");
  PG_CHECK(dup_comm(comm, &s->comm));
  PG_CHECK(dup_comm(comm, &s->instance_comm));
  MPI_Comm_rank(s->comm, &s->rank);
  MPI_Comm_size(s->comm, &s->size);
  int *tag_ub = nullptr, has_tag_ub = 0;
  MPI_Comm_get_attr(s->comm, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  if (has_tag_ub && tag_ub) s->tag_ub = *tag_ub;

  const BackendEntry *entry = nullptr;
  int gpus = 0;
  PG_CHECK(collective_step(s, [&] {
    if (settings_status != PG_OK) return fail_message(settings_status, settings_error);
    PG_CHECK(registry::read_settings(&s->backend_settings));
    return check_locally(s, device, backend, &entry, &gpus);
  }));
  std::string schedule = params::schedule(s->settings.list());
  for (const auto &kv : s->backend_settings) schedule += " " + kv.second->schedule();
  PG_CHECK(agree_same(s->comm,
                      "device '" + s->device.kind() + "' backend '" + s->selection.backend + "' " + schedule,
                      "the device, the backend or the schedule settings"));
  PG_CHECK(collective_step(s, [&] {
    return topology::build_layout(s->comm, s->settings.node_sizes, &s->layout);
  }));
  PG_CHECK(collective_step(s, [&] { return Alarm::create(s->comm, s->layout, &s->alarm); }));
  s->device_name = "cpu";
  PG_CHECK(collective_step(s, [&] {
    std::string bus_id;  // CUDA's own view of the GPU, matched in hwloc's topology
    if (s->device.cuda) {
      PG_CHECK(choose_gpu(s, gpus));
      if (cuda::pci_bus_id(s->device.index, &bus_id) != PG_OK) bus_id.clear();
    }
    return topology::prepare_rank(s->settings.rank_options(), s->layout, s->device.cuda ? s->device.index : -1,
                                  &s->placement, bus_id);
  }));
  PG_CHECK(collective_step(s, [&] { return choose_wait_rule(s); }));
  launch::check_launcher(MPI_COMM_WORLD);

  pg_status made = collective_step(s, [&] { return make_strategy_instance(s, *entry, &s->routes.selected); });
  if (made != PG_OK) {
    // Another rank's create failed: this rank's instance must not run the
    // backend's (collective) destroy alone, so it is abandoned.
    if (s->routes.selected && s->routes.selected->backend) {
      PG_LOG(warn, "backend '%s' created here but not on every rank; its state is left without its destroy",
             entry->name.c_str());
      s->routes.selected->backend->abandon();
    }
    return made;
  }
  if (!s->settings.trace_dir.empty()) {
    PG_CHECK(trace::start(s));
    trace::Op(s, static_cast<std::uint8_t>(trace::Event::create), nullptr, 0).end(PG_OK);
  }
  // The device default serves what the selected backend has no entry for:
  // made now, collectively, so that no work's start has to make it: a pass of
  // the engine never waits (core/engine.h).
  if (s->selection.backend != default_backend(s->device)) {
    s->routes.delegated = delegated_by(*s->routes.selected->backend);
    if (s->routes.delegated.any()) PG_CHECK(collective_step(s, [&] { return make_device_default(s); }));
  }

  PG_LOG(info, "strategy created: backend '%s' (%s), device '%s', rank %d of %d",
         s->selection.backend.c_str(), s->selection.rule.c_str(), s->device_name.c_str(), s->rank,
         s->size);
  return PG_OK;
}

}  // namespace

pg_status create_strategy(const char *device, const char *backend, MPI_Comm comm, pg_strategy **out) {
  *out = nullptr;
  auto s = std::make_unique<pg_strategy>();
  pg_status st = init_strategy(s.get(), device, backend, comm);
  if (st != PG_OK) {
    std::string message = last_error();
    destroy_strategy(s.release());
    return fail_message(st, message);
  }
  runtime::track(s.get());
  *out = s.release();
  return PG_OK;
}

namespace {

pg_status split_comm(pg_strategy *s, int color, int key, pg_strategy **out) {
  MPI_Comm sub = MPI_COMM_NULL;
  PG_MPI_CHECK(MPI_Comm_split(s->comm, color < 0 ? MPI_UNDEFINED : color, key, &sub));
  if (sub == MPI_COMM_NULL) return PG_OK;
  mark_owned(sub);
  pg_status st = create_strategy(s->device_name.c_str(), s->selection.backend.c_str(), sub, out);
  MPI_Comm_free(&sub);
  if (st == PG_OK) (*out)->selection.rule = s->selection.rule + ", split";
  return st;
}

}  // namespace

pg_status split_strategy(pg_strategy *s, int color, int key, pg_strategy **out) {
  *out = nullptr;
  trace::Op op(s, static_cast<std::uint8_t>(trace::Event::split), nullptr, 0);
  return op.end(split_comm(s, color, key, out));
}

// An abort and a destroy may race (pg_strategy_abort may be called from any
// thread). An abort runs whole under the lock of the set of live strategies,
// and only on a strategy still in it; destroy takes the strategy out of the
// set, under that lock, once it has waited for its works and before it frees
// anything with its peers. So an abort before that point ends destroy's waits
// and destroy goes on alone; an abort after it is a no-op.
void abort_strategy(pg_strategy *s) {
  runtime::with_live(s, [](pg_strategy *live) {
    if (live->aborted.exchange(true)) return;
    live->health.poison("aborted by pg_strategy_abort");
    // The node's peers learn at once; the other nodes now where MPI may be
    // called from any thread, else at destroy.
    live->alarm->raise(Alarm::Cause::aborted, runtime::thread_level() == MPI_THREAD_MULTIPLE);
    // Asynchronous backends (NCCL) end what they enqueued; the library's own
    // waits end at their next poll. (The device default may be in the making
    // on the collectives lane: it is left to its polls.)
    live->routes.selected->backend->abort();
    PG_LOG(info, "pg_strategy_abort: strategy of rank %d of %d aborted", live->rank, live->size);
  });
}

namespace {

// Whether every rank came to destroy the strategy, so that what is freed
// collectively (shared windows, communicators) can be: a barrier, which ends
// as soon as this rank learns of a peer's failure or abort. A rank that
// failed, or whose strategy was aborted, frees nothing collectively: its
// peers cannot count on it.
bool everyone_destroys(pg_strategy *s) {
  if (!s->alarm || s->comm == MPI_COMM_NULL || s->size == 1) return true;
  if (s->alarm->raised()) return false;
  MPI_Request barrier = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(s->comm, &barrier) != MPI_SUCCESS) return false;
  CancelScope watched(nullptr, s->alarm.get());
  return poll_request(&barrier) == PG_OK;  // else the barrier is left unfinished: it holds no buffer
}

// destroy where not every rank frees collectively (after pg_strategy_abort,
// or a failure this rank raised or learned of): frees this process's own
// memory and waits for no peer. Backends, their communicators and shared
// memory, the library's communicators and unfinished requests are kept until
// the process exits; and nothing calls MPI once it is finalized.
void destroy_alone(pg_strategy *s, const std::shared_ptr<trace::Recorder> &recorder) {
  runtime::untrack(s);
  // Below MPI_THREAD_MULTIPLE an abort could tell only the node: the other nodes now.
  if (s->aborted && s->alarm && runtime::mpi_alive()) s->alarm->raise(Alarm::Cause::aborted, true);
  fail(PG_ERR_ABORTED, "the strategy was destroyed, aborted or after a failure, before this work finished");
  s->engine.give_up_all(PG_ERR_ABORTED);
  // A worker stuck in a custom backend's blocking entry keeps the strategy.
  const bool workers_done = s->engine.abandon(std::chrono::milliseconds(200));
  s->engine.detach_held();
  s->memory.release_all(false);
  keep_until_exit(std::move(s->routes.device_default));
  keep_until_exit(std::move(s->routes.selected));
  keep_until_exit(std::move(s->alarm));
  if (workers_done) delete s;
  else keep_until_exit(std::shared_ptr<void>(s, [](void *) {}));
  if (recorder) trace::retire(recorder);
}

}  // namespace

pg_status destroy_strategy(pg_strategy *s) {
  // The recorder outlives the strategy, for the dump that follows.
  const std::shared_ptr<trace::Recorder> recorder = s->trace;
  if (s->aborted) {
    destroy_alone(s, recorder);
    return PG_OK;
  }
  trace::Op op(s, static_cast<std::uint8_t>(trace::Event::destroy), nullptr, 0);
  const bool alive = runtime::mpi_alive();
  pg_status result = PG_OK;
  if (alive && !s->health.poisoned()) {
    CancelScope abortable(&s->aborted, s->alarm.get());  // an abort now ends these waits
    result = s->engine.finish_held();
  } else {
    fail(PG_ERR_STATE, "the strategy was destroyed before this work finished");
    s->engine.give_up_all(PG_ERR_STATE);
  }
  runtime::untrack(s);  // from here an abort is a no-op
  if (s->aborted || (alive && !everyone_destroys(s))) {
    op.end(result);
    destroy_alone(s, recorder);
    return result;
  }
  s->engine.stop();
  s->engine.detach_held();
  s->memory.release_all(alive);
  s->routes = Routes{};
  s->alarm.reset();
  if (alive) {
    topology::free_layout(&s->layout);
    if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
    if (s->instance_comm != MPI_COMM_NULL) MPI_Comm_free(&s->instance_comm);
  }
  op.end(result);
  delete s;
  if (recorder) trace::retire(recorder);
  return result;
}

pg_status describe_strategy(const pg_strategy *s, std::string *out) {
  std::string d = "backend '" + s->selection.backend + "' (" + s->selection.rule + "), device '" +
                  s->device_name + "', rank " + std::to_string(s->rank) + " of " +
                  std::to_string(s->size) + ", node " + std::to_string(s->layout.node_rank) + " of " +
                  std::to_string(s->layout.node_count) + " (local rank " +
                  std::to_string(s->layout.local_rank) + " of " + std::to_string(s->layout.local_size) +
                  ")";
  std::string delegated;
  for (int c = 0; c < kCollCount; ++c) {
    const char *suffix = s->routes.delegated[c] ? "" : s->routes.declined[c] ? " (declined calls)" : nullptr;
    if (suffix) delegated += (delegated.empty() ? "" : ", ") + std::string(coll_name(Coll(c))) + suffix;
  }
  if (!delegated.empty())
    d += ", delegated to '" + std::string(default_backend(s->device)) + "': " + delegated;
  if (!s->placement.empty()) d += ", " + s->placement;
  d += ", " + s->waiting;
  const std::string plan = s->routes.selected ? s->routes.selected->backend->describe() : std::string();
  if (!plan.empty()) d += "; " + plan;
  if (s->health.poisoned()) d += ", unusable after: " + s->health.reason();
  *out = d;
  return PG_OK;
}

}  // namespace pg

namespace pg {

std::string Health::reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

void Health::poison(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (poisoned_) return;
  reason_ = reason;
  poisoned_ = true;
}

}  // namespace pg
