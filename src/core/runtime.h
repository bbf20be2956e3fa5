// MPI ownership (include/pg_strategy.h, "MPI ownership") and the set of live strategies.
#pragma once

#include <functional>

#include "pg_strategy.h"

namespace pg::runtime {

// Initializes MPI (MPI_THREAD_MULTIPLE) if the application has not; the library
// then finalizes it at exit, after destroying live strategies. Checks once that
// the MPI library running is the one the library was built against.
pg_status ensure_mpi();
// MPI's thread level (valid after ensure_mpi).
int thread_level();
// MPI initialized and not yet finalized.
bool mpi_alive();
// MPI_Finalize has begun (cheap: one atomic load, for every call's checks).
bool finalizing();

// Live strategies, so that finalization can stop their threads first.
void track(pg_strategy *s);
void untrack(pg_strategy *s);  // nothing when s is not live
// Calls fn on s, with the set locked, if s is live (untrack waits for it).
void with_live(pg_strategy *s, const std::function<void(pg_strategy *)> &fn);
// Calls fn on each live strategy, with the set locked.
void for_each_live(const std::function<void(pg_strategy *)> &fn);

}  // namespace pg::runtime
