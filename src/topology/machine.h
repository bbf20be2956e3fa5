// The node as hwloc sees it, GPU/NIC locality, binding, and the launch
// environment. Implemented in src/topology/.
#pragma once

#include <mpi.h>

#include <string>

#include "core/params.h"
#include "topology/layout.h"

namespace pg::topology {

// Per-rank preparation at strategy creation (local, after the layout is built):
// loads the node topology once per process (PGS_TOPOLOGY_XML when set), applies
// PGS_BIND, and writes a one-line summary (binding, GPU, NIC) to *report.
// `cuda_index` is the CUDA device this rank uses, -1 for a CPU strategy.
pg_status prepare_rank(const params::Settings &settings, const Layout &layout, int cuda_index,
                       std::string *report);

// Compares the launcher's view of the job with MPI's (world size and rank) and
// warns once per process when they disagree (e.g. srun without --mpi=pmi2).
void check_launcher(MPI_Comm world);

}  // namespace pg::topology
