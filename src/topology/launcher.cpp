// The launch environment: which launcher started this process and what it
// says about the job, compared with MPI's view.
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/log.h"
#include "topology/machine.h"

namespace pg::topology {

namespace {

// A launcher's variables are not ours: a value that does not parse makes us
// skip that launcher (with a note), never fail.
struct Reader {
  const EnvLookup &getenv;
  std::string launcher;
  std::string problem;

  const char *raw(const char *var) const {
    const char *v = getenv(var);
    return v && *v ? v : nullptr;
  }
  bool present(const char *var) const { return raw(var) != nullptr; }

  // A non-negative integer, or -1 when the variable is unset. Malformed values
  // are recorded in `problem`.
  int number(const char *var) {
    const char *v = raw(var);
    if (!v) return -1;
    char *end = nullptr;
    errno = 0;
    long x = std::strtol(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || errno || x > INT_MAX) {
      if (problem.empty())
        problem = std::string(var) + "='" + v + "' is not a non-negative integer";
      return -1;
    }
    return static_cast<int>(x);
  }
  const char *text(const char *var) const { return raw(var); }
};

// Takes `candidate` as the launcher when its variables make sense; otherwise
// notes in `found` why they were ignored.
bool adopt(Launcher *found, Launcher candidate, Reader *r) {
  if (r->problem.empty()) {
    if (candidate.size == 0)
      r->problem = "a job size of 0";
    else if (candidate.size > 0 && candidate.rank >= candidate.size)
      r->problem = "rank " + std::to_string(candidate.rank) + " is not below size " +
                   std::to_string(candidate.size);
    else if (candidate.local_size > 0 && candidate.local_rank >= candidate.local_size)
      r->problem = "local rank " + std::to_string(candidate.local_rank) + " is not below " +
                   std::to_string(candidate.local_size);
  }
  if (!r->problem.empty()) {
    found->notes.push_back(r->launcher + " variables ignored: " + r->problem);
    return false;
  }
  candidate.name = r->launcher;
  candidate.notes = std::move(found->notes);
  *found = std::move(candidate);
  return true;
}

bool batch_step(const char *step) {
  return step && (!std::strcmp(step, "batch") || !std::strcmp(step, "extern") ||
                  !std::strcmp(step, "4294967294") || !std::strcmp(step, "4294967295"));
}

}  // namespace

Launcher detect_launcher(const EnvLookup &lookup) {
  EnvLookup getenv = lookup ? lookup : EnvLookup([](const char *v) { return std::getenv(v); });
  Launcher l;

  // MPICH's Hydra. srun's PMI-2 plugin also sets PMI_RANK/PMI_SIZE, without
  // MPI_LOCALRANKID: that case is the Slurm step below.
  {
    Reader r{getenv, "hydra", ""};
    bool pmi = r.present("PMI_RANK") || r.present("PMI_SIZE");
    bool srun_pmi = !r.present("MPI_LOCALRANKID") && r.present("SLURM_PROCID");
    if (pmi && !srun_pmi) {
      Launcher h;
      h.rank = r.number("PMI_RANK");
      h.size = r.number("PMI_SIZE");
      h.local_rank = r.number("MPI_LOCALRANKID");
      h.local_size = r.number("MPI_LOCALNRANKS");
      if (adopt(&l, h, &r)) return l;
    }
  }
  // Open MPI's mpirun / prterun.
  {
    Reader r{getenv, "openmpi", ""};
    if (r.present("OMPI_COMM_WORLD_RANK") || r.present("OMPI_COMM_WORLD_SIZE")) {
      Launcher o;
      o.rank = r.number("OMPI_COMM_WORLD_RANK");
      o.size = r.number("OMPI_COMM_WORLD_SIZE");
      o.local_rank = r.number("OMPI_COMM_WORLD_LOCAL_RANK");
      o.local_size = r.number("OMPI_COMM_WORLD_LOCAL_SIZE");
      if (adopt(&l, o, &r)) return l;
    }
  }
  // A Slurm job step (srun). The batch script itself is not a step.
  {
    Reader r{getenv, "slurm", ""};
    const char *step = r.text("SLURM_STEP_ID") ? r.text("SLURM_STEP_ID") : r.text("SLURM_STEPID");
    if (r.present("SLURM_PROCID") && batch_step(step)) {
      l.notes.push_back("slurm variables ignored: SLURM_STEP_ID='" + std::string(step) +
                        "' is the batch script, not an srun step");
    } else if (r.present("SLURM_PROCID")) {
      Launcher s;
      s.rank = r.number("SLURM_PROCID");
      s.size = r.present("SLURM_STEP_NUM_TASKS") ? r.number("SLURM_STEP_NUM_TASKS")
                                                  : r.number("SLURM_NTASKS");
      s.local_rank = r.number("SLURM_LOCALID");
      s.node = r.number("SLURM_NODEID");
      const char *nodes = r.text("SLURM_STEP_NODELIST");
      if (!nodes) nodes = r.text("SLURM_JOB_NODELIST");
      if (!nodes) nodes = r.text("SLURM_NODELIST");
      if (nodes) s.nodelist = nodes;
      if (adopt(&l, s, &r)) return l;
    }
  }
  // torchrun / torch.distributed.run (and launchers that mimic it).
  {
    Reader r{getenv, "torchrun", ""};
    if (r.present("RANK") && r.present("WORLD_SIZE")) {
      Launcher t;
      t.rank = r.number("RANK");
      t.size = r.number("WORLD_SIZE");
      t.local_rank = r.number("LOCAL_RANK");
      t.local_size = r.number("LOCAL_WORLD_SIZE");
      t.node = r.number("GROUP_RANK");
      if (adopt(&l, t, &r)) return l;
    }
  }
  return l;
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
