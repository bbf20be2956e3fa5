// Waiting for what a peer, MPI or the GPU moves: one loop for every wait of the
// library, with one back-off and, where a collective is watched, the
// watchdog's deadline (docs/env.md, PGS_TIMEOUT).
#pragma once

#include <chrono>
#include <functional>

#include "core/watchdog.h"

namespace pg {

// Spins briefly while nothing moves, then gives the core away: a rank that
// waits for a peer on an oversubscribed node must let the peer run.
class Backoff {
 public:
  void moved() { idle_ = 0; }
  void idle();

 private:
  int idle_ = 0;
};

// How long a poll may go on, besides until it is done.
struct Until {
  double timeout_s = -1;  // < 0: no deadline of its own
  // With a strategy: its watchdog ends the job once the collective `watch`
  // names has run past PGS_TIMEOUT (the caller polls below MPI_THREAD_MULTIPLE).
  pg_strategy *watched = nullptr;
  std::function<watchdog::Watch()> watch;
};

// Aborts the job when the watched collective is overdue (never returns then).
void check_watchdog(const Until &until);

// Calls test(&done) until done or a failure, and returns its status; or
// until the deadline, returning PG_OK with *done false.
template <typename Test>
pg_status poll(Test &&test, const Until &until, bool *done) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(until.timeout_s < 0 ? 0 : until.timeout_s);
  Backoff backoff;
  while (true) {
    *done = false;
    const pg_status st = test(done);
    if (*done || st != PG_OK) return st;
    check_watchdog(until);
    if (until.timeout_s >= 0 && std::chrono::steady_clock::now() >= deadline) return PG_OK;
    backoff.idle();
  }
}

}  // namespace pg
