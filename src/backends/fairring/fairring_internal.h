// Declarations shared by fairring's algorithm files.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/fairring/plan.h"

namespace pg::fairring {

// The order of one backend's leaders' allreduces. Each of their steps starts
// when the one before it has finished, which happens in a different order
// on each rank, and MPI needs every rank to start the collectives of a
// communicator in one order: so an allreduce starts only once the one before
// it has started its last step (the node's broadcast).
struct LeadersOrder {
  std::atomic<std::uint64_t> issued{0};        // allreduces made
  std::atomic<std::uint64_t> broadcasting{0};  // of those, the ones that started their broadcast
  std::atomic<bool> broken{false};             // one failed before it: the later ones cannot start
};

// allreduce_leaders.cpp: starts the leaders' allreduce. `node` runs on the
// node communicator, `rail` on this rank's rail (rail 0 holds every node's
// first rank); `fail_across`: testing, this rank's step across nodes fails
// (PGS_FAIRRING_FAULT).
pg_status start_leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail, LeadersOrder &order,
                        bool fail_across, std::unique_ptr<Request> *out);

}  // namespace pg::fairring
