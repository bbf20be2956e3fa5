// How a block passes from one core to another on this node: where a rank
// reduces its block of a split allreduce (or its shard on the hierarchical
// path) before its peers copy it, and how they copy it. Which is faster
// depends on how the CPU moves lines between its cores, which hwloc does not
// report, so it is timed when a strategy is made (docs/algorithms.md,
// "Handing blocks over").
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "backends/fairring/settings.h"

namespace pg::fairring {

struct Handoff {
  // Reduced in the user's receive buffer, then copied to the shared slot
  // (memcpy's stores take the peers' copies of the slot's lines back
  // faster than a reduction's do, on some CPUs); else reduced in the slot.
  bool reduce_in_buffer = true;
  // Messages up to this many bytes pull the peers' blocks four pages at a
  // time (pull_pages); 0: all with memcpy.
  std::size_t pages_up_to = 0;
  std::string why;  // for pg_strategy_describe
  // Whether the node's ranks could time anything: several ranks, a
  // shared-memory path, a CPU each.
  bool timed = false;
  // On one node of two ranks a split reads as much from the peer as the
  // whole, for one more round of flags: where allreduces split from is timed
  // too, 4 KiB where a split 4 KiB allreduce is 5 % faster than a whole one,
  // else 8 KiB (Settings::split_bytes_for); 0 where that is not timed (other
  // layouts, PGS_FAIRRING_SPLIT_BYTES given, nothing timed).
  std::size_t split_bytes = 0;
  std::string split_why;  // for pg_strategy_describe
};

// The node's handoff, the same on every rank of it. By pages only where the
// CPU can (AVX2) and up to half a core's share of the L2 (`l2_per_core`, 0:
// not known, never): an input and a result in cache together, else the
// pull's stores read lines that memcpy's large copies skip (on the Intel
// Xeon, 2 MiB of L2 a core, by pages ran 2-16 MiB 2-5 % slower). Within
// that, settings.pull and settings.reduce decide (PGS_FAIRRING_PULL,
// PGS_FAIRRING_REDUCE), and what they leave to the machine is timed: the
// node's ranks run a 128 KiB allreduce on a fast path of their own each way
// in turns, and the way with the lowest median is kept, or the first way
// where that is within 5 % of the lowest (untimed, reduced in
// the buffer and pulled with memcpy, where the host's ranks outnumber its
// CPUs, or where the strategy has no shared-memory path: `shares` false).
// `l1d`: the L1 data cache (the fast path's places); `nodes`: the strategy's.
// Collective over node_comm.
pg_status choose_handoff(MPI_Comm node_comm, const Settings &settings, int nodes, bool shares, std::size_t l1d,
                         std::size_t l2_per_core, Handoff *out);

}  // namespace pg::fairring
