// Waiting for what a peer, MPI or the GPU moves: one loop for every wait of the
// library, with one back-off and, where the caller gives one, a check run at
// every round (the watchdog's deadline, docs/env.md, PGS_TIMEOUT).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>

#include "pg_strategy.h"
#include "util/status.h"

namespace pg {

// How a waiting thread uses its core, for the whole process (PGS_WAIT; the
// strategy's create chooses it, docs/performance.md "Waiting"). A wait spins
// for `spin_us`, while a peer running on another core is likely to answer
// soon; then it yields at every round until `budget_us`: a peer the scheduler
// put on this core (ranks left unbound, more runnable threads than cores) runs
// at once, and a yield with nothing else runnable here returns at once; past
// the budget the thread naps, so that its core goes idle and the scheduler
// can run a peer, or a stranger, there.
struct WaitRule {
  // How long a wait spins before it yields, where the host's ranks do not
  // outnumber its CPUs (measured in docs/performance.md).
  static constexpr double kSpinUs = 20;
  double spin_us = kSpinUs;  // 0: yields from the start; >= budget_us: never yields
  double budget_us = 10000;
};
void set_wait_rule(const WaitRule &rule);

// One wait, by the rule: moved() starts it again (the peer answered).
class Backoff {
 public:
  void moved() { since_ns_ = 0, rounds_ = 0, yielding_ = false; }
  void idle();

 private:
  long long since_ns_ = 0;  // when this wait began; 0: not begun
  unsigned rounds_ = 0;
  bool yielding_ = false;  // past the rule's spin_us
};

// How long a poll may go on, besides until it is done.
struct Until {
  double timeout_s = -1;  // < 0: no deadline of its own
  // Run at every round that found nothing done; may end the job (the
  // watchdog, when the caller polls below MPI_THREAD_MULTIPLE).
  std::function<void()> check;
};

// What a wait learns about the other ranks: a peer that failed or aborted
// (core/alarm.h). Checked every kWatchRounds rounds of a wait and at its last
// round, so a wait that ends at once never pays for it.
class PeerWatch {
 public:
  static constexpr unsigned kWatchRounds = 64;
  virtual ~PeerWatch() = default;
  // PG_OK, or PG_ERR_BACKEND naming the rank that failed or aborted.
  virtual pg_status check() = 0;
};

// A thread's way out of its waits: while a CancelScope is alive, every wait of
// the thread ends with PG_ERR_ABORTED once `flag` is set (pg_strategy_abort
// sets its strategy's, from any thread), or with the status `peers` reports
// once a peer failed. Scopes nest.
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool> *flag, PeerWatch *peers = nullptr);
  ~CancelScope();
  CancelScope(const CancelScope &) = delete;
  CancelScope &operator=(const CancelScope &) = delete;

 private:
  const std::atomic<bool> *previous_flag_;
  PeerWatch *previous_peers_;
};
pg_status aborted();

// What a waiting thread does for the rest of the process every
// PeerWatch::kWatchRounds rounds: it moves the other works it started (the
// core's, which may move only when tested), since a peer may wait for one of
// them while this thread waits for that peer.
using ProgressHook = void (*)();
void set_progress_hook(ProgressHook hook);

// One wait's view of its thread's CancelScope, read once as the wait starts
// (a thread-local is a call away in a shared library). Every loop that waits
// for a peer, MPI or the GPU asks it at each round that found nothing done.
// Rounds are counted per thread, across waits: a caller's loop of one-round
// waits (pg_work_test) moves the thread's other works too.
class Interruption {
 public:
  Interruption();
  ~Interruption();
  Interruption(const Interruption &) = delete;
  Interruption &operator=(const Interruption &) = delete;
  // Why the wait must end now (PG_ERR_ABORTED, or the peers' status), PG_OK
  // to go on. `last`: the wait gives up after this round (its deadline).
  pg_status check(bool last = false) {
    if (flag_ && flag_->load(std::memory_order_relaxed)) return aborted();
    const bool turn = ++rounds_ % PeerWatch::kWatchRounds == 0;
    if (turn) move_others();
    if (peers_ && (last || turn)) return peers_->check();
    return PG_OK;
  }

 private:
  static void move_others();
  const std::atomic<bool> *flag_;
  PeerWatch *peers_;
  unsigned rounds_;
};

// Calls test(&done) until done or a failure, and returns its status; or
// until the deadline, returning PG_OK with *done false; or until the
// thread's waits are interrupted (PG_ERR_ABORTED, or a peer's failure).
template <typename Test>
pg_status poll(Test &&test, const Until &until, bool *done) {
  // The clock is read only for a deadline.
  std::chrono::steady_clock::time_point deadline;
  if (until.timeout_s >= 0)
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(until.timeout_s));
  Interruption interruption;
  Backoff backoff;
  while (true) {
    *done = false;
    const pg_status st = test(done);
    if (*done || st != PG_OK) return st;
    const bool last = until.timeout_s >= 0 && std::chrono::steady_clock::now() >= deadline;
    PG_CHECK(interruption.check(last));
    if (until.check) until.check();
    if (last) return PG_OK;
    backoff.idle();
  }
}

}  // namespace pg
