// The bootstrap's rendezvous at scale (docs/performance.md, "The bootstrap at
// scale"): rank 0's real Server and N members joined by the real member side
// of the protocol (greet, await_ready, the PMI relay serve()), all in one
// process over loopback. Only MPI is simulated: the main thread writes the
// PMI-1 lines MPICH writes to each member's PMI_FD and reads the answers.
//
//   bootstrap_bench [--members N[,N...]] [--card BYTES] [--gets K] [--max-ratio R]
//
// Per member: the get of PMI_process_mapping MPICH makes first, one put of a
// business card of --card bytes, a barrier, gets of K neighbours' cards
// (ranks r+1 ... r+K), a second barrier. Timed: from the first connection to
// the end of the second barrier. Counted: the bytes rank 0's rendezvous sent.
// Each N runs in a child process of its own (a clean table of descriptors
// and threads). With --max-ratio, exits 1 when rank 0 sent more than R times
// N x card bytes.
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "launch/auth.h"
#include "launch/member.h"
#include "launch/pmi_relay.h"
#include "launch/rendezvous.h"
#include "util/status.h"
#include "util/text.h"

using namespace pg::launch;

namespace {

struct Options {
  std::vector<int> members{64};
  int card = 300;
  int gets = 2;
  double max_ratio = 0;  // 0: not checked
};

constexpr double kTimeoutSeconds = 120;
constexpr int kJoinThreads = 16;
// Each member's relay thread: a small stack, so that thousands fit.
constexpr std::size_t kRelayStack = 256 << 10;

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "bootstrap_bench: %s\n", message.c_str());
  std::fflush(stderr);
  _exit(1);
}

bool parse_options(int argc, char **argv, Options *o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bootstrap_bench: %s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    bool ok = true;
    if (flag == "--members") {
      o->members.clear();
      for (const std::string &item : pg::text::split(value, ',')) {
        int n = 0;
        ok = ok && pg::text::parse_number(item, &n) && n >= 2 && n <= 65536;
        o->members.push_back(n);
      }
    } else if (flag == "--card") {
      ok = pg::text::parse_number(value, &o->card) && o->card >= 1 && o->card <= int(kPmiValueMax);
    } else if (flag == "--gets") {
      ok = pg::text::parse_number(value, &o->gets) && o->gets >= 0;
    } else if (flag == "--max-ratio") {
      char *end = nullptr;
      o->max_ratio = std::strtod(value.c_str(), &end);
      ok = end && *end == '\0' && o->max_ratio > 0;
    } else {
      std::fprintf(stderr, "bootstrap_bench: unknown flag '%s' (--members, --card, --gets, --max-ratio)\n",
                   flag.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "bootstrap_bench: bad value '%s' for %s: expected --members N[,N...] (2 to 65536), --card 1 "
                   "to %zu bytes, --gets K >= 0, --max-ratio > 0\n",
                   value.c_str(), flag.c_str(), kPmiValueMax);
      return false;
    }
  }
  return true;
}

// Each member holds 4 descriptors here: its connection, rank 0's end of it,
// and the PMI socketpair.
void raise_descriptor_limit(int members) {
  const rlim_t need = rlim_t(members) * 4 + 64;
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur >= need) return;
  if (r.rlim_max < need) r.rlim_max = need;  // allowed to root (CAP_SYS_RESOURCE) only
  r.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0)
    die("needs " + std::to_string(need) + " file descriptors for " + std::to_string(members) +
        " members, and RLIMIT_NOFILE cannot be raised that far (" + std::strerror(errno) + "): raise 'ulimit -n'");
}

std::string card_of(int rank, int bytes) {
  std::string c = "card-" + std::to_string(rank) + "-";
  while (static_cast<int>(c.size()) < bytes) c += static_cast<char>('a' + (c.size() + rank) % 26);
  c.resize(static_cast<std::size_t>(bytes));
  return c;
}

// MPI's side of one member's PMI socketpair.
struct Client {
  int fd = -1;
  std::string pending;
};

void write_line(Client &c, const std::string &line) {
  if (!send_all(c.fd, line + "\n")) die("a member's PMI socket closed");
}

std::string read_line(Client &c) {
  char buf[4096];
  std::size_t eol;
  while ((eol = c.pending.find('\n')) == std::string::npos) {
    pollfd p{c.fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(kTimeoutSeconds * 1000)) <= 0) die("a member's PMI server did not answer");
    const ssize_t n = read(c.fd, buf, sizeof buf);
    if (n <= 0) die("a member's PMI socket closed");
    c.pending.append(buf, static_cast<std::size_t>(n));
  }
  std::string line = c.pending.substr(0, eol);
  c.pending.erase(0, eol + 1);
  return line;
}

// Every member sends one line, then every answer is read: the members work
// at once, as the processes of a job do.
void round(std::vector<Client> &clients, const std::vector<std::string> &lines,
           const std::vector<std::string> &expected) {
  for (std::size_t i = 0; i < clients.size(); ++i) write_line(clients[i], lines[i]);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    const std::string got = read_line(clients[i]);
    if (got != expected[i])
      die("rank " + std::to_string(i) + " sent '" + pg::text::printable(lines[i].substr(0, 80)) + "' and got '" +
          pg::text::printable(got.substr(0, 120)) + "', expected '" +
          pg::text::printable(expected[i].substr(0, 120)) + "'");
  }
}

void *relay(void *m) {
  serve(static_cast<Member *>(m));
  return nullptr;
}

void start_relay(Member *m) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kRelayStack);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  const int rc = pthread_create(&t, &attr, relay, m);
  pthread_attr_destroy(&attr);
  if (rc != 0) die(std::string("cannot start a relay thread: ") + std::strerror(rc));
}

// Members t, t + kJoinThreads, ...: connected and greeted, then each waits
// for the word that the job is complete.
void join_some(std::vector<Member *> &members, int first, const Address &at, const std::string &secret,
               std::string *error) {
  const std::string shown = "the benchmark's rendezvous at " + at.text();
  const auto deadline = Clock::now() + std::chrono::seconds(static_cast<int>(kTimeoutSeconds));
  for (std::size_t i = first; i < members.size(); i += kJoinThreads) {
    Member &m = *members[i];
    std::string why;
    if (connect_to(at, "the benchmark's rendezvous", deadline, &m.tcp) != PG_OK) {
      *error = pg::last_error();
      return;
    }
    if (greet(m, secret, shown, "", deadline, &why) != PG_OK) {
      *error = "rank " + std::to_string(i) + ": " + why;
      return;
    }
  }
  for (std::size_t i = first; i < members.size(); i += kJoinThreads) {
    std::string why;
    if (await_ready(*members[i], shown, kTimeoutSeconds, &why) != PG_OK) {
      *error = "rank " + std::to_string(i) + ": " + why;
      return;
    }
  }
}

void join_all(std::vector<Member *> &members, const Address &at, const std::string &secret) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kJoinThreads);
  for (int t = 0; t < kJoinThreads; ++t)
    threads.emplace_back(join_some, std::ref(members), t, std::cref(at), std::cref(secret), &errors[t]);
  for (auto &t : threads) t.join();
  for (const std::string &e : errors)
    if (!e.empty()) die(e);
  for (Member *m : members) {
    std::string why;
    if (open_pmi(*m, &why) != PG_OK) die(why);
    start_relay(m);
  }
}

// MPICH's PMI-1 dialogue, reduced to what reaches the rendezvous.
void exchange(std::vector<Member *> &members, const Options &o) {
  const int n = static_cast<int>(members.size());
  std::vector<Client> clients(members.size());
  for (int r = 0; r < n; ++r) clients[r].fd = members[r]->pmi_client;
  const std::string kvs = members[0]->kvsname;
  std::vector<std::string> lines(members.size()), expected(members.size());
  auto all = [&](auto line_of, auto answer_of) {
    for (int r = 0; r < n; ++r) {
      lines[r] = line_of(r);
      expected[r] = answer_of(r);
    }
    round(clients, lines, expected);
  };
  all([&](int) { return "cmd=get kvsname=" + kvs + " key=PMI_process_mapping"; },
      [&](int) { return "cmd=get_result rc=-1 found=FALSE msg=key_PMI_process_mapping_not_found"; });
  all([&](int r) { return "cmd=put kvsname=" + kvs + " key=card-" + std::to_string(r) + " value=" + card_of(r, o.card); },
      [&](int) { return "cmd=put_result rc=0"; });
  all([&](int) { return "cmd=barrier_in"; }, [&](int) { return "cmd=barrier_out rc=0"; });
  for (int k = 1; k <= o.gets; ++k)
    all([&](int r) { return "cmd=get kvsname=" + kvs + " key=card-" + std::to_string((r + k) % n); },
        [&](int r) { return "cmd=get_result rc=0 found=TRUE value=" + card_of((r + k) % n, o.card); });
  all([&](int) { return "cmd=barrier_in"; }, [&](int) { return "cmd=barrier_out rc=0"; });
}

int run_one(int n, const Options &o) {
  raise_descriptor_limit(n);
  int listen_fd = -1, port = 0;
  std::string note;
  if (listen_on(Address{"127.0.0.1", 0}, "the benchmark's rendezvous", &listen_fd, &port, &note) != PG_OK)
    die(pg::last_error());
  const Address at{"127.0.0.1", port};
  const std::string secret = random_hex(32);
  auto *server = new Server(listen_fd, n, secret, kTimeoutSeconds, kTimeoutSeconds, at.text());
  std::vector<Member *> members;
  for (int r = 0; r < n; ++r) {
    members.push_back(new Member);
    members.back()->rank = r;
    members.back()->size = n;
    members.back()->at = at;
  }
  const auto start = std::chrono::steady_clock::now();
  if (server->start() != PG_OK) die(pg::last_error());
  join_all(members, at, secret);
  const double join = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  exchange(members, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double bytes = static_cast<double>(server->bytes_sent());
  const double ratio = bytes / (double(n) * o.card);
  std::printf("%8d %9.3f %9.3f %14.0f %14.2f\n", n, wall, join, bytes, ratio);
  std::fflush(stdout);
  if (o.max_ratio > 0 && ratio > o.max_ratio) {
    std::fprintf(stderr,
                 "bootstrap_bench: rank 0 sent %.0f bytes to %d members, %.2f times N x card (%d B): above the "
                 "limit of %g\n",
                 bytes, n, ratio, o.card, o.max_ratio);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse_options(argc, argv, &o)) return 2;
  std::printf("# rendezvous: join + 2 barriers, card %d B, %d get(s) of neighbours' cards per member\n", o.card,
              o.gets);
  std::printf("%8s %9s %9s %14s %14s\n", "members", "wall_s", "join_s", "rank0_bytes", "bytes/(P*card)");
  std::fflush(stdout);
  int status = 0;
  for (int n : o.members) {
    // A child per size: the relay threads and connections of one run end with it.
    const pid_t child = fork();
    if (child < 0) die(std::string("fork failed: ") + std::strerror(errno));
    if (child == 0) {
      const int rc = run_one(n, o);
      std::fflush(stdout);
      _exit(rc);
    }
    int ws = 0;
    waitpid(child, &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      std::fprintf(stderr, "bootstrap_bench: the run with %d members failed (%s %d)\n", n,
                   WIFEXITED(ws) ? "exit" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
      status = 1;
    }
  }
  return status;
}
