#include "launch/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "launch/auth.h"
#include "launch/pmi.h"
#include "util/log.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

// Connections that have not proved the secret yet, at most. Beyond them,
// newcomers wait in the listening socket's backlog, not turned away: when
// thousands of processes arrive at once, one turned away would fail the job.
constexpr std::size_t kMaxStrangers = 256;
// Refusals printed; later ones are counted only.
constexpr int kRefusalsShown = 10;

std::string clip(const std::string &s, std::size_t n) { return text::printable(s.substr(0, n)); }

std::string peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0)
    getnameinfo(reinterpret_cast<sockaddr *>(&ss), len, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

// Ranks for a one-line message: the first few, then how many more.
std::string ranks_text(const std::vector<std::string> &ranks) {
  constexpr std::size_t kShown = 16;
  if (ranks.size() <= kShown) return text::join(ranks, ", ");
  return text::join(std::vector<std::string>(ranks.begin(), ranks.begin() + kShown), ", ") + " and " +
         std::to_string(ranks.size() - kShown) + " more";
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

Server::Server(int fd, int size, std::string secret, double timeout_s, double exit_timeout_s, std::string shown)
    : listen_fd_(fd),
      size_(size),
      secret_(std::move(secret)),
      timeout_s_(timeout_s),
      exit_timeout_s_(exit_timeout_s),
      shown_(std::move(shown)),
      kvsname_("pgs_" + random_hex(6)),
      rank_peer_(static_cast<std::size_t>(size), nullptr),
      fds_(new std::atomic<int>[static_cast<std::size_t>(size) + 1]),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      barrier_puts_(static_cast<std::size_t>(size)) {
  for (int i = 0; i < size; ++i) fds_[i] = -1;
  fds_[size] = fd;
}

void Server::close_in_child() {
  for (int i = 0; i <= size_; ++i) {
    const int fd = fds_[i].exchange(-1);
    if (fd >= 0) ::close(fd);
  }
  const int e = epoll_fd_.exchange(-1);
  if (e >= 0) ::close(e);
}

std::string Server::framed(const Fields &f) const {
  std::string out, error;
  // The rendezvous frames only short messages and single PMI values: never above the limit.
  if (!frame(f, &out, &error))
    log::write(params::LogLevel::error, "bootstrap: the rendezvous at %s did not send '%s': %s", shown_.c_str(),
               clip(f.empty() ? "" : f[0], 32).c_str(), error.c_str());
  return out;
}

bool Server::send_to(int fd, const std::string &data) {
  bytes_sent_ += data.size();
  return send_all(fd, data);
}

pg_status Server::start() {
  if (epoll_fd_ < 0)
    return fail(PG_ERR_INTERNAL, "bootstrap: the rendezvous at %s cannot wait for its members: epoll_create1 failed (%s)",
                shown_.c_str(), std::strerror(errno));
  watch(listen_fd_, nullptr);
  thread_ = std::thread(&Server::run, this);
  thread_.detach();
  return PG_OK;
}

std::string Server::who(const Peer &p) const {
  return "rank " + std::to_string(p.rank) + " (host " + p.host + ", pid " + p.pid + ")";
}

bool Server::holds_rank(const Peer &p) const {
  return p.joined && p.rank >= 0 && p.rank < size_ && rank_peer_[static_cast<std::size_t>(p.rank)] == &p;
}

void Server::settle(Peer &p) {
  if (p.settled || !holds_rank(p)) return;
  p.settled = true;
  ++settled_;
}

void Server::close_peer(Peer &p) {
  if (p.closed) return;
  p.closed = true;
  if (!p.joined) {
    --strangers_;
    pace_accepting();
  }
  if (holds_rank(p)) fds_[p.rank] = -1;
  settle(p);
  unwatch(p.fd);
  ::close(p.fd);
}

void Server::close_listener() {
  if (listen_fd_ < 0) return;
  fds_[size_] = -1;
  unwatch(listen_fd_);
  ::close(listen_fd_);
  listen_fd_ = -1;
}

void Server::refuse(Peer &p, const std::string &why, const std::string &reply) {
  if (!reply.empty()) send_to(p.fd, framed({"REFUSED", std::to_string(PG_ERR_INVALID_ARGUMENT), reply}));
  if (refusals_ < kRefusalsShown) {
    // Printed whatever PGS_LOG says: someone reached the job's rendezvous who is not of the job.
    log::write(params::LogLevel::warn, "bootstrap: refused a connection from %s to the rendezvous at %s: %s%s",
               p.from.c_str(), shown_.c_str(), why.c_str(),
               refusals_ + 1 == kRefusalsShown ? " (further refusals are not shown)" : "");
  }
  ++refusals_;
  close_peer(p);
}

void Server::accept_one() {
  const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  tune(fd);
  auto p = std::make_unique<Peer>();
  p->fd = fd;
  p->from = peer_name(fd);
  p->nonce = random_hex(16);
  p->hello_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(kHelloSeconds));
  if (p->nonce.empty() || !send_to(fd, framed({"HELLO", kProtocol, p->nonce}))) {
    ::close(fd);
    return;
  }
  ++strangers_;
  watch(fd, p.get());
  peers_.push_back(std::move(p));
  pace_accepting();
}

void Server::pace_accepting() {
  if (listen_fd_ < 0) return;
  const bool room = strangers_ < kMaxStrangers;
  if (room == accepting_) return;
  accepting_ = room;
  if (room)
    watch(listen_fd_, nullptr);
  else
    unwatch(listen_fd_);
}

void Server::on_hello(Peer &p, const Fields &f) {
  if (f.size() != 8 || f[0] != "JOIN") {
    refuse(p, "it did not greet as a process of a pgstrategy job", "");
    return;
  }
  if (f[1] != kProtocol) {
    refuse(p, "it speaks '" + clip(f[1], 64) + "'",
           "the rendezvous at " + shown_ + " speaks " + kProtocol + ", this process '" + clip(f[1], 64) +
               "': every process of a job must run the same pgstrategy");
    return;
  }
  int rank = -1, size = -1;
  if (!text::parse_number(f[4], &rank) || !text::parse_number(f[5], &size) || f[2].size() > 128) {
    refuse(p, "a malformed greeting", "");
    return;
  }
  const std::string expected = proof(secret_, "join", p.nonce, f[2], f[4] + "\n" + f[5]);
  if (expected.empty()) {
    const std::string why = "libcrypto could not compute HMAC-SHA-256 (" + crypto_error() + ")";
    refuse(p, "rank 0's " + why, "the rendezvous at " + shown_ + " could not check this process's proof: " + why);
    return;
  }
  if (!same_secret(expected, f[3])) {
    refuse(p, "it did not prove the job's secret",
           "the rendezvous at " + shown_ +
               " refused this process: it does not hold the job's secret (PGS_BOOTSTRAP_SECRET differs "
               "between the processes, or the address belongs to another job)");
    return;
  }
  p.host = clip(f[6], 255);
  p.pid = clip(f[7], 20);
  p.joined = true;  // one of the job's processes: it hears how the job ends
  --strangers_;
  pace_accepting();
  p.rank = rank;
  if (failed_) {
    send_to(p.fd, failure_);
    close_peer(p);
    ++heard_;
    return;
  }
  if (size != size_) {
    fail_all(PG_ERR_INVALID_ARGUMENT,
             "the job's size differs between its processes: the process on host " + p.host + " (pid " + p.pid +
                 ") has WORLD_SIZE=" + std::to_string(size) + ", rank 0 has WORLD_SIZE=" + std::to_string(size_));
    return;
  }
  if (rank < 0 || rank >= size_) {
    fail_all(PG_ERR_INVALID_ARGUMENT, "the process on host " + p.host + " (pid " + p.pid + ") has RANK=" +
                                          std::to_string(rank) + ", not below WORLD_SIZE=" + std::to_string(size_));
    return;
  }
  if (Peer *other = rank_peer_[static_cast<std::size_t>(rank)]) {
    fail_all(PG_ERR_INVALID_ARGUMENT, "two processes claim RANK=" + std::to_string(rank) + ": pid " + other->pid +
                                          " on host " + other->host + " and pid " + p.pid + " on host " + p.host);
    return;
  }
  rank_peer_[static_cast<std::size_t>(rank)] = &p;
  fds_[rank] = p.fd;
  ++joined_;
  p.reader.set_limit(kMaxFrame);
  send_to(p.fd, framed({"WELCOME", proof(secret_, "welcome", f[2], p.nonce, f[4])}));
  if (joined_ < size_) return;
  // Rank 0's host, for the message should it die: a list of every host
  // would make this frame's bytes, times the processes, grow with their square.
  const std::string message = framed({"READY", std::to_string(size_), kvsname_, rank_peer_[0]->host});
  for (Peer *q : rank_peer_) send_to(q->fd, message);
  ready_ = true;
  close_listener();
  PG_LOG(debug, "bootstrap: all %d processes arrived at the rendezvous at %s", size_, shown_.c_str());
}

void Server::on_frame(Peer &p, const Fields &f) {
  const std::string &verb = f[0];
  if (verb == "FINALIZE") {
    p.finalized = true;
    settle(p);
    return;
  }
  if (verb == "BYE") {
    p.bye = true;
    settle(p);
    return;
  }
  if (verb == "ABORT" && f.size() >= 3) {
    int code = 1;
    if (!text::parse_number(f[1], &code)) code = 1;
    end_all(code == 0 ? 1 : code, who(p) + " called MPI_Abort (exit code " + clip(f[1], 12) + "): " + clip(f[2], 1024));
    return;
  }
  if (verb == "REJECT" && f.size() >= 2) {
    end_all(1, who(p) + " could not read what the job's rendezvous at " + shown_ + " sent it (" + clip(f[1], 512) +
                   ")");
    return;
  }
  if (verb == "BARRIER" && ready_) {
    on_barrier(p, f);
    return;
  }
  if (verb == "GET" && ready_ && f.size() == 2 && !f[1].empty() && f[1].size() <= kPmiKeyMax) {
    on_get(p, f);
    return;
  }
  on_lost(p, "sent a message out of protocol ('" + clip(verb, 32) + "')");
}

void Server::on_barrier(Peer &p, const Fields &f) {
  long epoch = -1;
  if (f.size() < 2 || f.size() % 2 != 0 || !text::parse_number(f[1], &epoch) || epoch != epoch_) {
    on_lost(p, "sent a barrier out of protocol");
    return;
  }
  for (std::size_t i = 2; i + 1 < f.size(); i += 2)
    if (f[i].empty() || f[i].size() > kPmiKeyMax || f[i + 1].size() > kPmiValueMax) {
      on_lost(p, "put a key or a value beyond PMI's limits");
      return;
    }
  auto &puts = barrier_puts_[static_cast<std::size_t>(p.rank)];
  if (!puts.empty()) {
    on_lost(p, "entered one PMI barrier twice");
    return;
  }
  puts.assign(f.begin() + 2, f.end());
  puts.insert(puts.begin(), "");  // marks arrival, even without puts
  if (++in_barrier_ == size_) end_barrier();
}

void Server::end_barrier() {
  // Rank by rank, each rank's puts in order: a later put of a key replaces an
  // earlier one, as in the allgather this replaces.
  for (auto &r : barrier_puts_) {
    for (std::size_t i = 1; i + 1 < r.size(); i += 2) kvs_[r[i]] = std::move(r[i + 1]);
    r.clear();
  }
  const std::string message = framed({"BARRIER-OUT", std::to_string(epoch_)});
  for (Peer *q : rank_peer_)
    if (!q->closed) send_to(q->fd, message);
  in_barrier_ = 0;
  ++epoch_;
}

void Server::on_get(Peer &p, const Fields &f) {
  ++gets_;
  auto it = kvs_.find(f[1]);
  send_to(p.fd, it == kvs_.end() ? framed({"GOT", f[1], "0"}) : framed({"GOT", f[1], "1", it->second}));
}

void Server::on_lost(Peer &p, const std::string &why) {
  if (!p.joined) {
    close_peer(p);
    return;
  }
  close_peer(p);
  if (!ready_) {
    // Gone before the job was complete: nothing to tell it, so rank 0's
    // process waits only for the others (not for PGS_BOOTSTRAP_TIMEOUT).
    ++heard_;
    fail_all(PG_ERR_STATE, who(p) + " left the rendezvous at " + shown_ + " (" + why +
                               ") before every process of the job had arrived");
    return;
  }
  if (p.finalized || p.bye) return;
  end_all(1, who(p) + " died: its connection to the job's rendezvous " + why +
                 " before it finalized MPI (killed, crashed, or ended without MPI_Finalize)");
}

void Server::fail_all(int status, const std::string &message) {
  // The job cannot form. Those that arrive later, until the join deadline,
  // hear why too (rank 0's own process among them, perhaps).
  if (!failed_) {
    failed_ = true;
    failure_ = framed({"FAIL", std::to_string(status), message});
  }
  for (auto &p : peers_)
    if (p->joined && !p->closed) {
      send_to(p->fd, failure_);
      close_peer(*p);
      ++heard_;
    }
}

void Server::wait_failure_heard(double seconds) {
  // At least the drain time: at the join's deadline rank 0's own process
  // hears first, with no time left, while this thread still tells the others.
  seconds = std::max(seconds, kEndDrainSeconds);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  while (heard_.load() < size_ && Clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (finished_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Server::stop() {
  for (auto &p : peers_) close_peer(*p);
  close_listener();
  done_ = true;
}

void Server::end_all(int code, const std::string &message) {
  const std::string out = framed({"END", std::to_string(code), message});
  std::vector<pollfd> fds;
  for (auto &p : peers_)
    if (p->joined && !p->closed) {
      send_to(p->fd, out);
      shutdown(p->fd, SHUT_WR);
      // Rank 0's own process waits for this drain before it exits: not awaited.
      if (p->rank != 0) fds.push_back(pollfd{p->fd, POLLIN, 0});
    }
  // Until each has read the news and closed (or exited), within the drain time.
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(kEndDrainSeconds));
  std::size_t open = fds.size();
  char sink[4096];
  while (open > 0 && Clock::now() < deadline) {
    if (poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (pollfd &q : fds)
      if (q.fd >= 0 && q.revents) {
        if (recv(q.fd, sink, sizeof sink, 0) <= 0) {
          q.fd = -1;
          --open;
        }
      }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drained_ = true;
  }
  changed_.notify_all();
  end_job(code, message);
}

void Server::watch(int fd, Peer *p) {
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = p;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
}

void Server::unwatch(int fd) {
  epoll_event e{};
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &e);
}

void Server::on_readable(Peer &p, std::vector<char> &buf) {
  const ssize_t n = recv(p.fd, buf.data(), buf.size(), 0);
  if (n <= 0) {
    on_lost(p, n == 0 ? "closed" : std::string("failed (") + std::strerror(errno) + ")");
    return;
  }
  p.reader.feed(buf.data(), static_cast<std::size_t>(n));
  Fields f;
  std::string error;
  int got = 0;
  while (!p.closed && !done_ && (got = p.reader.next(&f, &error)) == 1) {
    if (!p.joined)
      on_hello(p, f);
    else
      on_frame(p, f);
  }
  if (got < 0 && !p.closed) {
    if (p.joined)
      on_lost(p, "broke the protocol (" + error + ")");
    else
      refuse(p, error, "");
  }
}

void Server::sweep(Clock::time_point now) {
  for (auto &p : peers_)
    if (!p->closed && !p->joined && now > p->hello_deadline)
      refuse(*p, "it did not prove the job's secret within " + std::to_string(int(kHelloSeconds)) + " s", "");
  // Strangers that left are forgotten; the job's processes stay listed.
  peers_.erase(std::remove_if(peers_.begin(), peers_.end(),
                              [](const std::unique_ptr<Peer> &p) { return p->closed && !p->joined; }),
               peers_.end());
}

void Server::check_join_deadline(Clock::time_point now, Clock::time_point deadline) {
  if (ready_ || done_ || now <= deadline) return;
  if (failed_) {
    stop();
    return;
  }
  std::vector<std::string> missing;
  for (int r = 0; r < size_; ++r)
    if (!rank_peer_[static_cast<std::size_t>(r)]) missing.push_back(std::to_string(r));
  fail_all(PG_ERR_TIMEOUT, std::string(missing.size() == 1 ? "rank " : "ranks ") + ranks_text(missing) + " of " +
                               std::to_string(size_) + " did not reach the job's rendezvous at " + shown_ +
                               " within PGS_BOOTSTRAP_TIMEOUT=" + seconds_text(timeout_s_) + " s (" +
                               std::to_string(joined_) + " did)");
  stop();
}

void Server::run() {
  const auto join_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(timeout_s_));
  // epoll, not poll: with thousands of members, each turn costs what is
  // ready, not the whole list.
  std::vector<epoll_event> events(256);
  std::vector<char> buf(1 << 16);
  auto next_sweep = Clock::now();
  while (!done_) {
    const int rc = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 200);
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < rc && !done_; ++i) {
      Peer *p = static_cast<Peer *>(events[static_cast<std::size_t>(i)].data.ptr);
      if (!p) {
        if (listen_fd_ >= 0) accept_one();
      } else if (!p->closed) {
        on_readable(*p, buf);
      }
    }
    const auto now = Clock::now();
    // The deadlines of greetings are seconds long: looked at a few times a second.
    if (now >= next_sweep || done_) {
      sweep(now);
      next_sweep = now + std::chrono::milliseconds(200);
    }
    check_join_deadline(now, join_deadline);
    if (ready_ && settled_ == size_) done_ = true;
    // The ranks still to be heard from, for rank 0's exit only: at thousands
    // of ranks, listing them at every turn would cost more than the rest.
    if (ready_ && exiting_) {
      std::vector<std::string> waiting;
      for (const Peer *q : rank_peer_)
        if (!q->settled) waiting.push_back(std::to_string(q->rank));
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = waiting;
    }
    changed_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

void Server::wait_for_members() {
  exiting_ = true;
  PG_LOG(debug, "bootstrap: the rendezvous at %s sent %llu bytes to the job's %d processes, answering %llu PMI gets",
         shown_.c_str(), static_cast<unsigned long long>(bytes_sent_.load()), size_,
         static_cast<unsigned long long>(gets_.load()));
  std::unique_lock<std::mutex> lock(mutex_);
  const auto start = Clock::now();
  const auto bound = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(exit_timeout_s_));
  bool said = false;
  while (!finished_) {
    changed_.wait_for(lock, std::chrono::milliseconds(200));
    if (finished_) return;
    const auto now = Clock::now();
    if (now >= bound) {
      // Not forever: a process hung before its MPI_Finalize would hold rank 0,
      // and with it the job, until someone noticed.
      log::write(params::LogLevel::warn,
                 "bootstrap: rank 0 exits without word from rank(s) %s: they did not finalize MPI within "
                 "PGS_BOOTSTRAP_EXIT_TIMEOUT=%s s of rank 0's exit; they lose the job's rendezvous and end",
                 ranks_text(waiting_).c_str(), seconds_text(exit_timeout_s_).c_str());
      return;
    }
    if (!said && now - start > std::chrono::seconds(30)) {
      said = true;
      log::write(params::LogLevel::warn,
                 "bootstrap: rank 0 waits for rank(s) %s to finalize MPI before it exits: it serves the job's "
                 "rendezvous (at most PGS_BOOTSTRAP_EXIT_TIMEOUT=%s s)",
                 ranks_text(waiting_).c_str(), seconds_text(exit_timeout_s_).c_str());
    }
  }
}

void Server::wait_drained(double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return drained_ || finished_; });
}

}  // namespace pg::launch
