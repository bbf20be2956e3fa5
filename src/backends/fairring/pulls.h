// How a node's ranks copy what a peer has just written (a split allreduce's
// blocks on the fast path, the hierarchical path's shards): four pages at a
// time (pull_pages, util/copy.h) or memcpy. Which is faster depends on how
// the CPU moves lines between its cores, which hwloc does not report: on the
// Intel Xeon of docs/performance.md by pages took 0.9 of memcpy's time, on
// the AMD EPYC 1.1. So it is measured when a strategy is made.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "backends/fairring/settings.h"

namespace pg::fairring {

struct PullRule {
  std::size_t pages_up_to = 0;  // messages up to this many bytes are pulled by pages; 0: none
  std::string why;              // for pg_strategy_describe
};

// The node's rule, the same on every rank of it. By pages only where the CPU
// can (AVX2) and up to half a core's share of the L2 (`l2_per_core`, 0: not
// known, never): an input and a result in cache together, else the pull's
// stores read lines that memcpy's large copies skip (on the Intel Xeon, 2 MiB
// of L2 a core, by pages ran 2-16 MiB 2-5 % slower). Within that, `given`
// decides (PGS_FAIRRING_PULL), or with Pull::measure the node's first two
// ranks time both ways on a block their size in turns, and by pages is
// chosen where its median is the lower (memcpy, untimed, where the host's
// ranks outnumber its CPUs). Collective over node_comm.
pg_status choose_pulls(MPI_Comm node_comm, Pull given, std::size_t l2_per_core, PullRule *out);

}  // namespace pg::fairring
