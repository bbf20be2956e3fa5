// The launch environment: which launcher started this process and what it
// says about the job, compared with MPI's view.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/text.h"
#include "topology/machine.h"

namespace pg::topology {

namespace {

// Variables that say the same thing, most specific first: the first one set
// is read.
using Vars = std::vector<const char *>;

// The environment as the launchers are read from it: a variable set to "" is
// unset.
struct Env {
  EnvLookup lookup;

  const char *get(const char *var) const {
    const char *value = lookup(var);
    return value && *value ? value : nullptr;
  }
  // The first of `vars` that is set, or NULL; its name in *name.
  const char *first(const Vars &vars, const char **name = nullptr) const {
    for (const char *var : vars)
      if (const char *value = get(var)) {
        if (name) *name = var;
        return value;
      }
    return nullptr;
  }
};

enum class Needs { any, all };

// One launcher: the variables that mark it, a reason to doubt them, and the
// variables it describes the job with (empty: the launcher does not say).
struct LauncherVars {
  const char *name;
  Needs needs;  // the launcher is present when any (or all) of its marks are set
  Vars marks;
  // Why marks that are set still do not mean this launcher; "" when they do.
  std::string (*doubt)(const Env &env);
  Vars rank, size, local_rank, local_size, node, nodelist;
};

// srun's PMI-2 plugin sets PMI_RANK/PMI_SIZE too, but not MPI_LOCALRANKID:
// under Slurm that is the Slurm step, not Hydra.
std::string srun_pmi(const Env &env) {
  if (env.get("MPI_LOCALRANKID") || !env.get("SLURM_PROCID")) return "";
  return "PMI variables without MPI_LOCALRANKID under Slurm are srun's (the Slurm step)";
}

// The batch script of a Slurm job sees SLURM_PROCID but is not an srun step:
// its step is "batch" (or the extern step), by name or by number.
std::string batch_script(const Env &env) {
  const char *var = nullptr;
  const char *step = env.first({"SLURM_STEP_ID", "SLURM_STEPID"}, &var);
  if (!step) return "";
  for (const char *batch : {"batch", "extern", "4294967294", "4294967295"})
    if (!std::strcmp(step, batch))
      return std::string(var) + "='" + step + "' is the batch script, not an srun step";
  return "";
}

// In order: the first launcher present is the launcher (docs/topology.md has
// this table for users). mpiexec inside a Slurm allocation starts its proxies
// with srun, so Hydra's variables come first.
const LauncherVars kLaunchers[] = {
    // MPICH's Hydra (mpiexec).
    {"hydra", Needs::any, {"PMI_RANK", "PMI_SIZE"}, srun_pmi,
     {"PMI_RANK"}, {"PMI_SIZE"}, {"MPI_LOCALRANKID"}, {"MPI_LOCALNRANKS"}, {}, {}},
    // Open MPI's mpirun / prterun.
    {"openmpi", Needs::any, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, nullptr,
     {"OMPI_COMM_WORLD_RANK"}, {"OMPI_COMM_WORLD_SIZE"}, {"OMPI_COMM_WORLD_LOCAL_RANK"},
     {"OMPI_COMM_WORLD_LOCAL_SIZE"}, {}, {}},
    // A Slurm job step (srun): the step's size and nodes before the job's.
    {"slurm", Needs::any, {"SLURM_PROCID"}, batch_script,
     {"SLURM_PROCID"}, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, {"SLURM_LOCALID"}, {},
     {"SLURM_NODEID"}, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}},
    // torchrun / torch.distributed.run (and launchers that mimic it).
    {"torchrun", Needs::all, {"RANK", "WORLD_SIZE"}, nullptr,
     {"RANK"}, {"WORLD_SIZE"}, {"LOCAL_RANK"}, {"LOCAL_WORLD_SIZE"}, {"GROUP_RANK"}, {}},
};

bool present(const Env &env, const LauncherVars &row) {
  auto set = [&env](const char *var) { return env.get(var) != nullptr; };
  const Vars &marks = row.marks;
  return row.needs == Needs::all ? std::all_of(marks.begin(), marks.end(), set)
                                      : std::any_of(marks.begin(), marks.end(), set);
}

// A non-negative integer, or -1 when none of `vars` is set. A launcher's
// variables are not ours: a value that does not parse goes to *problem (the
// first one only), which makes us skip that launcher, never fail.
int number(const Env &env, const Vars &vars, std::string *problem) {
  const char *var = nullptr;
  const char *text = env.first(vars, &var);
  if (!text) return -1;
  unsigned value = 0;
  if (text::parse_number(text, &value) && value <= INT_MAX) return static_cast<int>(value);
  if (problem->empty())
    *problem = std::string(var) + "='" + text + "' is not a non-negative integer";
  return -1;
}

// Why the numbers a launcher gave cannot describe a job; "" when they can.
std::string inconsistency(const Launcher &l) {
  if (l.size == 0) return "a job size of 0";
  if (l.size > 0 && l.rank >= l.size)
    return "rank " + std::to_string(l.rank) + " is not below size " + std::to_string(l.size);
  if (l.local_size > 0 && l.local_rank >= l.local_size)
    return "local rank " + std::to_string(l.local_rank) + " is not below " +
           std::to_string(l.local_size);
  return "";
}

// The job as `row`'s variables describe it, or the reason to skip that
// launcher in *problem.
Launcher read_launcher(const Env &env, const LauncherVars &row, std::string *problem) {
  Launcher l;
  if (row.doubt) *problem = row.doubt(env);
  if (!problem->empty()) return l;
  l.name = row.name;
  l.rank = number(env, row.rank, problem);
  l.size = number(env, row.size, problem);
  l.local_rank = number(env, row.local_rank, problem);
  l.local_size = number(env, row.local_size, problem);
  l.node = number(env, row.node, problem);
  if (const char *nodes = env.first(row.nodelist)) l.nodelist = nodes;
  if (problem->empty()) *problem = inconsistency(l);
  return l;
}

}  // namespace

Launcher detect_launcher(const EnvLookup &lookup) {
  const Env env{lookup ? lookup : EnvLookup([](const char *v) { return std::getenv(v); })};
  std::vector<std::string> notes;  // launchers skipped so far
  for (const LauncherVars &row : kLaunchers) {
    if (!present(env, row)) continue;
    std::string problem;
    Launcher l = read_launcher(env, row, &problem);
    if (problem.empty()) {
      l.notes = std::move(notes);
      return l;
    }
    notes.push_back(std::string(row.name) + " variables ignored: " + problem);
  }
  Launcher none;
  none.notes = std::move(notes);
  return none;
}

std::string describe_launcher(const Launcher &l) {
  if (l.name.empty()) return "none";
  std::string s = l.name;
  if (l.rank >= 0 || l.size >= 0)
    s += " rank " + (l.rank >= 0 ? std::to_string(l.rank) : std::string("?")) + "/" +
         (l.size >= 0 ? std::to_string(l.size) : std::string("?"));
  if (l.local_rank >= 0) {
    s += " local " + std::to_string(l.local_rank);
    if (l.local_size > 0) s += "/" + std::to_string(l.local_size);
  }
  if (l.node >= 0) s += " node " + std::to_string(l.node);
  if (!l.nodelist.empty()) s += " nodes " + l.nodelist;
  return s;
}

std::string launcher_warning(const Launcher &l, int mpi_rank, int mpi_size) {
  if (l.name.empty()) return "";
  if (mpi_size == 1 && l.size > 1) {
    std::string s = "MPI sees a world of 1 process, but the launcher (" + l.name + ") started " +
                    std::to_string(l.size) + " processes (this is its rank " +
                    std::to_string(l.rank < 0 ? 0 : l.rank) +
                    "): every process runs as its own 1-process MPI job. ";
    if (l.name == "slurm")
      s += "Likely cause: srun without --mpi=pmi2 (MPICH then starts as a singleton); run "
           "'srun --mpi=pmi2 ...' or set MpiDefault=pmi2 in slurm.conf. Otherwise the "
           "application is linked against a different MPI than the one srun serves (check "
           "'ldd' on the executable).";
    else if (l.name == "torchrun")
      s += "Likely cause: torchrun does not start MPI jobs; launch with mpiexec, or with "
           "'srun --mpi=pmi2' under Slurm.";
    else
      s += "Likely cause: the application is built against a different MPI than this " +
           std::string(l.name == "hydra" ? "MPICH (Hydra) mpiexec" : "Open MPI mpirun") +
           "; launch it with the mpiexec of the MPI it links (check 'ldd' on the "
           "executable), or rebuild it. Under Slurm, srun without --mpi=pmi2 gives the same "
           "symptom.";
    return s;
  }
  bool size_differs = l.size >= 0 && l.size != mpi_size;
  bool rank_differs = l.rank >= 0 && l.rank != mpi_rank;
  if (!size_differs && !rank_differs) return "";
  return "the launcher (" + l.name + ") says rank " +
         (l.rank >= 0 ? std::to_string(l.rank) : std::string("?")) + " of " +
         (l.size >= 0 ? std::to_string(l.size) : std::string("?")) + ", MPI says rank " +
         std::to_string(mpi_rank) + " of " + std::to_string(mpi_size) + "; using MPI's";
}

void check_launcher(MPI_Comm world) {
  static std::atomic<bool> checked{false};
  if (checked.exchange(true)) return;
  int rank = 0, size = 1;
  if (MPI_Comm_rank(world, &rank) != MPI_SUCCESS || MPI_Comm_size(world, &size) != MPI_SUCCESS)
    return;
  Launcher l = detect_launcher();
  for (const std::string &note : l.notes) PG_LOG(debug, "%s", note.c_str());
  PG_LOG(debug, "launcher: %s", describe_launcher(l).c_str());
  std::string warning = launcher_warning(l, rank, size);
  // Printed whatever PGS_LOG says: N singletons look like a working job until
  // the results are wrong.
  if (!warning.empty()) log::write(params::LogLevel::warn, "%s", warning.c_str());
}

}  // namespace pg::topology
