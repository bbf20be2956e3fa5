// The progress engine: how every operation of a strategy runs, from its start
// to its end (docs/architecture.md, "Running an operation").
//
// An operation is a *work* in one of three *lanes*, one for each order MPI
// keeps: collectives (issue order, the same on every rank), sends and
// receives (each in posting order: MPI's non-overtaking rule). The lanes never
// wait for each other, so a receive is never held behind a collective that its
// peer joins later. A work goes
//
//   queued --begin--> started --tested done--> ended --published--> finished
//   queued --begin--> running --returned-----> ended --published--> finished
//
// started: its backend's native start issued a request, which moves when
// tested. running: its backend's blocking entry runs on a thread; a blocking
// collective always runs its blocking entry (a nonblocking call does not
// match its blocking twin), and so does any call with no native start. A work
// begins once every work before it in its lane has started or ended (a native
// start), or has ended (a blocking entry: it posts nothing that a later work
// could overtake before it returns, and nothing begins beside it, so an
// instance runs one call of a lane at a time). Collectives are published in
// issue order, sends and receives as they end.
//
// One function moves a lane, Lane::pass: the thread that holds the lane's turn
// (one at a time; a thread that finds it taken goes on) tests the started
// works in order, begins the queued works whose turn came and publishes the
// ended ones. A pass never waits; it runs a blocking entry only on the entry's
// runner: the thread whose call it is, when that call is blocking and its
// backend's waits move the other works (util/poll.h), or below
// MPI_THREAD_MULTIPLE; else the lane's worker thread (a nonblocking call; a
// table backend's blocking call while works are in flight, since its entry
// holds its thread where nothing moves them). Who passes: a wait
// (Engine::wait) on its strategy at every round; the progress hook that every
// wait and backend poll calls each PeerWatch::kWatchRounds rounds, on every
// live strategy (it runs no entry: the entry's own waits call it); the lane's
// worker while an entry of its waits for its turn. Nothing else begins, tests
// or ends a work, and no pass calls back into a wait.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/watchdog.h"

struct pg_strategy;

// One operation (above). Its lane's turn guards it until it is published;
// afterwards it is read-only, and `finished` says so.
struct pg_work {
  enum class Step : int { queued, started, running, ended };

  pg_strategy *strategy = nullptr;  // NULL once its strategy is gone (destroy)
  pg::CollArgs args;                // what it runs (an in-place alltoall's input staged)
  std::uint64_t sequence = 0;       // a collective's number on its strategy (the watchdog's)
  std::uint64_t trace_seq = 0;      // its flight-recorder entry, which it ends; 0 when off
  std::uint64_t order = 0;          // start number of a nonblocking work on its strategy
  std::atomic<Step> step{Step::queued};
  // Its backend's blocking entry runs, not a native start: a blocking
  // collective (a nonblocking call does not match its blocking twin: every
  // rank must call the same entry), or no native start for it.
  bool runs_entry = false;
  std::thread::id runner;                 // the thread that runs that entry; none: the lane's worker
  std::unique_ptr<pg::Request> request;   // while started
  pg::watchdog::Watch watch;              // a started collective under PGS_TIMEOUT
  std::vector<char> stage;                // an in-place alltoall's input
  pg_status status = PG_OK;
  std::string error;
  int source = -1;                        // a received message's sender, when known
  std::atomic<bool> finished{false};      // published: the fields above are final
};

namespace pg {

enum class LaneKind : int { collectives, sends, receives };
constexpr int kLanes = 3;
// The lane of a work running `coll` (sendrecv is composed of a send and a
// receive, never a work of its own).
LaneKind lane_of(Coll coll);

class Lane {
 public:
  Lane(pg_strategy *s, LaneKind kind) : s_(s), kind_(kind) {}
  ~Lane() { stop(); }
  Lane(const Lane &) = delete;
  Lane &operator=(const Lane &) = delete;

  // No unfinished work: read without the turn (only the strategy's caller adds works).
  bool empty() const { return unfinished_.load(std::memory_order_acquire) == 0; }
  // Queues w and passes once (it may begin at once).
  void submit(pg_work *w);
  // One pass, unless another thread holds the turn; `run_entries`: it may run
  // a blocking entry whose runner this thread is.
  void pass(bool run_entries);
  // Ends w with `st` (its wait was interrupted: an abort, a failed peer),
  // unless its blocking entry is running; false then. Its request, which MPI
  // may still use, is kept until the process exits.
  bool give_up(pg_work *w, pg_status st);
  // Ends every work whose entry is not running with `st` (a destroy that
  // cannot wait for them).
  void give_up_all(pg_status st);
  // The oldest started collective's watch (the watchdog's deadline).
  watchdog::Watch oldest_watch();
  bool on_worker() const { return std::this_thread::get_id() == worker_id_.load(std::memory_order_relaxed); }
  // Joins the worker once its entry returns.
  void stop();
  // stop, if the worker's entry returns within `wait`; false (the worker
  // left running, detached) otherwise.
  bool abandon(std::chrono::milliseconds wait);

 private:
  // The turn: a flag, not a mutex, so that a thread that holds it and comes
  // back through the progress hook just finds it taken.
  bool try_take() { return !turn_.exchange(true, std::memory_order_acquire); }
  void take();
  void give() { turn_.store(false, std::memory_order_release); }

  void pass_held(bool run_entries);
  // w's turn came: started, ended (a failure), or left queued for its blocking entry.
  void begin(pg_work *w);
  void test(pg_work *w);
  void run_entry(pg_work *w);
  void end(pg_work *w, pg_status st);
  void publish();
  void finish(pg_work *w);
  void give_up_held(std::deque<pg_work *>::iterator it, pg_status st);
  void end_unfinished(pg_status st);
  void wake_worker();
  void work();

  pg_strategy *const s_;
  const LaneKind kind_;
  std::atomic<bool> turn_{false};
  std::deque<pg_work *> works_;  // unfinished, in issue order (under the turn)
  std::atomic<int> unfinished_{0};
  // The worker: started with the first blocking entry, runs them one at a time.
  std::mutex worker_mutex_;
  std::condition_variable worker_wake_;
  std::thread worker_;
  std::atomic<std::thread::id> worker_id_{};
  bool stopping_ = false;         // under worker_mutex_
  bool worker_done_ = false;      // under worker_mutex_
  std::atomic<int> to_run_{0};    // queued works whose blocking entry the worker must run
};

// A strategy's lanes, and its nonblocking works not yet freed.
class Engine {
 public:
  explicit Engine(pg_strategy *s);
  Lane &lane(LaneKind kind) { return *lanes_[static_cast<int>(kind)]; }
  Lane &lane_of(const pg_work &w) { return lane(pg::lane_of(w.args.coll)); }
  // Every lane, one pass each (the progress hook's run no entry).
  void pass(bool run_entries);
  // Waits for w, passing, up to `timeout_s` (< 0: until it finishes): PG_OK
  // once it finished, PG_ERR_TIMEOUT (no message: wait again), or why the
  // wait was interrupted (then w has ended with it, unless its entry runs).
  pg_status wait(pg_work *w, double timeout_s);
  // Waits until the collectives lane is empty: a collective the library runs
  // itself (pg_mem_alloc, split) comes after the collective works before it.
  pg_status wait_collectives();
  // A nonblocking work handed to the caller, until pg_work_free (`order` set here).
  void hold(pg_work *w);
  void release(pg_work *w);
  // Destroy: waits for each held work in start order (the first failure), or
  // when the strategy can no longer run them ends them with `st`.
  pg_status finish_held();
  void give_up_all(pg_status st);
  // The held works lose their strategy (it is being freed).
  void detach_held();
  void stop();
  bool abandon(std::chrono::milliseconds wait);
  // Unfinished works in the whole process.
  static int in_flight();

 private:
  pg_strategy *const s_;
  std::unique_ptr<Lane> lanes_[kLanes];
  std::mutex held_mutex_;
  std::map<std::uint64_t, pg_work *> held_;
  std::uint64_t started_ = 0;
};

// The progress hook (util/poll.h): a pass over every live strategy.
void pass_everything();

}  // namespace pg
