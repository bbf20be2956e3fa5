// Routing a call: which instance runs it (the selected backend, or the device
// default for the operations delegated to it and the calls the backend
// declines), its blocking body, and what a failure does to the strategy.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "util/dtype.h"
#include "util/keep_alive.h"
#include "util/status.h"

namespace pg {
namespace {

// Runs on `inst`. Below MPI_THREAD_MULTIPLE with PGS_TIMEOUT the watchdog polls
// in this thread, so the operation is started and tested rather than blocked on;
// a backend without a native start for it blocks, and the watchdog's own thread
// watches that call.
pg_status run_on(pg_strategy *s, Instance *inst, const CollArgs &a) {
  std::optional<watchdog::Unpolled> unpolled;
  if (s->settings.timeout_s > 0 && runtime::thread_level() < MPI_THREAD_MULTIPLE) {
    std::unique_ptr<Request> request;
    pg_status st = inst->backend->start(a, &request);
    if (st == PG_OK) {
      bool done = false;
      return poll([&](bool *d) { return request->test(d); }, polled_by_caller(s), &done);
    }
    if (st != PG_ERR_UNSUPPORTED) return st;
    unpolled.emplace(s);
  }
  return inst->backend->run(a);
}

// The backend declined this collective (PG_ERR_UNSUPPORTED before it
// communicated): that call runs on the device default, made on first need
// (collectively: every rank declines alike); pg_strategy_describe says so.
pg_status run_declined(pg_strategy *s, const CollArgs &a) {
  PG_CHECK(make_device_default(s));
  s->routes.declined.set(static_cast<int>(a.coll));
  trace::annotate_device_default();
  return run_on(s, s->routes.device_default.get(), a);
}

// Runs on the routed instance; a collective the backend declines runs on the
// device default. Point-to-point is never rerouted call by call: the peer
// would wait on the other communicator.
pg_status run_routed(pg_strategy *s, const CollArgs &a) {
  Instance *inst = route(s, a.coll);
  pg_status st = run_on(s, inst, a);
  if (st == PG_ERR_UNSUPPORTED && inst == s->routes.selected.get() && !is_point_to_point(a.coll) &&
      s->selection.backend != default_backend(s->device))
    st = run_declined(s, a);
  if (st == PG_ERR_UNSUPPORTED)
    return fail(st, "backend '%s' does not run %s on %s (op %s) and no other backend can",
                inst->name.c_str(), coll_name(a.coll), dtype_name(a.dtype), op_name(a.op));
  return st;
}

}  // namespace

// Collectives on zero elements have nothing to do (messages of zero elements
// still have to match, so point-to-point is not trivial; nor are the uneven
// collectives, whose other ranks may move data while this one has none).
bool trivial(const CollArgs &a) {
  return a.count == 0 && !is_point_to_point(a.coll) && a.coll != Coll::barrier && !is_uneven(a.coll);
}

std::uint64_t coll_seq(const pg_strategy *s, const CollArgs &a) {
  return is_point_to_point(a.coll) ? 0 : s->sequence;
}

Instance *instance_for(const pg_strategy *s, Coll coll) {
  return s->routes.delegated[static_cast<int>(coll)] ? s->routes.device_default.get() : s->routes.selected.get();
}

Instance *route(pg_strategy *s, Coll coll) {
  Instance *inst = instance_for(s, coll);
  if (inst != s->routes.selected.get()) trace::annotate_device_default();
  return inst;
}

bool polls(const pg_strategy *s, Coll coll) { return instance_for(s, coll)->backend->polls(); }

pg_status start_routed(pg_strategy *s, const CollArgs &a, std::unique_ptr<Request> *out) {
  return route(s, a.coll)->backend->start(a, out);
}

Until polled_by_caller(pg_strategy *s) {
  Until until;
  if (s->settings.timeout_s > 0 && runtime::thread_level() < MPI_THREAD_MULTIPLE) {
    until.check = [s] { watchdog::abort_if_overdue(s, watchdog::own_marks(s).current()); };
  }
  return until;
}

// In-place alltoall on CPU memory is staged into a copy, so CPU backends never
// see it; CUDA backends get it as it is (the copy would be device memory).
// The same for alltoallv: the blocks sendcounts and sdispls describe.
void stage_alltoall(const pg_strategy *s, CollArgs *a, std::vector<char> *stage) {
  if ((a->coll != Coll::alltoall && a->coll != Coll::alltoallv) || !a->in_place || s->device.cuda) return;
  const char *p = static_cast<const char *>(a->send);
  const std::size_t elements = a->coll == Coll::alltoall ? a->count * static_cast<std::size_t>(s->size)
                                                         : VCounts::extent(a->v->send_counts, a->v->send_displs);
  stage->assign(p, p + elements * dtype_size(a->dtype));
  a->send = stage->data();
  a->in_place = false;
}

pg_status run_blocking(pg_strategy *s, const CollArgs &args, std::uint64_t sequence) {
  CollArgs a = args;
  std::vector<char> stage;
  stage_alltoall(s, &a, &stage);
  watchdog::Scope watched(s, a.coll, sequence);
  const pg_status st = poison_on_failure(s, run_routed(s, a));
  // A failed call may have left its sends of the staged input to MPI.
  if (st != PG_OK && !stage.empty()) keep_until_exit(std::make_shared<std::vector<char>>(std::move(stage)));
  return st;
}

// A backend failure poisons the strategy and raises its alarm, so that the
// peers stop waiting for this rank (a failure learned from a peer's alarm
// raises nothing more); the flight recorder dumps then, while the job may
// still be alive to tell.
pg_status poison_on_failure(pg_strategy *s, pg_status st) {
  if (st == PG_ERR_BACKEND && !s->health.poisoned()) {
    s->health.poison(last_error());
    s->alarm->raise(Alarm::Cause::failed, true);
    if (s->trace) trace::dump("poison");
  }
  return st;
}

pg_status check_peers(pg_strategy *s) { return poison_on_failure(s, s->alarm->check_node()); }

}  // namespace pg
