// Starting a nonblocking operation: natively on its instance when nothing is
// queued before it, else as a task queued after the work started before it.
#include <memory>
#include <vector>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "util/status.h"

namespace pg {
namespace {

// A queued point-to-point operation started natively passes to its work once
// posted: MPI needs such operations posted in order, not finished in order,
// and one finished on the progress thread would hold back this rank's later
// calls, a peer's matching operation perhaps waiting for one of them (a send
// too large to go eagerly, a receive posted later). The thread that started
// it advances it from now on, as one started at once.
void hand_over(pg_strategy *s, pg_work *w, std::unique_ptr<Request> request) {
  std::lock_guard<std::mutex> works(s->works_mutex);
  std::lock_guard<std::mutex> lock(w->mutex);
  w->native = std::move(request);
  set_progress_hook(advance_thread_works);
  w->finished_cv.notify_all();  // a wait for the queued work now advances it itself
}

// The task of a nonblocking operation that could not start at once. It issues
// the same MPI calls as one started at once (the backend's native start, else
// its blocking entry), so whether this rank's queue was busy never changes
// what its peers must match. It ends w, or hands w's request over.
void run_queued(pg_strategy *s, pg_work *w, const CollArgs &a, std::uint64_t sequence) {
  std::unique_ptr<Request> request;
  Instance *inst = nullptr;
  pg_status st = s->aborted ? aborted()                         // queued before pg_strategy_abort: in flight
                            : check_usable(coll_name(a.coll), s);  // queued after a failure: does not run
  if (st == PG_OK) st = route(s, a.coll, &inst);
  if (st == PG_OK) st = inst->backend->start(a, &request);
  if (st == PG_ERR_UNSUPPORTED) return end_work(w, run_blocking(s, a, sequence), last_error());
  if (st == PG_OK && is_point_to_point(a.coll)) return hand_over(s, w, std::move(request));
  if (st == PG_OK) {
    watchdog::Scope watched(s, a.coll, sequence);
    st = request->wait();
  }
  end_work(w, poison_on_failure(s, st), last_error());
}

// The strategy's started native collectives that no queued task has adopted:
// a task queued now adopts them and advances them to their end before it
// runs; the caller's thread no longer tests them.
std::vector<pg_work *> adopt_started(pg_strategy *s) {
  std::vector<pg_work *> adopted;
  for (const auto &[order, w] : s->works)
    if (w->collective && moved_by_starter(w)) {
      w->adopted = true;
      adopted.push_back(w);
    }
  return adopted;
}

// Starts w's operation on its instance at once: PG_ERR_UNSUPPORTED when the
// instance has no native start for it.
pg_status start_native(pg_strategy *s, pg_work *w, const CollArgs &a) {
  Instance *inst = nullptr;
  PG_CHECK(route(s, a.coll, &inst));
  PG_CHECK(inst->backend->start(a, &w->native));
  if (!is_point_to_point(a.coll)) w->watch = {watchdog::now_ns(), s->sequence, a.coll};
  set_progress_hook(advance_thread_works);
  return PG_OK;
}

// Queues w's operation: it runs after the works started natively before it,
// which it advances to their end first: they may move only when tested
// (fairring's fast path), and it may wait for them (a later operation of the
// same kind). Below MPI_THREAD_MULTIPLE it runs now, on this thread.
void queue(pg_strategy *s, pg_work *w, const CollArgs &a) {
  w->native.reset();
  const std::vector<pg_work *> before = adopt_started(s);
  const std::uint64_t sequence = s->sequence;
  auto task = [s, w, a, sequence, before] {
    for (pg_work *earlier : before) advance(earlier, -1);
    run_queued(s, w, a, sequence);
  };
  if (runtime::thread_level() < MPI_THREAD_MULTIPLE) return task();
  s->progress.submit([s, w, task] {
    CancelScope abortable(&s->aborted, s->alarm.get());
    trace::Current current(s->trace.get(), w->trace_seq);
    task();
  }, is_point_to_point(a.coll));
}

}  // namespace

pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out) {
  *out = nullptr;
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status checked = check_call(s, args, local, true);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args), trace::kNonblocking);
  if (checked != PG_OK) return op.end(checked);
  auto w = std::make_unique<pg_work>();
  w->strategy = s;
  if (trivial(args)) {
    w->finished = true;
    op.end(PG_OK);
  } else {
    w->trace_seq = op.seq();  // its end is recorded when the work ends
    op.keep();
    trace::Current current(s->trace.get(), w->trace_seq);
    CollArgs a = args;
    stage_alltoall(s, &a, &w->stage);
    // A native start keeps the order only when nothing is queued before it.
    const pg_status st = s->progress.idle() ? start_native(s, w.get(), a) : PG_ERR_UNSUPPORTED;
    if (st == PG_ERR_UNSUPPORTED) {
      queue(s, w.get(), a);
    } else if (st != PG_OK) {
      if (s->trace) s->trace->end(w->trace_seq, st);
      return poison_on_failure(s, st);
    }
  }
  w->order = s->works_started++;
  w->collective = !is_point_to_point(args.coll);
  claim(s);
  {
    std::lock_guard<std::mutex> lock(s->works_mutex);
    s->works.emplace(w->order, w.get());
  }
  *out = w.release();
  return PG_OK;
}

}  // namespace pg
