// The entry of every operation: a blocking call is a work waited for, a
// nonblocking call a work handed to the caller (core/engine.h); and the calls
// on a pg_work.
#include <memory>
#include <string>
#include <thread>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "util/keep_alive.h"
#include "util/status.h"

namespace pg {
namespace {

// A blocking call whose lane is empty runs at once on the calling thread: what
// its work would do, without the work. Not a table backend's blocking entry
// while works are in flight that a peer may need this process to move first
// (a table's call does not come back to the library's polls, which move them):
// at MPI_THREAD_MULTIPLE the lane's worker runs it, while this thread waits
// and moves them. A sendrecv runs at once where the instance has one; else it
// is a send and a receive, each in its lane.
bool runs_at_once(pg_strategy *s, const CollArgs &a) {
  const bool sendrecv = a.coll == Coll::sendrecv;
  if (sendrecv && !instance_for(s, a.coll)->backend->implements(Coll::sendrecv)) return false;
  if (Engine::in_flight() == 0) return true;  // nothing in flight anywhere: its lanes are empty too
  const bool empty = sendrecv ? s->engine.lane(LaneKind::sends).empty() && s->engine.lane(LaneKind::receives).empty()
                              : s->engine.lane(lane_of(a.coll)).empty();
  return empty && (polls(s, a.coll) || runtime::thread_level() < MPI_THREAD_MULTIPLE);
}

// A blocking collective runs its backend's blocking entry, as its twin run at
// once would, on its caller's thread where the backend's waits move the other
// works (core/engine.h). Below MPI_THREAD_MULTIPLE every entry runs on its caller's.
std::unique_ptr<pg_work> make_work(pg_strategy *s, const CollArgs &a, std::uint64_t trace_seq, bool blocking) {
  auto w = std::make_unique<pg_work>();
  w->strategy = s;
  w->args = a;
  w->sequence = coll_seq(s, a);
  w->trace_seq = trace_seq;
  w->runs_entry = blocking && !is_point_to_point(a.coll);
  if (runtime::thread_level() < MPI_THREAD_MULTIPLE || (blocking && polls(s, a.coll)))
    w->runner = std::this_thread::get_id();
  stage_alltoall(s, &w->args, &w->stage);
  return w;
}

// The status of a blocking call's work after its wait. A work whose blocking
// entry still runs (the wait was interrupted) is left to its lane.
pg_status settle(std::unique_ptr<pg_work> w, pg_status waited) {
  if (!w->finished) {
    keep_until_exit(std::shared_ptr<pg_work>(w.release()));
    return waited;
  }
  if (waited != PG_OK) return waited;
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status run_as_work(pg_strategy *s, const CollArgs &a, trace::Op *op) {
  std::unique_ptr<pg_work> w = make_work(s, a, op->seq(), true);
  op->keep();  // the work records its end
  s->engine.lane_of(*w).submit(w.get());
  const pg_status waited = s->engine.wait(w.get(), -1);
  return settle(std::move(w), waited);
}

pg_status sendrecv_as_works(pg_strategy *s, const CollArgs &a) {
  CollArgs send = a, recv = a;
  send.coll = Coll::send;
  recv.coll = Coll::recv;
  recv.count = a.recv_count;
  recv.peer = a.source;
  std::unique_ptr<pg_work> sending = make_work(s, send, 0, true), receiving = make_work(s, recv, 0, true);
  s->engine.lane_of(*sending).submit(sending.get());
  s->engine.lane_of(*receiving).submit(receiving.get());
  pg_status received = s->engine.wait(receiving.get(), -1);
  received = settle(std::move(receiving), received);
  const std::string why = last_error();
  pg_status sent = s->engine.wait(sending.get(), -1);
  sent = settle(std::move(sending), sent);
  return received != PG_OK ? fail_message(received, why) : sent;
}

}  // namespace

pg_status run(pg_strategy *s, const CollArgs &args, pg_status local) {
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status checked = check_call(s, args, local, false);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args));
  if (checked != PG_OK || trivial(args)) return op.end(checked);
  trace::Current current(s->trace.get(), op.seq());
  if (runs_at_once(s, args)) return op.end(run_blocking(s, args, s->sequence));
  if (args.coll == Coll::sendrecv) return op.end(sendrecv_as_works(s, args));
  return run_as_work(s, args, &op);
}

pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out) {
  *out = nullptr;
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status checked = check_call(s, args, local, true);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args), trace::kNonblocking);
  if (checked != PG_OK) return op.end(checked);
  std::unique_ptr<pg_work> w;
  if (trivial(args)) {
    w = std::make_unique<pg_work>();
    w->strategy = s;
    w->finished = true;
    op.end(PG_OK);
  } else {
    w = make_work(s, args, op.seq(), false);
    op.keep();
    s->engine.lane_of(*w).submit(w.get());
    // Below MPI_THREAD_MULTIPLE there is no worker: a blocking entry that
    // could not run yet (after works still in flight) runs before the call returns.
    if (runtime::thread_level() < MPI_THREAD_MULTIPLE && w->step.load() == pg_work::Step::queued) {
      const pg_status waited = s->engine.wait(w.get(), -1);
      if (waited != PG_OK) return settle(std::move(w), waited);
    }
    // A native start that failed fails the call: there is no work.
    if (w->finished && w->status != PG_OK && !w->runs_entry) return fail_message(w->status, w->error);
  }
  s->engine.hold(w.get());
  *out = w.release();
  return PG_OK;
}

pg_status work_wait(pg_work *w, double timeout_s) {
  if (!w->finished) {
    pg_strategy *s = w->strategy;
    if (!s) return fail(PG_ERR_STATE, "the work's strategy was destroyed before the work finished");
    CancelScope abortable(&s->aborted, s->alarm.get());
    const pg_status st = s->engine.wait(w, timeout_s);
    if (st == PG_ERR_TIMEOUT) return fail(st, "the work has not finished after %g s; wait again", timeout_s);
    PG_CHECK(st);
  }
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status work_test(pg_work *w, int *done) {
  pg_status st = PG_OK;
  if (!w->finished && w->strategy) {
    CancelScope abortable(&w->strategy->aborted, w->strategy->alarm.get());
    st = w->strategy->engine.wait(w, 0);
  }
  *done = w->finished;
  if (*done) return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
  return st == PG_ERR_TIMEOUT ? PG_OK : st;  // not finished yet is not a failure: the last error stays
}

pg_status work_source(pg_work *w, int *source) {
  if (!w->finished) return fail(PG_ERR_STATE, "pg_work_source: the work has not finished; wait for it first");
  if (w->source < 0)
    return fail(PG_ERR_STATE, "pg_work_source: the work is not a receive whose sender is known");
  *source = w->source;
  return PG_OK;
}

pg_status work_free(pg_work *w) {
  if (!w->finished && w->strategy) w->strategy->engine.pass(false);
  if (!w->finished) return fail(PG_ERR_STATE, "the work has not finished; wait for it before freeing it");
  if (w->strategy) w->strategy->engine.release(w);
  delete w;
  return PG_OK;
}

}  // namespace pg
