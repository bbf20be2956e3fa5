#include "launch/job.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "launch/auth.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

struct Env {
  EnvLookup lookup;
  const char *get(const char *var) const {
    const char *v = lookup ? lookup(var) : std::getenv(var);
    return v && *v ? v : nullptr;
  }
};

// The variables that mark each MPI launcher, most specific first.
struct Marks {
  const char *name;
  std::vector<const char *> vars;
};
const Marks kMarks[] = {
    {"hydra", {"HYDI_CONTROL_FD", "MPI_LOCALRANKID"}},
    {"openmpi", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}},
    {"pmix", {"PMIX_RANK", "PMIX_NAMESPACE"}},
    {"pmi", {"PMI_FD", "PMI_PORT", "PMI_RANK", "PMI_SIZE", "PMI_ID"}},
    {"mvapich", {"MV2_COMM_WORLD_RANK"}},
    {"pals", {"PALS_RANKID"}},
};

// An srun step (not a batch script or an salloc shell: those have no step,
// or the batch or extern one).
bool slurm_step(const Env &env) {
  if (!env.get("SLURM_PROCID")) return false;
  const char *step = env.get("SLURM_STEP_ID");
  if (!step) step = env.get("SLURM_STEPID");
  if (!step) return false;
  for (const char *batch : {"batch", "extern", "4294967294", "4294967295"})
    if (!std::strcmp(step, batch)) return false;
  return true;
}

std::string found(const Env &env, std::string *which) {
  for (const Marks &m : kMarks)
    for (const char *var : m.vars)
      if (const char *v = env.get(var)) {
        *which = std::string(var) + "=" + text::printable(v);
        // srun --mpi=pmi2 sets PMI variables too: the step is the launcher.
        if (!std::strcmp(m.name, "pmi") && slurm_step(env)) return "slurm";
        return m.name;
      }
  if (slurm_step(env)) {
    *which = std::string("SLURM_PROCID=") + env.get("SLURM_PROCID") + " in an srun step";
    return "slurm";
  }
  return "";
}

pg_status bad(const char *var, const char *value, const std::string &expected) {
  return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: expected %s", var, text::printable(value).c_str(),
              expected.c_str());
}

// A non-negative int from `var` (-1 when unset).
pg_status number(const Env &env, const char *var, int min, const char *expected, int *out) {
  *out = -1;
  const char *v = env.get(var);
  if (!v) return PG_OK;
  int n = 0;
  if (!text::parse_number(std::string_view(v), &n) || n < min) return bad(var, v, expected);
  *out = n;
  return PG_OK;
}

}  // namespace

const char *const kLauncherVariables[] = {
    "PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK", "PMI_SIZE", "PMI_SPAWNED", "PMI_JOBID", "PMI_DEBUG",
    "PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI", "PMIX_SERVER_URI2", "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "HYDI_CONTROL_FD", "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS", nullptr};

std::string mpi_launcher(const EnvLookup &lookup, std::string *note) {
  const Env env{lookup};
  std::string which;
  const std::string name = found(env, &which);
  if (name.empty()) return "";
  if (const char *run = env.get("TORCHELASTIC_RUN_ID")) {
    if (note)
      *note = "this process is a torchrun worker (TORCHELASTIC_RUN_ID=" + text::printable(run) + "): " + which +
              ", inherited from the " + name + " launcher that started torchrun, is ignored";
    return "";
  }
  if (note) *note = which;
  return name;
}

pg_status read_job(const EnvLookup &lookup, Job *out) {
  const Env env{lookup};
  Job j;
  j.torchrun = env.get("TORCHELASTIC_RUN_ID") != nullptr;
  const char *agent = env.get("TORCHELASTIC_USE_AGENT_STORE");
  j.agent_store = agent && (!std::strcmp(agent, "True") || !std::strcmp(agent, "true") || !std::strcmp(agent, "1"));
  std::string note;
  j.launcher = mpi_launcher(lookup, &note);
  if (!j.launcher.empty()) {
    j.mode = Job::Mode::launcher;
    *out = j;
    return PG_OK;
  }
  j.inherited = note;
  const char *world = env.get("WORLD_SIZE");
  if (!world) {
    *out = j;
    return PG_OK;
  }
  int size = 0, rank = 0;
  PG_CHECK(number(env, "WORLD_SIZE", 1, "a positive integer, the number of processes of the job", &size));
  const char *rank_text = env.get("RANK");
  if (!rank_text && size > 1)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "WORLD_SIZE=%d says this process is one of %d, but RANK is unset: give every copy its RANK "
                "(0 to %d), or start the job with mpiexec or srun",
                size, size, size - 1);
  PG_CHECK(number(env, "RANK", 0, "a non-negative integer, this process's rank in the job", &rank));
  if (rank < 0) rank = 0;
  if (rank >= size)
    return fail(PG_ERR_INVALID_ARGUMENT, "RANK=%d is not valid: it must be below WORLD_SIZE=%d", rank, size);
  PG_CHECK(number(env, "LOCAL_WORLD_SIZE", 1, "a positive integer, the processes of the job on this host",
                  &j.local_size));
  PG_CHECK(number(env, "LOCAL_RANK", 0, "a non-negative integer, this process's rank on its host", &j.local_rank));
  if (j.local_size > size)
    return fail(PG_ERR_INVALID_ARGUMENT, "LOCAL_WORLD_SIZE=%d is not valid: it exceeds WORLD_SIZE=%d",
                j.local_size, size);
  if (j.local_size > 0 && j.local_rank >= j.local_size)
    return fail(PG_ERR_INVALID_ARGUMENT, "LOCAL_RANK=%d is not valid: it must be below LOCAL_WORLD_SIZE=%d",
                j.local_rank, j.local_size);
  j.rank = rank;
  j.size = size;
  j.mode = size > 1 ? Job::Mode::bootstrap : Job::Mode::single;
  *out = j;
  return PG_OK;
}

pg_status rendezvous_address(const EnvLookup &lookup, const Settings &settings, Address *out, std::string *what) {
  const Env env{lookup};
  if (settings.has_addr) {
    if (settings.addr.port == 0)
      return fail(PG_ERR_INVALID_ARGUMENT,
                  "PGS_BOOTSTRAP_ADDR=%s is not valid here: plain copies need a port (1 to 65535) every copy "
                  "knows",
                  settings.addr.text().c_str());
    *out = settings.addr;
    *what = "PGS_BOOTSTRAP_ADDR";
    return PG_OK;
  }
  const char *host = env.get("MASTER_ADDR");
  const char *port = env.get("MASTER_PORT");
  if (!host || !port)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "%s is unset: the copies of a job meet at MASTER_ADDR:MASTER_PORT (rank 0's host and a free "
                "port there, the same on every copy), or at PGS_BOOTSTRAP_ADDR=host:port",
                !host ? "MASTER_ADDR" : "MASTER_PORT");
  int p = 0;
  if (!text::parse_number(std::string_view(port), &p) || p < 1 || p > 65535)
    return bad("MASTER_PORT", port, "a port number from 1 to 65535");
  std::string why;
  const std::string h(host);
  const bool v6 = h.find(':') != std::string::npos && h[0] != '[';
  if (!parse_address((v6 ? "[" + h + "]" : h) + ":" + port, out, &why))
    return bad("MASTER_ADDR", host, "a host name or address (" + why + ")");
  *what = "MASTER_ADDR:MASTER_PORT";
  return PG_OK;
}

std::string job_secret(const Settings &settings, const Address &rendezvous, bool *derived) {
  *derived = settings.secret.empty();
  if (!*derived) return settings.secret;
  // Not the size: copies that disagree on it must get in, to hear what is wrong.
  Digest d;
  if (!sha256("pgstrategy job\n" + rendezvous.text(), &d)) return "";
  return hex(d);
}

}  // namespace pg::launch
