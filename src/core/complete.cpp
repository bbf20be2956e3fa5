// The works of nonblocking operations: advancing a started request, waiting
// for it in start order, ending it with its status; and the progress hook
// that lets a waiting thread advance the other works it started.
#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "util/keep_alive.h"
#include "util/status.h"

namespace pg {
namespace {

// Polls a native work until it finishes or `timeout_s` passes (< 0: forever).
// With PGS_TIMEOUT the watchdog's deadline applies too. Sets *done.
pg_status poll_native(pg_work *w, double timeout_s, bool *done) {
  pg_strategy *s = w->strategy;
  const bool watched = s && s->settings.timeout_s > 0 && w->watch.started_ns != 0;
  if (timeout_s < 0 && !watched) {
    *done = true;
    return w->native->wait();
  }
  Until until;
  until.timeout_s = timeout_s;
  if (watched) until.check = [s, w] { watchdog::abort_if_overdue(s, w->watch); };
  const pg_status st = poll([w](bool *d) { return w->native->test(d); }, until, done);
  if (st != PG_OK) *done = true;
  return st;
}

// Moves a native work on, until it finishes or `timeout_s` passes (< 0:
// until it finishes): true when it has finished. The thread that owns the
// work's request calls it (the caller's, or the progress thread once a queued
// task has adopted the work), or a wait of the thread that started it, one
// round (try_advance); w->driving is held meanwhile.
bool advance_held(pg_work *w, double timeout_s) {
  if (!w->finished && runtime::finalizing()) {
    // MPI may not be called any more: the request is given up, not tested
    // (destroying a request makes no MPI call once MPI is finalized).
    w->native.reset();
    end_work(w, PG_ERR_STATE, "MPI was finalized before this work finished; it can no longer finish");
  }
  if (!w->finished) {
    bool done = false;
    pg_status st = poll_native(w, timeout_s, &done);
    if (!done) return false;
    if (w->strategy) poison_on_failure(w->strategy, st);
    w->source = w->native->source();
    end_work(w, st, last_error());
  }
  return true;
}

// One round on a work that no thread polls now (a wait moving the thread's
// other works; the work this thread polls itself is left alone).
void try_advance(pg_work *w) {
  if (w->driving.exchange(true, std::memory_order_acquire)) return;
  advance_held(w, 0);
  w->driving.store(false, std::memory_order_release);
}

// Whether the calling thread moves w itself: started natively (at once, or
// handed over by its queued task) and not adopted by a queued task.
// Only a queued point-to-point work gets its request later, from the progress
// thread (hand_over): a collective's is set before the caller sees the work,
// so its waits and tests read it without the lock.
bool moved_here_locked(const pg_work *w) { return w->native && !w->adopted; }
bool moved_here(pg_work *w) {
  if (w->collective) return moved_here_locked(w);
  std::lock_guard<std::mutex> lock(w->mutex);
  return moved_here_locked(w);
}

// wait_work, after the collectives of its strategy started before w (works finish
// in start order; a rank waiting for a later one while its peers wait for an
// earlier one must not keep the earlier one from moving).
bool wait_in_order(pg_work *w, double timeout_s) {
  pg_strategy *s = w->strategy;
  if (!s || !w->collective) return wait_work(w, timeout_s);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s < 0 ? 0 : timeout_s);
  auto left = [&] {
    if (timeout_s < 0) return -1.0;
    const double d = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    return d > 0 ? d : 0.0;
  };
  for (const auto &[order, earlier] : s->works) {
    if (order >= w->order) break;
    if (earlier->collective && earlier->native && !earlier->finished && !wait_work(earlier, left())) return false;
  }
  return wait_work(w, left());
}

}  // namespace

bool moved_by_starter(const pg_work *w) { return moved_here_locked(w) && !w->finished; }

// advance_held, once no other thread polls the work (another thread's wait may
// be making one round on it).
bool advance(pg_work *w, double timeout_s) {
  while (w->driving.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  const bool finished = advance_held(w, timeout_s);
  w->driving.store(false, std::memory_order_release);
  return finished;
}

// Brings w up to date, waiting up to `timeout_s` (< 0: until it finishes);
// true when it has finished. A work this thread does not move (queued, or
// adopted by a queued task) is waited for, while this thread moves its other
// works every 200 us: the progress thread may be waiting for a peer that
// waits for one of them.
bool wait_work(pg_work *w, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::microseconds kMoveEvery{200};
  const Clock::time_point deadline =
      timeout_s < 0 ? Clock::time_point::max()
                    : Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (true) {
    if (moved_here(w)) {
      if (timeout_s < 0) return advance(w, -1);
      return advance(w, std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()));
    }
    if (w->finished || Clock::now() >= deadline) return w->finished;
    advance_thread_works();
    std::unique_lock<std::mutex> lock(w->mutex);
    const Clock::time_point next = std::min(deadline, Clock::now() + kMoveEvery);
    w->finished_cv.wait_until(lock, next, [w] { return w->finished.load() || moved_here_locked(w); });
  }
}

void advance_started(pg_strategy *s) {
  for (const auto &[order, w] : s->works)
    if (w->collective && moved_by_starter(w)) try_advance(w);
}

void claim(pg_strategy *s) {
  const std::thread::id me = std::this_thread::get_id();
  if (s->driver.load(std::memory_order_relaxed) != me && !s->progress.on_thread())
    s->driver.store(me, std::memory_order_relaxed);
}

// A thread that waits advances the started works of every strategy it
// started them on (collectives and point-to-point), other strategies' and
// those beside the one it waits for. fairring's fast path and schedule move
// only when tested, and MPI's requests only while the process calls MPI (a
// rendezvous send waits for its sender); a peer may be waiting for one of
// them while this thread waits for that peer.
void advance_thread_works() {
  thread_local bool moving = false;
  if (moving) return;
  moving = true;
  const std::thread::id me = std::this_thread::get_id();
  runtime::for_each_live([me](pg_strategy *s) {
    if (s->driver.load(std::memory_order_relaxed) != me) return;
    // Another thread that has taken the strategy over may be changing its works.
    std::unique_lock<std::mutex> lock(s->works_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return;
    CancelScope abortable(&s->aborted, s->alarm.get());  // that strategy's abort and alarm, not the wait's
    for (const auto &[order, w] : s->works)
      if (moved_by_starter(w)) try_advance(w);
  });
  moving = false;
}

void end_work(pg_work *w, pg_status st, const std::string &error) {
  std::lock_guard<std::mutex> lock(w->mutex);
  if (w->finished) return;  // an aborted strategy's destroy got there first
  if (w->trace_seq && w->strategy && w->strategy->trace) w->strategy->trace->end(w->trace_seq, st);
  w->status = st;
  if (st != PG_OK) w->error = error;
  w->finished = true;
  w->finished_cv.notify_all();
}

void keep_stage_if_failed(pg_status st, std::vector<char> *stage) {
  if (st != PG_OK && !stage->empty()) keep_until_exit(std::make_shared<std::vector<char>>(std::move(*stage)));
}

void wait_started(pg_strategy *s) {
  for (const auto &[order, w] : s->works)
    if (w->collective && w->native && !w->finished) wait_work(w, -1);
}

pg_status work_wait(pg_work *w, double timeout_s) {
  pg_strategy *s = w->strategy;
  if (s) claim(s);
  CancelScope abortable(s ? &s->aborted : nullptr, s ? s->alarm.get() : nullptr);
  if (!wait_in_order(w, timeout_s))
    return fail(PG_ERR_TIMEOUT, "the work has not finished after %g s; wait again", timeout_s);
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status work_test(pg_work *w, int *done) {
  pg_strategy *s = w->strategy;
  if (s) claim(s);
  CancelScope abortable(s ? &s->aborted : nullptr, s ? s->alarm.get() : nullptr);
  *done = wait_in_order(w, 0);  // an unfinished work is not a failure: the last error stays
  if (!*done || w->status == PG_OK) return PG_OK;
  return fail_message(w->status, w->error);
}

pg_status work_source(pg_work *w, int *source) {
  if (!w->finished) return fail(PG_ERR_STATE, "pg_work_source: the work has not finished; wait for it first");
  if (w->source < 0)
    return fail(PG_ERR_STATE, "pg_work_source: the work is not a receive whose sender is known");
  *source = w->source;
  return PG_OK;
}

pg_status work_free(pg_work *w) {
  if (!wait_work(w, 0)) return fail(PG_ERR_STATE, "the work has not finished; wait for it before freeing it");
  keep_stage_if_failed(w->status, &w->stage);
  if (w->strategy) {
    std::lock_guard<std::mutex> lock(w->strategy->works_mutex);
    w->strategy->works.erase(w->order);
  }
  // The thread that finished w may still be letting go of it: end_work() of
  // its lock, advance() of w->driving.
  { std::lock_guard<std::mutex> lock(w->mutex); }
  while (w->driving.load(std::memory_order_acquire)) std::this_thread::yield();
  delete w;
  return PG_OK;
}

}  // namespace pg
