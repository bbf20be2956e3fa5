// PGS_TIMEOUT: a collective that has not finished in time is reported and the
// job aborted, because the user asked for it (docs/env.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/backend.h"

struct pg_strategy;

namespace pg::watchdog {

std::int64_t now_ns();

// One collective as the watchdog sees it.
struct Watch {
  std::int64_t started_ns = 0;  // 0: not watched
  std::uint64_t sequence = 0;
  Coll coll = Coll::barrier;
  bool unpolled = false;  // blocked in a backend's call, where its thread cannot poll
};

// The blocking collective in flight on one thread of one strategy (at most one:
// a strategy is used by one thread at a time, and its collectives lane's
// worker runs one entry at a time). Written by that thread, read by the
// watchdog's thread.
class Marks {
 public:
  void begin(std::uint64_t sequence, Coll coll);
  void end();
  Watch current() const;
  // The ranks known not to have arrived at the collective in flight ("" when
  // not known): the PGS_DEBUG=detail check records arrival.
  void set_missing(std::string ranks);
  std::string missing() const;
  // Below MPI_THREAD_MULTIPLE the caller polls; a backend call it cannot poll
  // (no native start) is watched by the watchdog's thread instead, which may
  // not call MPI then.
  void set_unpolled(bool unpolled) { unpolled_ = unpolled; }

 private:
  mutable std::mutex mutex_;  // guards missing_
  std::string missing_;
  std::atomic<std::int64_t> started_ns_{0};
  std::atomic<std::uint64_t> sequence_{0};
  std::atomic<int> coll_{0};
  std::atomic<bool> unpolled_{false};
};

// Whether `watch` has run past PGS_TIMEOUT on s.
bool overdue(const pg_strategy *s, const Watch &watch);
// The calling thread's marks on s (the caller's, or the progress thread's).
Marks &own_marks(pg_strategy *s);

// Marks a blocking collective on s for as long as it lives (nothing when
// PGS_TIMEOUT is off, or for point-to-point, which the watchdog does not watch). At MPI_THREAD_MULTIPLE a watchdog thread watches the
// marks and aborts; below it the calling thread polls (overdue, abort_job).
class Scope {
 public:
  // `sequence`: the collective's number on s (a queued one's was taken at its start).
  Scope(pg_strategy *s, Coll coll, std::uint64_t sequence);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

 private:
  Marks *marks_ = nullptr;
};

// Reports the hung collective and aborts the job (each backend's abort, e.g.
// ncclCommAbort, then MPI_Abort; without MPI when the watchdog's thread may not
// call it: the process ends, and its launcher ends the job). Never returns.
[[noreturn]] void abort_job(pg_strategy *s, const Watch &watch);

// While alive, the calling thread's collective on s runs a backend call it
// cannot poll (below MPI_THREAD_MULTIPLE with PGS_TIMEOUT): the watchdog's
// thread watches it.
class Unpolled {
 public:
  explicit Unpolled(pg_strategy *s);
  ~Unpolled();
  Unpolled(const Unpolled &) = delete;
  Unpolled &operator=(const Unpolled &) = delete;

 private:
  Marks *marks_;
};
// abort_job when `watch` is overdue; what a caller's poll checks at every round.
void abort_if_overdue(pg_strategy *s, const Watch &watch);

}  // namespace pg::watchdog
