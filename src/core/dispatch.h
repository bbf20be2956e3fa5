// Running an operation (docs/architecture.md, "Running an operation"), in
// four files with one job each:
//
//   check.cpp   check_call: what every rank was asked to run, compared
//               across ranks under PGS_DEBUG=detail (and the uneven counts).
//   route.cpp   which instance runs a call (the selected backend, or the
//               device default), its blocking body, poisoning on failure.
//   engine.cpp  the works in their lanes: who begins, moves and ends each
//               (core/engine.h).
//   call.cpp    run and start: a blocking call and a nonblocking one on the
//               engine; the pg_work calls.
//
// They call each other in one direction: call -> check, engine, route;
// engine -> route.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine.h"
#include "core/strategy.h"
#include "util/poll.h"

namespace pg {

// call.cpp: one operation. `local` is the result of this rank's argument
// checks: with PGS_DEBUG=detail it is agreed across ranks before anything runs.
pg_status run(pg_strategy *s, const CollArgs &args, pg_status local);
pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out);
pg_status work_wait(pg_work *w, double timeout_s);
pg_status work_test(pg_work *w, int *done);
pg_status work_free(pg_work *w);
pg_status work_source(pg_work *w, int *source);

// check.cpp. Counts the collective (s->sequence) and, under PGS_DEBUG=detail,
// compares it and `local` (this rank's argument checks) across ranks: a
// mismatch or a bad argument on any rank fails every rank.
pg_status check_call(pg_strategy *s, const CollArgs &a, pg_status local, bool nonblocking);

// route.cpp.
// Collectives on zero elements have nothing to do.
bool trivial(const CollArgs &a);
// The number a collective's flight-recorder entry shares with every rank.
std::uint64_t coll_seq(const pg_strategy *s, const CollArgs &a);
// The instance that serves `coll`: the device default for the operations
// delegated to it, else the selected backend.
Instance *instance_for(const pg_strategy *s, Coll coll);
// instance_for, the one place a call is routed: the flight recorder notes
// when the device default serves it.
Instance *route(pg_strategy *s, Coll coll);
// Whether the instance that serves `coll` waits in the library's polls, which
// move the other works (util/poll.h's progress hook): the built-in backends.
bool polls(const pg_strategy *s, Coll coll);
// The routed instance's native start; PG_ERR_UNSUPPORTED when it has none.
pg_status start_routed(pg_strategy *s, const CollArgs &a, std::unique_ptr<Request> *out);
// The blocking body of a call, and of a work without a native start: a
// collective the backend declines runs on the device default.
pg_status run_blocking(pg_strategy *s, const CollArgs &args, std::uint64_t sequence);
// Below MPI_THREAD_MULTIPLE with PGS_TIMEOUT there is no watchdog thread: the
// caller's own polls check the collective it has in flight.
Until polled_by_caller(pg_strategy *s);
// In-place alltoall(v) on CPU memory is copied into *stage first.
void stage_alltoall(const pg_strategy *s, CollArgs *a, std::vector<char> *stage);
// `st`, after a PG_ERR_BACKEND has poisoned the strategy and raised its alarm.
pg_status poison_on_failure(pg_strategy *s, pg_status st);
// PG_ERR_BACKEND naming the rank, and the strategy poisoned, when this rank's
// node knows that a peer failed or aborted (core/alarm.h): every call that
// would wait for its peers checks it first, in the CancelScope that ends its
// waits when the alarm comes later.
pg_status check_peers(pg_strategy *s);

}  // namespace pg
