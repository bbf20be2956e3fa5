// The bootstrap's rendezvous and PMI relays over loopback, in one process
// (src/launch, docs/launch.md): rank 0's real Server, each member joined by
// the real member side and served by its real relay thread; the test plays
// MPI, writing PMI-1 lines to each member's PMI socket. What PMI-1 promises
// (a get after a barrier sees every put before it, rc=-1 for a missing key),
// the frames' limit on the sending side, a member that rejects a frame, the
// bound on rank 0's wait at its exit, and a job that cannot form (a process
// that dies in the rendezvous, one that never comes).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "launch/auth.h"
#include "launch/member.h"
#include "launch/pmi_relay.h"
#include "launch/rendezvous.h"
#include "util/status.h"

using namespace pg::launch;

namespace {

// A rendezvous whose thread may still be finishing when its test ends: never
// freed, and kept reachable so that LeakSanitizer does not call it lost.
Server *kept(Server *server) {
  static auto *servers = new std::vector<Server *>;
  servers->push_back(server);
  return server;
}

// A job of `n` members in this process, joined to a rendezvous on loopback.
class Job {
 public:
  explicit Job(int n, double exit_timeout_s = 60) {
    int fd = -1, port = 0;
    std::string note;
    EXPECT_EQ(listen_on(Address{"127.0.0.1", 0}, "the test's rendezvous", &fd, &port, &note), PG_OK)
        << pg::last_error();
    at_ = Address{"127.0.0.1", port};
    const std::string secret = random_hex(32);
    server_ = kept(new Server(fd, n, secret, 30, exit_timeout_s, at_.text()));
    EXPECT_EQ(server_->start(), PG_OK) << pg::last_error();
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    for (int r = 0; r < n; ++r) {
      auto m = std::make_unique<Member>();
      m->rank = r;
      m->size = n;
      m->at = at_;
      std::string why;
      EXPECT_EQ(connect_to(at_, "the test's rendezvous", deadline, &m->tcp), PG_OK) << pg::last_error();
      EXPECT_EQ(greet(*m, secret, at_.text(), "", deadline, &why), PG_OK) << why;
      members_.push_back(std::move(m));
    }
    for (auto &m : members_) {
      std::string why;
      EXPECT_EQ(await_ready(*m, at_.text(), 30, &why), PG_OK) << why;
      EXPECT_EQ(open_pmi(*m, &why), PG_OK) << why;
      relays_.emplace_back(serve, m.get());
      pending_.emplace_back();
    }
    kvs = members_[0]->kvsname;
  }

  // Each member says goodbye, as at its exit; its relay then ends.
  ~Job() {
    for (auto &m : members_) {
      m->exiting = true;
      m->send({"BYE"});
      shutdown(m->tcp, SHUT_RDWR);
    }
    for (auto &t : relays_) t.join();
    for (auto &m : members_) {
      ::close(m->tcp);
      ::close(m->pmi_client);
      if (m->pmi >= 0) ::close(m->pmi);
      delete m->session;  // a process's member keeps it to its exit; the test's relays have ended
    }
  }

  void write(int rank, const std::string &line) {
    ASSERT_TRUE(send_all(members_[rank]->pmi_client, line + "\n"));
  }

  // The next line the member's PMI server answered ("" after 10 s of nothing).
  std::string read(int rank) {
    std::string &pending = pending_[rank];
    char buf[4096];
    std::size_t eol;
    while ((eol = pending.find('\n')) == std::string::npos) {
      pollfd p{members_[rank]->pmi_client, POLLIN, 0};
      if (poll(&p, 1, 10000) <= 0) return "";
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n <= 0) return "";
      pending.append(buf, static_cast<std::size_t>(n));
    }
    std::string line = pending.substr(0, eol);
    pending.erase(0, eol + 1);
    return line;
  }

  std::string ask(int rank, const std::string &line) {
    write(rank, line);
    return read(rank);
  }
  std::string get(int rank, const std::string &key) { return ask(rank, "cmd=get kvsname=" + kvs + " key=" + key); }
  std::string put(int rank, const std::string &key, const std::string &value) {
    return ask(rank, "cmd=put kvsname=" + kvs + " key=" + key + " value=" + value);
  }
  void barrier() {
    for (std::size_t r = 0; r < members_.size(); ++r) write(static_cast<int>(r), "cmd=barrier_in");
    for (std::size_t r = 0; r < members_.size(); ++r) EXPECT_EQ(read(static_cast<int>(r)), "cmd=barrier_out rc=0");
  }

  Server &server() { return *server_; }
  Member &member(int rank) { return *members_[rank]; }

  std::string kvs;

 private:
  Address at_;
  Server *server_ = nullptr;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<std::thread> relays_;
  std::vector<std::string> pending_;
};

std::string found(const std::string &value) { return "cmd=get_result rc=0 found=TRUE value=" + value; }
std::string missing(const std::string &key) { return "cmd=get_result rc=-1 found=FALSE msg=key_" + key + "_not_found"; }

}  // namespace

TEST(LaunchRendezvous, GetsSeeThePutsOfEndedBarriers) {
  Job job(3);
  EXPECT_EQ(job.get(0, "PMI_process_mapping"), missing("PMI_process_mapping"));
  EXPECT_EQ(job.put(0, "a", "from-0"), "cmd=put_result rc=0");
  EXPECT_EQ(job.put(1, "b", "b-0"), "cmd=put_result rc=0");
  EXPECT_EQ(job.put(1, "b", "b-1"), "cmd=put_result rc=0");
  EXPECT_EQ(job.put(2, "c", "c-2"), "cmd=put_result rc=0");
  // Its own puts a process sees at once; the others' only after the barrier.
  EXPECT_EQ(job.get(1, "b"), found("b-1"));
  EXPECT_EQ(job.get(0, "c"), missing("c"));
  const std::uint64_t before = job.server().bytes_sent();
  job.barrier();
  // The barrier's answer carries no puts: 3 frames of "BARRIER-OUT\n0".
  EXPECT_EQ(job.server().bytes_sent() - before, 3 * (8 + std::string("BARRIER-OUT\n0").size()));
  EXPECT_EQ(job.get(1, "a"), found("from-0"));
  EXPECT_EQ(job.get(0, "b"), found("b-1"));  // a key put twice holds the later value
  EXPECT_EQ(job.get(2, "b"), found("b-1"));
  EXPECT_EQ(job.get(0, "c"), found("c-2"));
  EXPECT_EQ(job.get(2, "c"), found("c-2"));
  EXPECT_EQ(job.get(1, "nothing"), missing("nothing"));
  // Asked twice, answered once by rank 0.
  const std::uint64_t once = job.server().bytes_sent();
  EXPECT_EQ(job.get(2, "b"), found("b-1"));
  EXPECT_EQ(job.get(1, "nothing"), missing("nothing"));
  EXPECT_EQ(job.server().bytes_sent(), once);
  // A later barrier's put replaces the value, also where it was fetched before.
  EXPECT_EQ(job.put(1, "b", "b-2"), "cmd=put_result rc=0");
  EXPECT_EQ(job.put(0, "nothing", "now-something"), "cmd=put_result rc=0");
  EXPECT_EQ(job.get(2, "b"), found("b-1"));
  job.barrier();
  EXPECT_EQ(job.get(2, "b"), found("b-2"));
  EXPECT_EQ(job.get(0, "b"), found("b-2"));
  EXPECT_EQ(job.get(1, "nothing"), found("now-something"));
  EXPECT_EQ(job.get(1, "a"), found("from-0"));  // older barriers' values stay
}

TEST(LaunchRendezvous, RefusesABarrierTooLargeForAFrame) {
  Job job(2);
  // 1 KiB values until the puts exceed the 64 MiB a frame may hold, in
  // batches (MPI's lines and the answers would fill the socket otherwise).
  const std::string value(kPmiValueMax, 'v');
  const int puts = static_cast<int>(kMaxFrame / (kPmiValueMax + 8)) + 64;
  for (int i = 0; i < puts; i += 256) {
    const int batch = std::min(256, puts - i);
    for (int j = 0; j < batch; ++j)
      job.write(1, "cmd=put kvsname=" + job.kvs + " key=k" + std::to_string(i + j) + " value=" + value);
    for (int j = 0; j < batch; ++j) ASSERT_EQ(job.read(1), "cmd=put_result rc=0") << i + j;
  }
  testing::internal::CaptureStderr();
  const std::string answer = job.ask(1, "cmd=barrier_in");
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(answer.rfind("cmd=barrier_out rc=-1 msg=rank_1's_PMI_puts_since_the_last_barrier_make_a_frame_of_", 0), 0u)
      << answer;
  EXPECT_NE(answer.find("_bytes,_above_the_limit_of_67108864_bytes_(64_MiB)"), std::string::npos) << answer;
  EXPECT_NE(log.find("rank 1's PMI puts since the last barrier make a frame of"), std::string::npos) << log;
  EXPECT_NE(log.find("above the limit of 67108864 bytes (64 MiB)"), std::string::npos) << log;
}

namespace {

// What a connection to the rendezvous got within `ms`: 1 its greeting, 2 BUSY
// (come back later), 0 nothing yet, -1 its end or something else.
int greeting(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return 0;
  char buf[4096];
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  if (n <= 0) return -1;
  FrameReader reader(kMaxHelloFrame);
  reader.feed(buf, static_cast<std::size_t>(n));
  Fields f;
  std::string error;
  if (reader.next(&f, &error) != 1) return -1;
  return f[0] == "HELLO" ? 1 : f == Fields{"BUSY"} ? 2 : -1;
}

// A connection to `at` from the loopback address `source` (127.0.0.0/8 is
// all this machine's: each address stands for another host).
int connect_from(const std::string &source, const Address &at) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &from.sin_addr);
  inet_pton(AF_INET, at.host.c_str(), &to.sin_addr);
  to.sin_port = htons(static_cast<std::uint16_t>(at.port));
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&from), sizeof from), 0) << source;
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to), 0) << source;
  return fd;
}

// A rendezvous for one process on loopback, and its address.
Server *one_process_rendezvous(const std::string &secret, Address *at) {
  int fd = -1, port = 0;
  std::string note;
  EXPECT_EQ(listen_on(Address{"127.0.0.1", 0}, "the test's rendezvous", &fd, &port, &note), PG_OK);
  *at = Address{"127.0.0.1", port};
  Server *server = kept(new Server(fd, 1, secret, 30, 30, at->text()));
  EXPECT_EQ(server->start(), PG_OK);
  return server;
}

// The job's one process joins from 127.0.0.1: PG_OK, or why not in *why.
pg_status join_alone(const Address &at, const std::string &secret, std::string *why) {
  Member m;
  m.at = at;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  EXPECT_EQ(connect_to(at, "the test's rendezvous", deadline, &m.tcp), PG_OK);
  pg_status st = greet(m, secret, at.text(), "", deadline, why);
  if (st == PG_OK) st = await_ready(m, at.text(), 30, why);
  if (st == PG_OK) m.send({"BYE"});
  if (m.tcp >= 0) ::close(m.tcp);
  return st;
}

}  // namespace

TEST(LaunchRendezvous, NewcomersBeyondTheStrangersLimitWait) {
  const std::string secret = random_hex(32);
  Address at;
  one_process_rendezvous(secret, &at);
  // 300 connections from 10 hosts that do not greet: 256 are held (and
  // greeted), the others wait to be accepted, none is turned away.
  std::vector<int> strangers;
  for (int i = 0; i < 300; ++i) strangers.push_back(connect_from("127.0.0." + std::to_string(1 + i % 10), at));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int greeted = 0, waiting = 0;
  for (int s : strangers) {
    const int g = greeting(s, 0);
    ASSERT_TRUE(g == 0 || g == 1) << "a connection was turned away (" << g << ")";
    greeted += g == 1;
    waiting += g == 0;
  }
  EXPECT_EQ(greeted, 256);
  EXPECT_EQ(waiting, 44);
  // As strangers leave, the waiting ones are let in; then a process of the job joins.
  for (int i = 0; i < 100; ++i) ::close(strangers[i]);
  for (int i = 256; i < 300; ++i) EXPECT_EQ(greeting(strangers[i], 5000), 1) << i;
  std::string why;
  EXPECT_EQ(join_alone(at, secret, &why), PG_OK) << why;
  for (int i = 100; i < 300; ++i) ::close(strangers[i]);
}

TEST(LaunchRendezvous, OneHostCannotTakeEveryPlace) {
  // 300 connections from one host that never greet: it holds
  // kMaxStrangersPerAddress places, the others are told BUSY at once; a
  // process of the job from another host still gets in without waiting
  // (it used to wait behind them, beyond its greeting's 10 s).
  const std::string secret = random_hex(32);
  Address at;
  one_process_rendezvous(secret, &at);
  std::vector<int> strangers;
  for (int i = 0; i < 300; ++i) strangers.push_back(connect_from("127.0.0.2", at));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int greeted = 0, busy = 0;
  for (int s : strangers) {
    const int g = greeting(s, 0);
    greeted += g == 1;
    busy += g == 2;
  }
  EXPECT_EQ(greeted, static_cast<int>(kMaxStrangersPerAddress));
  EXPECT_EQ(busy, 300 - static_cast<int>(kMaxStrangersPerAddress));
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  EXPECT_EQ(join_alone(at, secret, &why), PG_OK) << why;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
  for (int s : strangers) ::close(s);
}

TEST(LaunchRendezvous, AProcessToldBusyComesBack) {
  // Its own host's places are all taken (by connections that never greet):
  // the process is told BUSY, comes back, and gets in once they leave.
  const std::string secret = random_hex(32);
  Address at;
  one_process_rendezvous(secret, &at);
  std::vector<int> strangers;
  for (std::size_t i = 0; i < kMaxStrangersPerAddress; ++i) strangers.push_back(connect_from("127.0.0.1", at));
  for (int s : strangers) ASSERT_EQ(greeting(s, 5000), 1);
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int s : strangers) ::close(s);
  });
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  EXPECT_EQ(join_alone(at, secret, &why), PG_OK) << why;
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.3);
  leave.join();
}

TEST(LaunchRendezvous, ExitWaitIsBounded) {
  Job job(3, 0.5);
  // Rank 0's process at its exit: its own member says goodbye, rank 1
  // finalizes MPI, rank 2 is never heard from.
  job.member(0).send({"BYE"});
  job.ask(1, "cmd=finalize");
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  job.server().wait_for_members();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 5);
  EXPECT_NE(log.find("rank 0 exits without word from rank(s) 2: they did not finalize MPI within "
                     "PGS_BOOTSTRAP_EXIT_TIMEOUT=0.5 s"),
            std::string::npos)
      << log;
}

namespace {

// A rendezvous on loopback for `size` processes, joined by none yet.
struct Rendezvous {
  explicit Rendezvous(int size, double timeout_s) {
    int fd = -1, port = 0;
    std::string note;
    EXPECT_EQ(listen_on(Address{"127.0.0.1", 0}, "the test's rendezvous", &fd, &port, &note), PG_OK);
    at = Address{"127.0.0.1", port};
    server = kept(new Server(fd, size, secret, timeout_s, 30, at.text()));
    EXPECT_EQ(server->start(), PG_OK);
  }
  // A member of rank `rank` that connected and greeted: PG_OK when admitted, else why not in *why.
  pg_status join(Member &m, int rank, int size, std::string *why) {
    m.rank = rank;
    m.size = size;
    m.at = at;
    EXPECT_EQ(connect_to(at, "the test's rendezvous", Clock::now() + std::chrono::seconds(30), &m.tcp), PG_OK);
    return greet(m, secret, at.text(), "", Clock::now() + std::chrono::seconds(30), why);
  }
  std::string secret = random_hex(32);
  Address at;
  Server *server = nullptr;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST(LaunchRendezvous, AProcessThatDiesBeforeTheJobIsCompleteIsNotWaitedFor) {
  // Ranks 0 and 1 arrive, rank 1 dies (its connection closes), rank 2
  // comes later: each hears who left, and rank 0's process then waits for
  // no one (it used to wait for the dead rank to hear, until
  // PGS_BOOTSTRAP_TIMEOUT).
  Rendezvous rv(3, 30);
  Member m0, m1, m2;
  std::string why;
  ASSERT_EQ(rv.join(m0, 0, 3, &why), PG_OK) << why;
  ASSERT_EQ(rv.join(m1, 1, 3, &why), PG_OK) << why;
  ::close(m1.tcp);
  EXPECT_EQ(await_ready(m0, rv.at.text(), 30, &why), PG_ERR_STATE);
  EXPECT_NE(why.find("rank 1 (host "), std::string::npos) << why;
  EXPECT_NE(why.find("left the rendezvous at " + rv.at.text() + " (closed) before every process of the job had arrived"),
            std::string::npos)
      << why;
  EXPECT_EQ(rv.join(m2, 2, 3, &why), PG_ERR_STATE);
  EXPECT_NE(why.find("rank 1 (host "), std::string::npos) << why;
  const auto start = std::chrono::steady_clock::now();
  rv.server->wait_failure_heard(30);
  EXPECT_LT(seconds_since(start), 5);
  ::close(m0.tcp);
  ::close(m2.tcp);
}

TEST(LaunchRendezvous, TheWaitForTheFailureToBeHeardOutlastsTheDeadline) {
  // At the join's deadline rank 0's own process hears first, with no time
  // left; the others must hear too before it exits: it waits the drain time
  // at least (here nothing ends the wait sooner: the job has not failed).
  Rendezvous rv(2, 30);
  Member m0;
  std::string why;
  ASSERT_EQ(rv.join(m0, 0, 2, &why), PG_OK) << why;
  const auto start = std::chrono::steady_clock::now();
  rv.server->wait_failure_heard(0);
  EXPECT_GE(seconds_since(start), kEndDrainSeconds * 0.9);
  ::close(m0.tcp);
}

TEST(LaunchRendezvous, EveryArrivedProcessHearsWhoNeverCame) {
  // PGS_BOOTSTRAP_TIMEOUT passes without rank 2: ranks 0 and 1 both hear
  // which rank never came, and rank 0's wait ends once the rendezvous has
  // told them (it stops), well before the drain time's bound matters.
  Rendezvous rv(3, 1);
  Member m0, m1;
  std::string why0, why1;
  ASSERT_EQ(rv.join(m0, 0, 3, &why0), PG_OK) << why0;
  ASSERT_EQ(rv.join(m1, 1, 3, &why1), PG_OK) << why1;
  EXPECT_EQ(await_ready(m0, rv.at.text(), 30, &why0), PG_ERR_TIMEOUT);
  rv.server->wait_failure_heard(0);
  pollfd p{m1.tcp, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 1) << "rank 1 has not been told yet";
  EXPECT_EQ(await_ready(m1, rv.at.text(), 30, &why1), PG_ERR_TIMEOUT);
  for (const std::string &why : {why0, why1})
    EXPECT_NE(why.find("rank 2 of 3 did not reach the job's rendezvous at " + rv.at.text() +
                       " within PGS_BOOTSTRAP_TIMEOUT=1 s (2 did)"),
              std::string::npos)
        << why;
  ::close(m0.tcp);
  ::close(m1.tcp);
}

// A member's relay whose rendezvous (the other end of `tcp`) announced a frame of 1 TiB.
void serve_an_oversized_frame(int tcp) {
  int pmi[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, pmi);
  Member m;
  m.tcp = tcp;
  m.pmi = pmi[0];
  m.pmi_client = pmi[1];
  m.at = Address{"127.0.0.1", 29500};
  PmiSession session(1, 2, "kvs");
  m.session = &session;
  serve(&m);
}

// A job whose rank 1 tells rank 0 it could not read a frame.
void reject_a_frame() {
  Job job(2);
  job.member(1).send({"REJECT", "a frame of 99 bytes, above the limit of 10 bytes (10 B)"});
  std::this_thread::sleep_for(std::chrono::seconds(10));
}

TEST(LaunchRendezvousDeathTest, AMemberThatRejectsAFrameSaysWhy) {
  // Forked, not re-run: what the member sends its rendezvous comes back here.
  GTEST_FLAG_SET(death_test_style, "fast");
  int tcp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, tcp), 0);
  ASSERT_TRUE(send_all(tcp[1], std::string("\0\0\x01\0\0\0\0\0", 8)));
  EXPECT_EXIT(serve_an_oversized_frame(tcp[0]), testing::ExitedWithCode(1),
              "could not read what the job's rendezvous at 127.0.0.1:29500 sent it \\(a frame of 1099511627776 bytes, "
              "above the limit of 67108864 bytes \\(64 MiB\\)\\); the job ends");
  // Rank 0 heard why, before the member ended.
  ::close(tcp[0]);
  FrameReader reader(kMaxFrame);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(tcp[1], buf, sizeof buf)) > 0) reader.feed(buf, static_cast<std::size_t>(n));
  Fields f;
  std::string error;
  ASSERT_EQ(reader.next(&f, &error), 1) << error;
  EXPECT_EQ(f, (Fields{"REJECT", "a frame of 1099511627776 bytes, above the limit of 67108864 bytes (64 MiB)"}));
  ::close(tcp[1]);
}

// A job whose rank 2 puts the key rank 0 put, in the barrier before or in the same one.
void put_anothers_key(bool same_barrier) {
  Job job(3);
  job.put(0, "k", "from-0");
  if (!same_barrier) job.barrier();
  job.put(2, "k", "from-2");
  for (int r = 0; r < 3; ++r) job.write(r, "cmd=barrier_in");
  std::this_thread::sleep_for(std::chrono::seconds(10));
}

TEST(LaunchRendezvousDeathTest, NoProcessChangesAKeyAnotherPut) {
  // After READY as before it, a key is its first writer's: another process
  // (one that is not of the job, having learnt the address) cannot replace
  // the business card MPI reads, and the job ends saying who tried.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (bool same_barrier : {false, true})
    EXPECT_EXIT(put_anothers_key(same_barrier), testing::ExitedWithCode(1),
                "rank 2 \\(host .*, pid [0-9]+\\) put the PMI key 'k', which rank 0 put before: a process may "
                "replace only its own keys; the job ends")
        << (same_barrier ? "in one barrier" : "in a later barrier");
}

TEST(LaunchRendezvousDeathTest, RankZeroSaysWhoRejectedAFrame) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(reject_a_frame(), testing::ExitedWithCode(1),
              "rank 1 \\(host .*, pid [0-9]+\\) could not read what the job's rendezvous at 127.0.0.1:[0-9]+ sent it "
              "\\(a frame of 99 bytes, above the limit of 10 bytes \\(10 B\\)\\); the job ends");
}

TEST(LaunchNet, AConnectionNeverAnsweredEndsAtTheDeadline) {
  // A listener whose queue is full (backlog 0, nothing accepted): the kernel
  // drops further connections' first packets, and a blocking connect would
  // wait through its retries (about 2 minutes).
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof at;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr *>(&at), sizeof at), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr *>(&at), &len), 0);
  std::vector<int> queued;
  for (int i = 0; i < 4; ++i) {
    queued.push_back(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    connect(queued.back(), reinterpret_cast<sockaddr *>(&at), sizeof at);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = std::chrono::steady_clock::now();
  int fd = -1;
  EXPECT_EQ(connect_to(Address{"127.0.0.1", ntohs(at.sin_port)}, "the test's rendezvous",
                       Clock::now() + std::chrono::seconds(1), &fd),
            PG_ERR_TIMEOUT);
  EXPECT_LT(seconds_since(start), 3);
  EXPECT_NE(pg::last_error().find("nothing accepted a connection at the test's rendezvous=127.0.0.1:"),
            std::string::npos)
      << pg::last_error();
  if (fd >= 0) ::close(fd);
  for (int q : queued) ::close(q);
  ::close(listener);
}

TEST(LaunchNet, TellsALoopbackListenerFromOneOthersReach) {
  // Rank 0 warns when a rendezvous without PGS_BOOTSTRAP_SECRET listens
  // where other machines reach it: on any address but a loopback one.
  const std::pair<const char *, bool> cases[] = {{"127.0.0.1", true}, {"127.0.0.2", true}, {"0.0.0.0", false},
                                                 {"::1", true}, {"::", false}};
  for (const auto &[host, loopback] : cases) {
    int fd = -1, port = 0;
    std::string note;
    if (listen_on(Address{host, 0}, "the test's rendezvous", &fd, &port, &note) != PG_OK) {
      EXPECT_NE(std::string(host).find(':'), std::string::npos) << host << ": " << pg::last_error();
      continue;  // no IPv6 here
    }
    EXPECT_EQ(loopback_only(fd), loopback) << host;
    ::close(fd);
  }
}

namespace {

// The next frame the rendezvous sent `m` within `seconds`: 1 in *f, 0 none, -1 the connection ended.
int next_frame(Member &m, Fields *f, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  std::string error;
  std::vector<char> buf(1 << 16);
  while (true) {
    const int got = m.reader.next(f, &error);
    if (got != 0) return got;
    if (wait_readable(m.tcp, deadline) != 1) return 0;
    const ssize_t n = recv(m.tcp, buf.data(), buf.size(), 0);
    if (n <= 0) return -1;
    m.reader.feed(buf.data(), static_cast<std::size_t>(n));
  }
}

}  // namespace

TEST(LaunchRendezvous, AMemberThatDoesNotReadHoldsUpNoOther) {
  // Rank 1 asks for a 1 KiB value 30000 times and reads nothing (a stopped
  // process, or one that floods the rendezvous with gets): 30 MiB, more than
  // the sockets between them hold. Rank 0 is still answered at once (the
  // rendezvous used to block in its send to rank 1); once rank 1 reads
  // again, every answer reaches it.
  Rendezvous rv(2, 30);
  Member m0, m1;
  std::string why;
  ASSERT_EQ(rv.join(m0, 0, 2, &why), PG_OK) << why;
  ASSERT_EQ(rv.join(m1, 1, 2, &why), PG_OK) << why;
  ASSERT_EQ(await_ready(m0, rv.at.text(), 30, &why), PG_OK) << why;
  ASSERT_EQ(await_ready(m1, rv.at.text(), 30, &why), PG_OK) << why;
  const std::string value(kPmiValueMax, 'v');
  const Fields answer{"GOT", "card-1", "1", value};
  ASSERT_TRUE(m1.send({"BARRIER", "0", "card-1", value}));
  ASSERT_TRUE(m0.send({"BARRIER", "0"}));
  Fields f;
  for (Member *m : {&m0, &m1}) {
    ASSERT_EQ(next_frame(*m, &f, 10), 1);
    EXPECT_EQ(f, (Fields{"BARRIER-OUT", "0"}));
  }
  constexpr int kGets = 30000;
  std::thread flood([&] {
    for (int i = 0; i < kGets; ++i)
      if (!m1.send({"GET", "card-1"})) return;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(m0.send({"GET", "card-1"}));
  const int answered = next_frame(m0, &f, 2);
  EXPECT_EQ(answered, 1) << "rank 0 was not answered while rank 1 read nothing";
  EXPECT_LT(seconds_since(start), 1);
  if (answered == 1) EXPECT_EQ(f, answer);
  int answers = 0;
  while (answers < kGets && next_frame(m1, &f, 10) == 1) answers += f == answer;
  flood.join();
  EXPECT_EQ(answers, kGets);
  m0.send({"BYE"});
  m1.send({"BYE"});
  ::close(m0.tcp);
  ::close(m1.tcp);
}
