// How MPI comes up in this process (docs/launch.md): under an MPI launcher
// (mpiexec, mpirun, an srun step) MPI_Init joins the launcher's job; without
// one, when RANK and WORLD_SIZE (torchrun, a Kubernetes job, a shell loop of
// plain copies) say there are N > 1 processes, the library brings MPI up
// itself through its bootstrap; otherwise MPI starts as one process.
#pragma once

#include <functional>
#include <string>

#include "launch/net.h"
#include "launch/settings.h"
#include "pg_strategy.h"

namespace pg::launch {

using EnvLookup = std::function<const char *(const char *)>;

// The MPI launcher whose variables this process carries ("hydra", "pmi",
// "pmix", "openmpi", "slurm", "mvapich", "pals"), or "" when none does. A
// process torchrun started (TORCHELASTIC_RUN_ID) belongs to torchrun's job:
// launcher variables it inherited from whatever started torchrun describe the
// agents, not it, and are ignored (*note says so).
std::string mpi_launcher(const EnvLookup &env = nullptr, std::string *note = nullptr);

struct Job {
  enum class Mode { launcher, bootstrap, single } mode = Mode::single;
  std::string launcher;  // Mode::launcher: its name
  int rank = 0, size = 1;
  int local_rank = -1, local_size = -1;  // -1: not given
  bool torchrun = false;                 // a torchrun worker (TORCHELASTIC_RUN_ID)
  bool agent_store = false;              // MASTER_PORT is torchrun's agent store
  std::string inherited;                 // launcher variables ignored, and why
};

// Reads the job from the environment. A RANK, WORLD_SIZE, LOCAL_RANK or
// LOCAL_WORLD_SIZE that does not parse or does not fit the others is
// PG_ERR_INVALID_ARGUMENT naming the variable and its value (only when no MPI
// launcher is present: under one, they are not read).
pg_status read_job(const EnvLookup &env, Job *out);

// Where rank 0 serves the rendezvous of plain copies: PGS_BOOTSTRAP_ADDR, else
// MASTER_ADDR:MASTER_PORT (checked: both set, a port 1-65535). *what names
// where it came from, for messages.
pg_status rendezvous_address(const EnvLookup &env, const Settings &settings, Address *out, std::string *what);

// The secret of plain copies: PGS_BOOTSTRAP_SECRET, else one derived from
// what every copy knows (the rendezvous address), which tells jobs apart but
// keeps out no one who knows it (docs/launch.md); "" when libcrypto cannot
// derive it.
std::string job_secret(const Settings &settings, const Address &rendezvous, bool *derived);

// The variables an MPI launcher leaves for MPI_Init: cleared before the
// bootstrap sets its own, so none inherited from an outer launcher misleads
// the MPI library.
extern const char *const kLauncherVariables[];

}  // namespace pg::launch
