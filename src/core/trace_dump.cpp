// The flight recorder's dumps: the process's recorders, live and retired,
// and the one JSON file per rank they are written to, on SIGUSR1 (a writer
// thread), at exit and when asked.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <thread>

#include "core/strategy.h"
#include "core/trace_parts.h"
#include "core/watchdog.h"
#include "launch/auth.h"
#include "util/log.h"
#include "util/status.h"

namespace pg::trace {
namespace {

// Recorders of destroyed strategies kept for the dumps that follow (a job that
// makes and drops sub-groups in a loop would otherwise grow without bound).
constexpr std::size_t kRetired = 16;

struct Registry {
  std::mutex mutex;
  // One dump at a time: the signal's writer thread, the watchdog, a poisoning,
  // destroy and exit may all dump at once, and would write the same files.
  std::mutex dumping;
  std::vector<std::shared_ptr<Recorder>> live;
  std::deque<std::shared_ptr<Recorder>> retired;
  std::map<std::string, int> created;  // strategies made on each group of world ranks
  std::string job;
  int world_rank = 0, world_size = 1;
  int wake_fd = -1;  // SIGUSR1 writes here; the writer thread reads
};

Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: dumps may come at exit
  return *r;
}

// SIGUSR1: the handler only writes a byte and passes the signal on to the
// handler that was there before (MPICH installs one at MPI_Init); a thread of
// the library's writes the dumps.
struct sigaction g_previous {};

void on_signal(int sig, siginfo_t *info, void *context) {
  const int fd = registry().wake_fd;
  if (fd >= 0) {
    const char one = 1;
    ssize_t ignored = write(fd, &one, 1);
    static_cast<void>(ignored);
  }
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
}

void writer(int fd) {
  char byte;
  while (true) {
    const ssize_t n = read(fd, &byte, 1);
    if (n == 1) dump("signal");
    else if (n < 0 && errno == EINTR) continue;
    else return;
  }
}

// Once per process: the SIGUSR1 handler and its writer thread, and a dump at
// exit. A process that ignores SIGUSR1 keeps ignoring it.
void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    int fds[2];
    if (sigaction(SIGUSR1, nullptr, &g_previous) == 0 && !(g_previous.sa_flags & SA_SIGINFO) &&
        g_previous.sa_handler == SIG_IGN) {
      PG_LOG(warn, "PGS_TRACE: this process ignores SIGUSR1; dumps come at the watchdog, a poisoned "
                   "strategy, destroy, exit and pg_trace_dump");
    } else if (pipe2(fds, O_CLOEXEC) == 0) {
      registry().wake_fd = fds[1];
      std::thread(writer, fds[0]).detach();
      struct sigaction act {};
      act.sa_sigaction = on_signal;
      sigemptyset(&act.sa_mask);
      act.sa_flags = SA_RESTART | SA_SIGINFO;
      sigaction(SIGUSR1, &act, nullptr);
    }
    // Not in a child forked from this process: it is no rank, and its dump
    // would replace the rank's own.
    static const pid_t owner = getpid();
    std::atexit([] {
      if (getpid() == owner) dump("exit");
    });
  });
}

std::string dump_path(const std::string &dir, const std::string &job, int world_rank) {
  return dir + "/pgstrategy-" + job + "-rank" + std::to_string(world_rank) + ".json";
}

// Writes `text` to `path` whole, in a folder others may write to as well:
// into a new file of an unpredictable name beside it, made exclusively
// (O_EXCL|O_NOFOLLOW: never through a link planted there, never into another
// process's file) and readable by this user only, then renamed over `path`
// (rename replaces a link at `path`, never what it points to), so a reader
// never sees half a file. False with errno set when it could not.
bool write_file(const std::string &path, const std::string &text) {
  constexpr int kTries = 8;  // names taken by others' files (16 random hex digits): never in practice
  std::string tmp;
  int fd = -1;
  for (int i = 0; i < kTries && fd < 0; ++i) {
    const std::string suffix = launch::random_hex(8);
    if (suffix.empty()) return false;
    tmp = path + "." + suffix + ".tmp";
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return false;
  }
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  bool ok = done == text.size();
  if (close(fd) != 0) ok = false;
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return true;
  const int saved = errno;
  unlink(tmp.c_str());
  errno = saved;
  return false;
}

}  // namespace

pg_status enlist(pg_strategy *s, const std::shared_ptr<Recorder> &rec) {
  Registry &r = registry();
  std::string job;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    job = r.job;
  }
  // Every rank of the strategy takes part, whether it has a name or not.
  PG_CHECK(agree_job(s->comm, &job));
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.world_rank = world_rank;
    r.world_size = world_size;
    if (r.job != job) {
      // Groups that traced apart first made up names of their own; the
      // process now dumps under the agreed one, and its files under the old
      // name go (the next dump holds all they held).
      auto forget = [&](const std::shared_ptr<Recorder> &old) {
        std::remove(dump_path(old->dir, r.job, world_rank).c_str());
      };
      if (!r.job.empty()) {
        std::for_each(r.live.begin(), r.live.end(), forget);
        std::for_each(r.retired.begin(), r.retired.end(), forget);
      }
      r.job = job;
    }
    // Strategies over the same ranks are told apart by the order every rank made them in.
    std::string group_key;
    for (int w : rec->world_ranks) group_key += std::to_string(w) + ",";
    const int n = r.created[group_key]++;
    std::uint64_t hash = 1469598103934665603ull;  // FNV-1a of the ranks
    for (char c : group_key) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char id[64];
    std::snprintf(id, sizeof id, "%d-of-%d-%016llx", n, s->size, static_cast<unsigned long long>(hash));
    rec->identity = id;
    r.live.push_back(rec);
  }
  install_once();
  return PG_OK;
}

void retire(const std::shared_ptr<Recorder> &recorder) {
  Registry &r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(std::remove(r.live.begin(), r.live.end(), recorder), r.live.end());
    r.retired.push_back(recorder);
    if (r.retired.size() > kRetired) r.retired.pop_front();
  }
  dump("destroy");
}

bool dump(const char *reason) {
  Registry &r = registry();
  std::lock_guard<std::mutex> one_writer(r.dumping);
  std::map<std::string, std::vector<std::shared_ptr<Recorder>>> by_dir;
  std::string job;
  int world_rank = 0, world_size = 1;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto &rec : r.retired) by_dir[rec->dir].push_back(rec);
    for (const auto &rec : r.live) by_dir[rec->dir].push_back(rec);
    job = r.job;
    world_rank = r.world_rank;
    world_size = r.world_size;
  }
  if (by_dir.empty()) return false;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  bool all = true;
  for (const auto &[dir, recorders] : by_dir) {
    std::string text = "{\"format\":\"pgstrategy-trace\",\"version\":1,\"job\":" + quote(job) +
                       ",\"rank\":" + std::to_string(world_rank) + ",\"world_size\":" + std::to_string(world_size) +
                       ",\"host\":" + quote(host) + ",\"pid\":" + std::to_string(getpid()) +
                       ",\"reason\":" + quote(reason) + ",\"written_ns\":" + std::to_string(watchdog::now_ns()) +
                       ",\"strategies\":[";
    for (std::size_t i = 0; i < recorders.size(); ++i) text += (i ? ",\n" : "\n") + recorders[i]->json();
    text += "]}\n";
    const std::string path = dump_path(dir, job, world_rank);
    if (!write_file(path, text)) {
      all = false;
      PG_LOG(error, "PGS_TRACE: cannot write %s: %s", path.c_str(), std::strerror(errno));
    }
  }
  return all;
}

}  // namespace pg::trace
