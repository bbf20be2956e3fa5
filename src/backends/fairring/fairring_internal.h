// Declarations shared by fairring's algorithm files.
#pragma once

#include <memory>

#include "backends/fairring/plan.h"

namespace pg::fairring {

// allreduce_leaders.cpp: starts the leaders' allreduce. `node` runs on the
// node communicator, `rail` on this rank's rail (rail 0 holds every node's
// first rank); `fail_across`: testing, this rank's step across nodes fails
// (PGS_FAIRRING_FAULT).
pg_status start_leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail, bool fail_across,
                        std::unique_ptr<Request> *out);

}  // namespace pg::fairring
