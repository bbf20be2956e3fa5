// PGS_TIMEOUT: a collective that has not finished in time is reported and the
// job aborted, because the user asked for it.
#pragma once

#include <cstdint>
#include <string>

#include "core/backend.h"

struct pg_strategy;

namespace pg::watchdog {

// One nonblocking collective the watchdog keeps an eye on.
struct Watch {
  std::int64_t started_ns = 0;  // 0: not watched
  std::uint64_t sequence = 0;
  Coll coll = Coll::barrier;
};

std::int64_t now_ns();
// Whether `watch` has run past PGS_TIMEOUT on s.
bool overdue(const pg_strategy *s, const Watch &watch);

// Marks the start and end of a collective on s (no-ops when PGS_TIMEOUT is off).
// At MPI_THREAD_MULTIPLE a watchdog thread watches the marks and aborts.
void begin(pg_strategy *s, Coll coll);
void end(pg_strategy *s);
// Below MPI_THREAD_MULTIPLE the calling thread polls instead: true when the
// collective in flight on s is past its deadline.
bool expired(const pg_strategy *s);
// Reports the hung collective and aborts the job (each backend's abort, e.g.
// ncclCommAbort, then MPI_Abort). Never returns.
[[noreturn]] void abort_job(pg_strategy *s);
[[noreturn]] void abort_job(pg_strategy *s, const Watch &watch);

}  // namespace pg::watchdog
