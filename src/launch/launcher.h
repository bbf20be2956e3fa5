// The launch environment: which launcher started this process (Hydra, Open
// MPI, a Slurm step, torchrun) and what it says about the job, compared with
// MPI's view (docs/topology.md, "The launcher").
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace pg::launch {

struct Launcher {
  std::string name;  // "hydra", "openmpi", "slurm", "torchrun"; empty: none found
  int rank = -1, size = -1;
  int local_rank = -1, local_size = -1;  // -1 where the launcher does not say
  int node = -1;                         // node index where the launcher says
  std::string nodelist;                  // Slurm's compressed node list
  std::string mpi_plugin;                // Slurm: srun's --mpi (SLURM_MPI_TYPE)
  std::vector<std::string> notes;        // launchers skipped, with the reason
};

// Reads the environment through `getenv` (std::getenv by default): the first
// launcher present of Hydra, Open MPI, a Slurm step and torchrun, with the
// variables and rules of docs/topology.md ("The launcher"). A launcher whose
// variables do not parse or do not describe a job is skipped (noted in
// Launcher::notes, logged at debug by check_launcher).
using EnvLookup = std::function<const char *(const char *)>;
Launcher detect_launcher(const EnvLookup &getenv = nullptr);

std::string describe_launcher(const Launcher &launcher);

// MPI_Get_library_version's text for the MPI library this process runs with.
std::string running_mpi_library();

// The warning to give when the launcher and MPI disagree; empty when they
// agree or no launcher was found. `mpi_library` (running_mpi_library()) says
// which PMI the MPI speaks, for the advice under Slurm.
std::string launcher_warning(const Launcher &launcher, int mpi_rank, int mpi_size,
                             const std::string &mpi_library);

// Compares the launcher's view of the job with MPI's (world size and rank) and
// warns once per process when they disagree (e.g. srun without --mpi=pmi2).
void check_launcher(MPI_Comm world);

}  // namespace pg::launch
