#include "core/engine.h"

#include <algorithm>

#include "core/dispatch.h"
#include "core/runtime.h"
#include "core/strategy.h"
#include "core/trace.h"
#include "util/keep_alive.h"
#include "util/poll.h"
#include "util/status.h"

namespace pg {
namespace {

std::atomic<int> g_in_flight{0};  // unfinished works of every strategy

using Step = pg_work::Step;

Step step_of(const pg_work *w) { return w->step.load(std::memory_order_acquire); }

// A blocking entry with no thread of its call to run it: the lane's worker does.
bool worker_runs(const pg_work *w) { return w->runner == std::thread::id(); }

}  // namespace

LaneKind lane_of(Coll coll) {
  if (coll == Coll::send) return LaneKind::sends;
  if (coll == Coll::recv) return LaneKind::receives;
  return LaneKind::collectives;
}

void Lane::take() {
  while (!try_take()) std::this_thread::yield();  // passes are short; a running entry gives the turn
}

void Lane::submit(pg_work *w) {
  take();
  if (w->runs_entry && worker_runs(w)) to_run_.fetch_add(1);
  works_.push_back(w);
  unfinished_.fetch_add(1, std::memory_order_release);
  g_in_flight.fetch_add(1, std::memory_order_relaxed);
  pass_held(false);
  give();
}

void Lane::pass(bool run_entries) {
  if (empty() || !try_take()) return;
  pass_held(run_entries);
  give();
}

// Under the turn: tests the started works, begins the queued ones whose turn
// came, publishes the ended ones. A blocking entry runs here only on its
// runner's thread (its call's, or the lane's worker) and when the pass may run
// one: a wait's or the worker's, never the progress hook's (the entry's own
// waits call the hook).
void Lane::pass_held(bool run_entries) {
  if (runtime::finalizing()) {
    // MPI may not be called any more: the requests are given up, not tested
    // (destroying a request makes no MPI call once MPI is finalized).
    fail(PG_ERR_STATE, "MPI was finalized before this work finished; it can no longer finish");
    return end_unfinished(PG_ERR_STATE);
  }
  const std::thread::id me = std::this_thread::get_id();
  for (bool again = true; again;) {
    again = false;
    bool begun = true, ended = true;  // every work before the one at hand: started or ended; ended
    for (pg_work *w : works_) {
      if (step_of(w) == Step::started) test(w);
      if (step_of(w) == Step::queued) {
        if (!begun) break;
        begin(w);
        if (step_of(w) == Step::queued) {  // its blocking entry, after every work before it
          if (!ended) break;
          if (!run_entries || (w->runner != me && !(worker_runs(w) && on_worker()))) {
            if (worker_runs(w)) wake_worker();
            break;  // else its caller runs it, at its next pass
          }
          run_entry(w);
          again = true;  // other passes may have changed the lane meanwhile
          break;
        }
      }
      const Step step = step_of(w);
      begun = begun && (step == Step::started || step == Step::ended);
      ended = ended && step == Step::ended;
    }
    publish();
  }
}

void Lane::begin(pg_work *w) {
  pg_status st = s_->aborted.load() ? aborted()  // queued before pg_strategy_abort: it was in flight
                                    : check_usable(coll_name(w->args.coll), s_);
  if (st != PG_OK) {
    if (w->runs_entry && worker_runs(w)) to_run_.fetch_sub(1);
    return end(w, st);
  }
  if (w->runs_entry) return;
  trace::Current current(s_->trace.get(), w->trace_seq);
  st = start_routed(s_, w->args, &w->request);
  if (st == PG_OK) {
    if (kind_ == LaneKind::collectives && s_->settings.timeout_s > 0)
      w->watch = {watchdog::now_ns(), w->sequence, w->args.coll};
    return w->step.store(Step::started, std::memory_order_release);
  }
  if (st != PG_ERR_UNSUPPORTED) return end(w, poison_on_failure(s_, st));
  w->runs_entry = true;
  if (worker_runs(w)) to_run_.fetch_add(1);
}

void Lane::test(pg_work *w) {
  bool done = false;
  const pg_status st = w->request->test(&done);
  if (!done && st == PG_OK) return;
  if (st == PG_OK) w->source = w->request->source();
  end(w, poison_on_failure(s_, st));
}

// The turn is given while the entry runs: the other threads' passes go on,
// and find this work running, so they begin nothing after it.
void Lane::run_entry(pg_work *w) {
  if (worker_runs(w)) to_run_.fetch_sub(1);
  w->step.store(Step::running, std::memory_order_release);
  give();
  pg_status st;
  {
    CancelScope abortable(&s_->aborted, s_->alarm.get());
    trace::Current current(s_->trace.get(), w->trace_seq);
    st = run_blocking(s_, w->args, w->sequence);
  }
  take();
  end(w, st);
}

// A failed work's input and request are kept: MPI may still read or write them.
void Lane::end(pg_work *w, pg_status st) {
  w->status = st;
  if (st != PG_OK) {
    w->error = last_error();
    if (w->request) keep_until_exit(std::shared_ptr<Request>(std::move(w->request)));
    if (!w->stage.empty()) keep_until_exit(std::make_shared<std::vector<char>>(std::move(w->stage)));
  }
  w->request.reset();
  if (w->trace_seq && s_->trace) s_->trace->end(w->trace_seq, st);
  w->step.store(Step::ended, std::memory_order_release);
}

// Collectives in issue order, sends and receives as they end. Setting
// `finished` is the last touch: the work may be freed at once.
void Lane::publish() {
  if (kind_ == LaneKind::collectives) {
    while (!works_.empty() && step_of(works_.front()) == Step::ended) {
      pg_work *w = works_.front();
      works_.pop_front();
      finish(w);
    }
    return;
  }
  for (auto it = works_.begin(); it != works_.end();) {
    if (step_of(*it) != Step::ended) {
      ++it;
      continue;
    }
    pg_work *w = *it;
    it = works_.erase(it);
    finish(w);
  }
}

void Lane::finish(pg_work *w) {
  unfinished_.fetch_sub(1, std::memory_order_release);
  g_in_flight.fetch_sub(1, std::memory_order_relaxed);
  w->finished.store(true, std::memory_order_release);
}

// Under the turn: w, which is not running, ends with `st` and is published at
// once, out of issue order (not after the works before it).
void Lane::give_up_held(std::deque<pg_work *>::iterator it, pg_status st) {
  pg_work *w = *it;
  if (step_of(w) == Step::queued && w->runs_entry && worker_runs(w)) to_run_.fetch_sub(1);
  if (step_of(w) != Step::ended) end(w, st);
  works_.erase(it);
  finish(w);
}

void Lane::end_unfinished(pg_status st) {
  for (auto it = works_.begin(); it != works_.end();) {
    if (step_of(*it) == Step::running) {
      ++it;
      continue;
    }
    const std::ptrdiff_t at = it - works_.begin();
    give_up_held(it, st);
    it = works_.begin() + at;
  }
}

bool Lane::give_up(pg_work *w, pg_status st) {
  take();
  const auto it = std::find(works_.begin(), works_.end(), w);
  const bool running = it != works_.end() && step_of(w) == Step::running;
  if (it != works_.end() && !running) give_up_held(it, st);
  give();
  return !running;
}

void Lane::give_up_all(pg_status st) {
  take();
  end_unfinished(st);
  give();
}

watchdog::Watch Lane::oldest_watch() {
  watchdog::Watch watch;
  if (empty() || !try_take()) return watch;  // not overdue this round
  for (const pg_work *w : works_)
    if (step_of(w) == Step::started && w->watch.started_ns != 0) {
      watch = w->watch;
      break;
    }
  give();
  return watch;
}

void Lane::wake_worker() {
  std::lock_guard<std::mutex> lock(worker_mutex_);
  if (!worker_.joinable()) {
    stopping_ = false;
    worker_done_ = false;
    worker_ = std::thread(&Lane::work, this);
  }
  worker_wake_.notify_one();
}

// Passes while a blocking entry waits to run (moving the works before it,
// which it waits for), then sleeps until a pass wakes it.
void Lane::work() {
  worker_id_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(worker_mutex_);
  while (true) {
    worker_wake_.wait(lock, [this] { return stopping_ || to_run_.load() > 0; });
    if (to_run_.load() == 0) break;  // stopping, and nothing left to run
    lock.unlock();
    Backoff backoff;
    while (to_run_.load() > 0) {
      pass(true);
      backoff.idle();
    }
    lock.lock();
  }
  worker_id_.store(std::thread::id(), std::memory_order_relaxed);  // ids are reused
  worker_done_ = true;
}

void Lane::stop() {
  {
    std::lock_guard<std::mutex> lock(worker_mutex_);
    if (!worker_.joinable()) return;
    stopping_ = true;
    worker_wake_.notify_one();
  }
  worker_.join();
}

bool Lane::abandon(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(worker_mutex_);
  if (!worker_.joinable()) return true;
  stopping_ = true;
  worker_wake_.notify_one();
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!worker_done_ && std::chrono::steady_clock::now() < until) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lock.lock();
  }
  if (!worker_done_) {
    worker_.detach();  // stuck in a custom backend's blocking entry
    return false;
  }
  lock.unlock();
  worker_.join();
  return true;
}

Engine::Engine(pg_strategy *s) : s_(s) {
  set_progress_hook(pass_everything);
  for (int k = 0; k < kLanes; ++k) lanes_[k] = std::make_unique<Lane>(s, static_cast<LaneKind>(k));
}

void Engine::pass(bool run_entries) {
  for (const auto &lane : lanes_) lane->pass(run_entries);
}

pg_status Engine::wait(pg_work *w, double timeout_s) {
  Until until;
  until.timeout_s = timeout_s;
  if (s_->settings.timeout_s > 0)
    until.check = [this] { watchdog::abort_if_overdue(s_, lane(LaneKind::collectives).oldest_watch()); };
  bool done = false;
  const pg_status st = poll(
      [&](bool *d) {
        pass(true);
        *d = w->finished.load(std::memory_order_acquire);
        return PG_OK;
      },
      until, &done);
  if (done) return PG_OK;
  if (st == PG_OK) return PG_ERR_TIMEOUT;
  const std::string why = last_error();
  lane_of(*w).give_up(w, poison_on_failure(s_, fail_message(st, why)));
  return fail_message(st, why);
}

pg_status Engine::wait_collectives() {
  Lane &collectives = lane(LaneKind::collectives);
  bool done = collectives.empty();
  if (done) return PG_OK;
  return poll(
      [&](bool *d) {
        pass(true);
        *d = collectives.empty();
        return PG_OK;
      },
      Until{}, &done);
}

void Engine::hold(pg_work *w) {
  std::lock_guard<std::mutex> lock(held_mutex_);
  w->order = started_++;
  held_.emplace(w->order, w);
}

void Engine::release(pg_work *w) {
  std::lock_guard<std::mutex> lock(held_mutex_);
  held_.erase(w->order);
}

pg_status Engine::finish_held() {
  std::vector<pg_work *> works;
  {
    std::lock_guard<std::mutex> lock(held_mutex_);
    for (const auto &entry : held_) works.push_back(entry.second);
  }
  pg_status result = PG_OK;
  std::string why;
  for (pg_work *w : works) {
    pg_status st = wait(w, -1);
    if (st == PG_OK && w->status != PG_OK) st = fail_message(w->status, w->error);
    if (st != PG_OK && result == PG_OK) result = st, why = last_error();
  }
  return result == PG_OK ? PG_OK : fail_message(result, why);
}

void Engine::give_up_all(pg_status st) {
  const std::string why = last_error();
  for (const auto &lane : lanes_) {
    fail_message(st, why);
    lane->give_up_all(st);
  }
}

void Engine::detach_held() {
  std::lock_guard<std::mutex> lock(held_mutex_);
  for (const auto &entry : held_) entry.second->strategy = nullptr;
  held_.clear();
}

void Engine::stop() {
  for (const auto &lane : lanes_) lane->stop();
}

bool Engine::abandon(std::chrono::milliseconds wait) {
  bool all = true;
  for (const auto &lane : lanes_) all = lane->abandon(wait) && all;
  return all;
}

int Engine::in_flight() { return g_in_flight.load(std::memory_order_relaxed); }

void pass_everything() {
  if (Engine::in_flight() == 0) return;
  runtime::for_each_live([](pg_strategy *s) { s->engine.pass(false); });
}

}  // namespace pg
