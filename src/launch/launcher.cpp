#include "launch/launcher.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "util/log.h"
#include "util/text.h"

namespace pg::launch {

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
  // Tasks per node in Slurm's compressed form ("2(x3),1"): the local size is
  // this node's entry, when `local_size` does not give it.
  Vars tasks_per_node;
  Vars mpi_plugin;  // how the launcher connects to MPI (srun --mpi=TYPE)
};

// srun's PMI-2 plugin sets PMI_RANK/PMI_SIZE too, but not MPI_LOCALRANKID:
// under Slurm that is the Slurm step, not Hydra.
std::string srun_pmi(const Env &env) {
  if (env.get("MPI_LOCALRANKID") || !env.get("SLURM_PROCID")) return "";
  return "PMI variables without MPI_LOCALRANKID under Slurm are srun's (the Slurm step)";
}

// A Slurm job's batch script (and an salloc shell) sees SLURM_PROCID and
// SLURM_NTASKS, but it is one process, not an srun step: only a step has a step
// id, and the batch and extern steps are not srun's either (by name or number).
std::string not_a_step(const Env &env) {
  const char *var = nullptr;
  const char *step = env.first({"SLURM_STEP_ID", "SLURM_STEPID"}, &var);
  if (!step) return "no SLURM_STEP_ID: a batch script or an salloc shell, not an srun step";
  for (const char *batch : {"batch", "extern", "4294967294", "4294967295"})
    if (!std::strcmp(step, batch))
      return std::string(var) + "='" + step + "' is the batch script, not an srun step";
  return "";
}

// In order: the first launcher present is the launcher (docs/topology.md has
// this table for users). mpiexec inside a Slurm allocation starts its proxies
// with srun, so Hydra's variables come first.
const LauncherVars kLaunchers[] = {
    // A torchrun worker: launcher variables it inherited from whatever started
    // torchrun (srun, mpiexec) describe the agents, not the workers.
    {"torchrun", Needs::all, {"TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE"}, nullptr,
     {"RANK"}, {"WORLD_SIZE"}, {"LOCAL_RANK"}, {"LOCAL_WORLD_SIZE"}, {"GROUP_RANK"}, {}, {}, {}},
    // MPICH's Hydra (mpiexec).
    {"hydra", Needs::any, {"PMI_RANK", "PMI_SIZE"}, srun_pmi,
     {"PMI_RANK"}, {"PMI_SIZE"}, {"MPI_LOCALRANKID"}, {"MPI_LOCALNRANKS"}, {}, {}, {}, {}},
    // Open MPI's mpirun / prterun.
    {"openmpi", Needs::any, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, nullptr,
     {"OMPI_COMM_WORLD_RANK"}, {"OMPI_COMM_WORLD_SIZE"}, {"OMPI_COMM_WORLD_LOCAL_RANK"},
     {"OMPI_COMM_WORLD_LOCAL_SIZE"}, {}, {}, {}, {}},
    // A Slurm job step (srun): the step's size and nodes before the job's.
    {"slurm", Needs::any, {"SLURM_PROCID"}, not_a_step,
     {"SLURM_PROCID"}, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}, {"SLURM_LOCALID"}, {},
     {"SLURM_NODEID"}, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"},
     {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, {"SLURM_MPI_TYPE"}},
    // torchrun / torch.distributed.run (and launchers that mimic it).
    {"torchrun", Needs::all, {"RANK", "WORLD_SIZE"}, nullptr,
     {"RANK"}, {"WORLD_SIZE"}, {"LOCAL_RANK"}, {"LOCAL_WORLD_SIZE"}, {"GROUP_RANK"}, {}, {}, {}},
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

// Entry `node` of a Slurm tasks-per-node list ("2(x3),1": 2, 2, 2, 1), or -1
// when the list does not parse or is shorter.
int tasks_on_node(const std::string &list, int node) {
  for (const std::string &item : text::split(list, ',')) {
    std::string count = item, repeat = "1";
    size_t open = item.find("(x");
    if (open != std::string::npos) {
      if (item.back() != ')') return -1;
      count = item.substr(0, open);
      repeat = item.substr(open + 2, item.size() - open - 3);
    }
    unsigned tasks = 0, times = 0;
    if (!text::parse_number(count, &tasks) || !text::parse_number(repeat, &times) ||
        tasks > INT_MAX)
      return -1;
    if (static_cast<unsigned>(node) < times) return static_cast<int>(tasks);
    node -= static_cast<int>(times);
  }
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
  const char *per_node = env.first(row.tasks_per_node);
  if (l.local_size < 0 && per_node) l.local_size = tasks_on_node(per_node, l.node < 0 ? 0 : l.node);
  if (const char *plugin = env.first(row.mpi_plugin)) l.mpi_plugin = plugin;
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

namespace {

// "MPICH 4.0.2" or "Open MPI v4.1.4" from MPI_Get_library_version's text.
std::string short_library_name(const std::string &version) {
  std::string first = version.substr(0, version.find('\n'));
  const std::string mpich = "MPICH Version:";
  if (first.compare(0, mpich.size(), mpich) == 0) {
    size_t digits = first.find_first_not_of(" \t", mpich.size());
    return "MPICH " + (digits == std::string::npos ? std::string("?") : first.substr(digits));
  }
  return first.substr(0, first.find(','));
}

// Why srun's processes became singletons, from what srun was given
// (SLURM_MPI_TYPE) and what the MPI library speaks: MPICH's PMI-2 or Open
// MPI's PMIx.
std::string srun_advice(const Launcher &l, const std::string &mpi_library) {
  std::string library = short_library_name(mpi_library);
  bool mpich = library.rfind("MPICH", 0) == 0, open_mpi = library.rfind("Open MPI", 0) == 0;
  std::string given = l.mpi_plugin.empty() || l.mpi_plugin == "none"
                          ? "srun ran without an MPI plugin (no --mpi, or --mpi=none, and no "
                            "MpiDefault in slurm.conf)"
                          : "srun ran with --mpi=" + l.mpi_plugin + " (SLURM_MPI_TYPE)";
  const char *wanted = mpich ? "pmi2" : open_mpi ? "pmix" : nullptr;
  const std::string other_mpi =
      "the application is linked against a different MPI than the one srun serves (check "
      "'ldd' on the executable)";
  if (!wanted)
    return given + ". Run srun with the --mpi value that " + library +
           " supports ('srun --mpi=list' shows Slurm's), or set MpiDefault in slurm.conf; "
           "otherwise " + other_mpi + ".";
  if (l.mpi_plugin == wanted)
    return given + ", which " + library + " supports, so likely " + other_mpi + ".";
  std::string s = given + ", but " + library + " connects to srun through " +
                  (mpich ? "PMI-2" : "PMIx") + ": run 'srun --mpi=" + wanted +
                  " ...' or set MpiDefault=" + wanted + " in slurm.conf.";
  if (mpich && l.mpi_plugin == "pmix")
    s += " An MPICH built without PMIx (Debian's and Ubuntu's are) ignores --mpi=pmix and "
         "starts singletons.";
  return s + " Otherwise " + other_mpi + ".";
}

}  // namespace

std::string running_mpi_library() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(version, &len);
  return std::string(version, static_cast<size_t>(len > 0 ? len : 0));
}

std::string launcher_warning(const Launcher &l, int mpi_rank, int mpi_size,
                             const std::string &mpi_library) {
  if (l.name.empty()) return "";
  if (mpi_size == 1 && l.size > 1) {
    std::string s = "MPI sees a world of 1 process, but the launcher (" + l.name + ") started " +
                    std::to_string(l.size) + " processes (this is its rank " +
                    std::to_string(l.rank < 0 ? 0 : l.rank) +
                    "): every process runs as its own 1-process MPI job. ";
    if (l.name == "slurm")
      s += "Likely cause: " + srun_advice(l, mpi_library);
    else if (l.name == "torchrun")
      s += "Likely cause: MPI was initialized before pgstrategy could bring these processes into one "
           "MPI job (the application or mpi4py called MPI_Init first; from Python, import "
           "pgstrategy_torch before building a Lightning Trainer). Leave MPI_Init to the library "
           "(pg_strategy_create, init_process_group(\"pgstrategy\")), or launch with mpiexec "
           "(docs/launch.md).";
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
  std::string warning = launcher_warning(l, rank, size, running_mpi_library());
  if (warning.empty()) return;
  // From now on every log line names the launcher's rank too: N singletons
  // would all call themselves rank 0.
  if (l.rank >= 0 && l.rank != rank)
    log::set_process_tag(l.name + " rank " + std::to_string(l.rank));
  // Printed whatever PGS_LOG says: N singletons look like a working job until
  // the results are wrong.
  log::write(params::LogLevel::warn, "%s", warning.c_str());
}

}  // namespace pg::launch
