// Running an operation: check it, route it, start it, complete its work;
// each in its own file:
//
//   check.cpp     check_call: PGS_DEBUG=detail's cross-rank comparison of
//                 what every rank was asked to run (and the uneven counts).
//   route.cpp     run: which instance serves the call (the backend, or the
//                 device default for what it lacks or declines), ordering
//                 with the nonblocking work before it, poisoning.
//   start.cpp     start: a nonblocking operation started natively on the
//                 routed instance, or queued as a task.
//   complete.cpp  works: advance a started request, wait for it in start
//                 order, end it with its status; the progress hook.
//
// One vocabulary: a work is *advanced* (its request tested), *waited* for
// (advanced or watched until it finishes) and *ended* (its status recorded,
// its waiters woken).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/strategy.h"
#include "util/poll.h"

namespace pg {

// run and start: one operation. `local` is the result of this rank's
// argument checks: with PGS_DEBUG=detail it is agreed across ranks before
// anything runs.
pg_status run(pg_strategy *s, const CollArgs &args, pg_status local);
pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out);

// check.cpp. Counts the collective (s->sequence) and, under PGS_DEBUG=detail,
// compares it and `local` (this rank's argument checks) across ranks: a
// mismatch or a bad argument on any rank fails every rank.
pg_status check_call(pg_strategy *s, const CollArgs &a, pg_status local, bool nonblocking);

// route.cpp.
// Collectives on zero elements have nothing to do.
bool trivial(const CollArgs &a);
// The number a collective's flight-recorder entry shares with every rank.
std::uint64_t coll_seq(const pg_strategy *s, const CollArgs &a);
// The instance that serves `coll`: the device default for operations the
// backend lacks (made on first need), else the backend itself.
pg_status instance_for(pg_strategy *s, Coll coll, Instance **out);
// instance_for, the one place a call is routed: the flight recorder notes
// when the device default serves it.
pg_status route(pg_strategy *s, Coll coll, Instance **out);
// Below MPI_THREAD_MULTIPLE with PGS_TIMEOUT there is no watchdog thread: the
// caller's own polls check the collective it has in flight.
Until polled_by_caller(pg_strategy *s);
// In-place alltoall(v) on CPU memory is copied into *stage first.
void stage_alltoall(const pg_strategy *s, CollArgs *a, std::vector<char> *stage);
// The blocking body shared by run and queued nonblocking work.
pg_status run_blocking(pg_strategy *s, const CollArgs &args, std::uint64_t sequence);
// `st`, after a PG_ERR_BACKEND has poisoned the strategy and raised its alarm.
pg_status poison_on_failure(pg_strategy *s, pg_status st);
// PG_ERR_BACKEND naming the rank, and the strategy poisoned, when this rank's
// node knows that a peer failed or aborted (core/alarm.h): every call that
// would wait for its peers checks it first, in the CancelScope that ends its
// waits when the alarm comes later.
pg_status check_peers(pg_strategy *s);

// complete.cpp.
// A work its starting thread advances: started natively, not adopted by a
// queued task, not finished.
bool moved_by_starter(const pg_work *w);
// Records w's end with `st` (and its message) and wakes its waiters.
void end_work(pg_work *w, pg_status st, const std::string &error);
// Advances w's request until it finishes or `timeout_s` passes (< 0: until it
// finishes); true when it has finished.
bool advance(pg_work *w, double timeout_s);
// Waits for w up to `timeout_s` (< 0: until it finishes), advancing it when
// this thread moves it; true when it has finished.
bool wait_work(pg_work *w, double timeout_s);
// Waits for the strategy's started nonblocking collectives, in start order.
// A blocking collective (a core one too: pg_mem_alloc, split) runs after them:
// waiting for them here keeps every rank's order the same whatever the
// backend (fairring's advance only when waited for).
void wait_started(pg_strategy *s);
// One round on the strategy's collectives this thread started: a peer may be
// waiting for one of them before it comes to the call this thread waits in.
void advance_started(pg_strategy *s);
// The progress hook (util/poll.h): advances the started works of the
// strategies the calling thread called into last.
void advance_thread_works();
// The calling thread becomes the one whose waits advance s's works (a
// strategy may pass from thread to thread); not the progress thread.
void claim(pg_strategy *s);
// A staged input (in-place alltoall) that MPI may still read: a call that
// failed or was aborted may have left its sends to MPI.
void keep_stage_if_failed(pg_status st, std::vector<char> *stage);
pg_status work_wait(pg_work *w, double timeout_s);
pg_status work_test(pg_work *w, int *done);
pg_status work_free(pg_work *w);
pg_status work_source(pg_work *w, int *source);

}  // namespace pg
