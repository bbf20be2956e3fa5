// Routing an operation: which instance serves it (the backend, or the device
// default for what the backend lacks or declines), in what order with the
// nonblocking work started before it, and on which thread.
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "util/dtype.h"
#include "util/status.h"

namespace pg {
namespace {

// The backend declined this call (PG_ERR_UNSUPPORTED before it communicated):
// the device default runs it, that call alone; pg_strategy_describe names the
// collective as declined.
pg_status reroute(pg_strategy *s, Coll coll, Instance **out) {
  PG_CHECK(ensure_fallback(s));
  s->delegated.set(static_cast<int>(coll));
  *out = s->fallback.get();
  trace::annotate_fallback();
  return PG_OK;
}

pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a);

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
  if (a.coll == Coll::sendrecv && !inst->backend->implements(Coll::sendrecv)) return compose_sendrecv(s, a);
  return inst->backend->run(a);
}

// Runs on the routed instance; a collective the backend declines runs on the
// device default. Point-to-point is never rerouted call by call: the peer
// would wait on the other communicator.
pg_status run_routed(pg_strategy *s, const CollArgs &a) {
  Instance *inst = nullptr;
  PG_CHECK(route(s, a.coll, &inst));
  pg_status st = run_on(s, inst, a);
  if (st == PG_ERR_UNSUPPORTED && inst == s->primary.get() && !is_point_to_point(a.coll) &&
      s->selection.backend != default_backend(s->device)) {
    PG_CHECK(reroute(s, a.coll, &inst));
    st = run_on(s, inst, a);
  }
  if (st == PG_ERR_UNSUPPORTED)
    return fail(st, "backend '%s' does not run %s on %s (op %s) and no other backend can",
                inst->name.c_str(), coll_name(a.coll), dtype_name(a.dtype), op_name(a.op));
  return st;
}

// A backend with send and recv but no sendrecv: the send goes asynchronously
// (progress thread at MPI_THREAD_MULTIPLE, else before the receive).
pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a) {
  CollArgs send = a, recv = a;
  send.coll = Coll::send;
  recv.coll = Coll::recv;
  recv.count = a.recv_count;
  recv.peer = a.source;
  pg_work *w = nullptr;
  PG_CHECK(start(s, send, PG_OK, &w));
  pg_status st = run_blocking(s, recv, s->sequence);
  pg_status sent = work_wait(w, -1);
  work_free(w);
  return st != PG_OK ? st : sent;
}

// Whether this thread has started works that have not finished, on any strategy.
bool thread_has_started_works() {
  bool any = false;
  const std::thread::id me = std::this_thread::get_id();
  runtime::for_each_live([&](pg_strategy *s) {
    if (any || s->driver.load(std::memory_order_relaxed) != me) return;
    std::lock_guard<std::mutex> lock(s->works_mutex);
    any = std::any_of(s->works.begin(), s->works.end(),
                      [](const auto &entry) { return moved_by_starter(entry.second); });
  });
  return any;
}

// A blocking call into a backend that does not poll (a table's) would leave
// the works this thread started unmoved while it runs, and a peer may wait for
// one of them before it comes to this call (a rendezvous send needs its
// sender to call MPI; a point-to-point work is not finished before a
// collective). At MPI_THREAD_MULTIPLE such a collective runs on the progress
// thread while this thread waits for it, advancing them. (Not point-to-point:
// a composed sendrecv queues its send on that thread.)
bool needs_beside(pg_strategy *s, const CollArgs &a) {
  // What the device default serves polls; routing to it could make it (collectively).
  if (s->primary_polls || is_point_to_point(a.coll) || delegates(s, a.coll)) return false;
  return runtime::thread_level() == MPI_THREAD_MULTIPLE && thread_has_started_works();
}

pg_status run_beside(pg_strategy *s, const CollArgs &a, std::uint64_t trace_seq) {
  pg_work w;  // the call's own, in no strategy's list
  const std::uint64_t sequence = s->sequence;
  s->progress.submit([s, &w, a, sequence, trace_seq] {
    CancelScope abortable(&s->aborted, s->alarm.get());
    trace::Current current(s->trace.get(), trace_seq);
    end_work(&w, run_blocking(s, a, sequence), last_error());
  });
  wait_work(&w, -1);
  { std::lock_guard<std::mutex> lock(w.mutex); }  // end_work() lets go of it first
  return w.status == PG_OK ? PG_OK : fail_message(w.status, w.error);
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

pg_status instance_for(pg_strategy *s, Coll coll, Instance **out) {
  if (delegates(s, coll)) {
    PG_CHECK(ensure_fallback(s));
    *out = s->fallback.get();
  } else {
    *out = s->primary.get();
  }
  return PG_OK;
}

pg_status route(pg_strategy *s, Coll coll, Instance **out) {
  PG_CHECK(instance_for(s, coll, out));
  if (*out != s->primary.get()) trace::annotate_fallback();
  return PG_OK;
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
  keep_stage_if_failed(st, &stage);
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

pg_status run(pg_strategy *s, const CollArgs &args, pg_status local) {
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status checked = check_call(s, args, local, false);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args));
  if (checked != PG_OK || trivial(args)) return op.end(checked);
  // Blocking collectives run after the work started before them; blocking
  // point-to-point calls after the point-to-point work queued before them
  // has been posted (MPI matches in posting order).
  if (is_point_to_point(args.coll)) {
    s->progress.drain_point_to_point(advance_thread_works);
  } else {
    s->progress.drain(advance_thread_works);
    wait_started(s);
  }
  trace::Current current(s->trace.get(), op.seq());
  if (needs_beside(s, args)) return op.end(run_beside(s, args, op.seq()));
  return op.end(run_blocking(s, args, s->sequence));
}

}  // namespace pg
