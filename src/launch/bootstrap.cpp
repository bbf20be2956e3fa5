#include "launch/bootstrap.h"

#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "launch/auth.h"
#include "launch/launcher.h"
#include "launch/member.h"
#include "launch/pmi_relay.h"
#include "launch/rendezvous.h"
#include "launch/tcpstore.h"
#include "launch/wire.h"
#include "util/log.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

std::mutex g_mutex;
Member *g_member = nullptr;
Server *g_server = nullptr;
std::atomic<bool> g_ending{false};
std::atomic<int> g_rank{-1};

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// The process that joined: a child it forks (a DataLoader worker, os.fork)
// shares its connections but is no member of the job.
std::atomic<pid_t> g_pid{0};

void at_exit() {
  Member *m = g_member;
  if (!m || getpid() != g_pid.load()) return;
  m->exiting = true;
  m->send({"BYE"});
  if (g_server) g_server->wait_for_members();
}

pg_status join_at(int rank, int size, const Address &at, const std::string &what, const std::string &secret,
                  double timeout_s, const std::string &origin, const std::string &hint) {
  const std::string shown = what + "=" + at.text();
  const auto deadline = after(timeout_s);
  int fd = -1;
  if (connect_to(at, what, deadline, &fd) != PG_OK)
    return fail(PG_ERR_TIMEOUT,
                "rank %d of %d: %s; nothing accepted a connection there within PGS_BOOTSTRAP_TIMEOUT=%s s: rank 0 "
                "serves the job's rendezvous there (is it running, with the same %s?)",
                rank, size, last_error().c_str(), seconds_text(timeout_s).c_str(), what.c_str());
  auto m = std::make_unique<Member>();
  m->tcp = fd;
  m->rank = rank;
  m->size = size;
  m->at = at;
  m->what = what;
  m->origin = origin;
  std::string why;
  pg_status st = greet(*m, secret, shown, hint, deadline, &why);
  if (st == PG_OK) st = await_ready(*m, shown, timeout_s, &why);
  if (st == PG_OK) st = open_pmi(*m, &why);
  if (st != PG_OK) {
    if (m->tcp >= 0) ::close(m->tcp);  // greet may have connected anew
    // Rank 0's process serves the others: it stays until they heard why.
    if (g_server) g_server->wait_failure_heard(std::chrono::duration<double>(deadline - Clock::now()).count());
    return fail_message(st, "rank " + std::to_string(rank) + " of " + std::to_string(size) + ": " + why);
  }
  // MPI_Init reads these (MPICH's simple PMI, Intel MPI): nothing an outer
  // launcher left may mislead it.
  for (const char *const *v = kLauncherVariables; *v; ++v) unsetenv(*v);
  setenv("PMI_FD", std::to_string(m->pmi_client).c_str(), 1);
  setenv("PMI_RANK", std::to_string(rank).c_str(), 1);
  setenv("PMI_SIZE", std::to_string(size).c_str(), 1);
  m->env_set = true;
  g_rank = rank;
  log::set_world_rank(rank);
  g_pid = getpid();
  g_member = m.release();
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(at_exit);
    // A forked child drops its copies of the connections, so that the
    // rendezvous still notices when this process dies.
    pthread_atfork(nullptr, nullptr, [] {
      if (Member *member = g_member) {
        ::close(member->tcp);
        if (member->pmi >= 0) ::close(member->pmi);
      }
      if (Server *server = g_server) server->close_in_child();
    });
  });
  std::thread(serve, g_member).detach();
  PG_LOG(debug, "bootstrap: rank %d of %d joined the job at %s (%s)", rank, size, shown.c_str(), origin.c_str());
  return PG_OK;
}

// Rank 0: serves the job's rendezvous on the listening socket `fd`, from a thread.
pg_status serve_rendezvous(int fd, int size, const std::string &secret, const Settings &settings,
                           const std::string &shown) {
  auto server = std::make_unique<Server>(fd, size, secret, settings.timeout_s, settings.exit_timeout_s, shown);
  if (server->start() != PG_OK) {
    ::close(fd);
    return PG_ERR_INTERNAL;
  }
  g_server = server.release();
  return PG_OK;
}

pg_status refuse_open_mpi(int size) {
#if defined(OMPI_MAJOR_VERSION)
  return fail(PG_ERR_UNSUPPORTED,
              "this job of %d processes was started without an MPI launcher, and pgstrategy is built against "
              "Open MPI, which it cannot bring up itself (Open MPI needs PMIx, which only its launchers serve): "
              "start the job with 'mpirun -n %d ...' or 'srun --mpi=pmix ...', or build pgstrategy against an "
              "MPICH-family MPI",
              size, size);
#else
  (void)size;
  return PG_OK;
#endif
}

// torchrun --no-python: MASTER_ADDR:MASTER_PORT is the agent's store. Rank 0
// opens the rendezvous on a free port and publishes it there with a fresh
// secret, under a key of this run and restart; the others read it.
pg_status join_through_agent_store(const Job &job, const Settings &settings) {
  Address store;
  std::string what;
  PG_CHECK(rendezvous_address(nullptr, settings, &store, &what));
  const char *run = params::env("TORCHELASTIC_RUN_ID");
  const char *restart = params::env("TORCHELASTIC_RESTART_COUNT");
  const std::string key = std::string("/pgstrategy/bootstrap/") + (run ? run : "none") + "/" + (restart ? restart : "0");
  std::string published;
  if (job.rank == 0) {
    const std::string secret = random_hex(32);
    if (secret.empty()) return fail(PG_ERR_INTERNAL, "the kernel gave no random bytes (getrandom)");
    Address at{address_toward(store.host), 0};
    int fd = -1, port = 0;
    std::string note;
    PG_CHECK(listen_on(at, "the bootstrap's address", &fd, &port, &note));
    at.port = port;
    PG_CHECK(serve_rendezvous(fd, job.size, secret, settings, at.text()));
    published = at.text() + " " + secret;
    PG_CHECK(store_set(store, key, published, settings.timeout_s));
  } else {
    PG_CHECK(store_get(store, key, settings.timeout_s, &published));
  }
  const std::size_t space = published.find(' ');
  Address at;
  std::string why;
  if (space == std::string::npos || !parse_address(published.substr(0, space), &at, &why))
    return fail(PG_ERR_STATE, "torchrun's store holds '%s' under %s, not a rendezvous address and secret",
                text::printable(published).c_str(), key.c_str());
  return join_at(job.rank, job.size, at, "the rendezvous (from torchrun's store)", published.substr(space + 1),
                 settings.timeout_s, "torchrun", "");
}

}  // namespace

void end_job(int code, const std::string &message) {
  if (g_ending.exchange(true)) {
    // Another thread is ending the process.
    while (true) pause();
  }
  std::fprintf(stderr, "[pgstrategy %d] error: %s; the job ends (this process exits with %d)\n", g_rank.load(),
               message.c_str(), code);
  std::fflush(stderr);
  if (g_server) g_server->wait_drained(kEndDrainSeconds + 1);
  _exit(code);
}

pg_status before_mpi_init() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_member) return PG_OK;
  Job job;
  PG_CHECK(read_job(nullptr, &job));
  if (!job.inherited.empty()) PG_LOG(debug, "bootstrap: %s", job.inherited.c_str());
  if (job.mode != Job::Mode::bootstrap) return PG_OK;
  log::set_world_rank(job.rank);  // before MPI knows it: for the lines below
  PG_CHECK(refuse_open_mpi(job.size));
  Settings settings;
  PG_CHECK(read_settings(&settings));
  if (job.agent_store && !settings.has_addr) return join_through_agent_store(job, settings);
  Address at;
  std::string what;
  PG_CHECK(rendezvous_address(nullptr, settings, &at, &what));
  bool derived = false;
  const std::string secret = job_secret(settings, at, &derived);
  if (secret.empty())
    return fail(PG_ERR_INTERNAL, "the job's secret could not be derived from %s=%s: libcrypto could not compute SHA-256 (%s)",
                what.c_str(), at.text().c_str(), crypto_error().c_str());
  if (job.rank == 0) {
    int fd = -1, port = 0;
    std::string note;
    PG_CHECK(listen_on(at, what, &fd, &port, &note));
    if (!note.empty()) PG_LOG(info, "bootstrap: %s", note.c_str());
    // Printed whatever PGS_LOG says: anyone on the network could take a rank.
    if (derived && !loopback_only(fd))
      log::write(params::LogLevel::warn,
                 "bootstrap: the rendezvous at %s=%s is reachable from other machines and there is no "
                 "PGS_BOOTSTRAP_SECRET: any process that reaches it can join the job as one of its ranks; give "
                 "every copy the same secret, e.g. run 'export PGS_BOOTSTRAP_SECRET=$(openssl rand -hex 32)' "
                 "where the copies are started (docs/launch.md, \"What is trusted\")",
                 what.c_str(), at.text().c_str());
    PG_CHECK(serve_rendezvous(fd, job.size, secret, settings, what + "=" + at.text()));
  }
  const std::string origin = job.torchrun ? "torchrun" : "RANK/WORLD_SIZE";
  const std::string hint = job.torchrun ? " (under torchrun, MASTER_PORT is the agent's store: set "
                                          "PGS_BOOTSTRAP_ADDR=<rank 0's host>:<a free port> for every worker)"
                                        : "";
  return join_at(job.rank, job.size, at, what, secret, settings.timeout_s, origin, hint);
}

void after_mpi_init() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_member || !g_member->env_set) return;
  for (const char *v : {"PMI_FD", "PMI_RANK", "PMI_SIZE"}) unsetenv(v);
  g_member->env_set = false;
}

pg_status listen(int size, const std::string &host, const std::string &secret, std::string *address) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_server) return fail(PG_ERR_STATE, "pg_bootstrap_listen: this process already serves a rendezvous");
  PG_CHECK(refuse_open_mpi(size));
  Settings settings;
  PG_CHECK(read_settings(&settings));
  Address at;
  at.port = settings.has_addr ? settings.addr.port : 0;
  if (!host.empty())
    at.host = host;
  else if (settings.has_addr)
    at.host = settings.addr.host;
  else
    at.host = address_toward(params::env("MASTER_ADDR") ? params::env("MASTER_ADDR") : "");
  int fd = -1, port = 0;
  std::string note;
  PG_CHECK(listen_on(at, settings.has_addr ? "PGS_BOOTSTRAP_ADDR" : "the bootstrap's address", &fd, &port, &note));
  if (!note.empty()) PG_LOG(info, "bootstrap: %s", note.c_str());
  const Address shown{at.host, port};
  PG_CHECK(serve_rendezvous(fd, size, secret, settings, shown.text()));
  *address = shown.text();
  return PG_OK;
}

pg_status join(int rank, int size, const std::string &address, const std::string &secret) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_member) {
    if (g_member->rank == rank && g_member->size == size) return PG_OK;
    return fail(PG_ERR_STATE, "pg_bootstrap_join: this process already joined a job as rank %d of %d",
                g_member->rank, g_member->size);
  }
  PG_CHECK(refuse_open_mpi(size));
  Settings settings;
  PG_CHECK(read_settings(&settings));
  Address at;
  std::string why;
  if (!parse_address(address, &at, &why) || at.port == 0)
    return fail(PG_ERR_INVALID_ARGUMENT, "pg_bootstrap_join: address '%s' is not valid: %s",
                text::printable(address).c_str(), at.port == 0 && why.empty() ? "the port is 0" : why.c_str());
  return join_at(rank, size, at, "the rendezvous address", secret, settings.timeout_s, "torch's Store", "");
}

pg_status check_world() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) return PG_OK;
  const Launcher l = detect_launcher();
  if (l.size <= 1) return PG_OK;
  return fail_message(PG_ERR_STATE, launcher_warning(l, 0, 1, running_mpi_library()));
}

std::string describe() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Member *m = g_member;
  if (!m) return "";
  return "MPI brought up by pgstrategy's bootstrap (rank " + std::to_string(m->rank) + " of " +
         std::to_string(m->size) + ", rendezvous at " + m->at.text() + ", from " + m->origin + ")";
}

}  // namespace pg::launch
