// Declarations shared by fairring's algorithm files.
#pragma once

#include "backends/fairring/plan.h"

namespace pg::fairring {

// allreduce_leaders.cpp. `node` runs on the node communicator, `rail` on this
// rank's rail (rail 0 holds every node's first rank).
pg_status allreduce_leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail);

}  // namespace pg::fairring
