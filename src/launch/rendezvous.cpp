#include "launch/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "launch/auth.h"
#include "util/log.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

// Connections that have not proved the secret yet, at most.
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

}  // namespace

Server::Server(int fd, int size, std::string secret, double timeout_s, std::string shown)
    : listen_fd_(fd),
      size_(size),
      secret_(std::move(secret)),
      timeout_s_(timeout_s),
      shown_(std::move(shown)),
      kvsname_("pgs_" + random_hex(6)),
      rank_peer_(static_cast<std::size_t>(size), nullptr),
      fds_(new std::atomic<int>[static_cast<std::size_t>(size) + 1]),
      barrier_puts_(static_cast<std::size_t>(size)) {
  for (int i = 0; i < size; ++i) fds_[i] = -1;
  fds_[size] = fd;
}

void Server::close_in_child() {
  for (int i = 0; i <= size_; ++i) {
    const int fd = fds_[i].exchange(-1);
    if (fd >= 0) ::close(fd);
  }
}

bool Server::send_to(int fd, const std::string &data) {
  bytes_sent_ += data.size();
  return send_all(fd, data);
}

void Server::start() {
  thread_ = std::thread(&Server::run, this);
  thread_.detach();
}

std::string Server::who(const Peer &p) const {
  return "rank " + std::to_string(p.rank) + " (host " + p.host + ", pid " + p.pid + ")";
}

void Server::close_peer(Peer &p) {
  if (p.closed) return;
  p.closed = true;
  if (p.joined && p.rank >= 0 && p.rank < size_ && rank_peer_[static_cast<std::size_t>(p.rank)] == &p)
    fds_[p.rank] = -1;
  ::close(p.fd);
}

void Server::refuse(Peer &p, const std::string &why, const std::string &reply) {
  if (!reply.empty()) send_to(p.fd, frame({"REFUSED", std::to_string(PG_ERR_INVALID_ARGUMENT), reply}));
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
  std::size_t strangers = 0;
  for (const auto &p : peers_) strangers += !p->closed && !p->joined;
  if (strangers >= kMaxStrangers) {
    ::close(fd);
    return;
  }
  tune(fd);
  auto p = std::make_unique<Peer>();
  p->fd = fd;
  p->from = peer_name(fd);
  p->nonce = random_hex(16);
  p->hello_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(kHelloSeconds));
  if (p->nonce.empty() || !send_to(fd, frame({"HELLO", kProtocol, p->nonce}))) {
    ::close(fd);
    return;
  }
  peers_.push_back(std::move(p));
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
  send_to(p.fd, frame({"WELCOME", proof(secret_, "welcome", f[2], p.nonce, f[4])}));
  if (joined_ < size_) return;
  Fields ready = {"READY", std::to_string(size_), kvsname_};
  for (Peer *q : rank_peer_) ready.push_back(q->host);
  const std::string message = frame(ready);
  for (Peer *q : rank_peer_) send_to(q->fd, message);
  ready_ = true;
  fds_[size_] = -1;
  ::close(listen_fd_);
  listen_fd_ = -1;
  PG_LOG(debug, "bootstrap: all %d processes arrived at the rendezvous at %s", size_, shown_.c_str());
}

void Server::on_frame(Peer &p, const Fields &f) {
  const std::string &verb = f[0];
  if (verb == "FINALIZE") {
    p.finalized = true;
    return;
  }
  if (verb == "BYE") {
    p.bye = true;
    return;
  }
  if (verb == "ABORT" && f.size() >= 3) {
    int code = 1;
    if (!text::parse_number(f[1], &code)) code = 1;
    end_all(code == 0 ? 1 : code, who(p) + " called MPI_Abort (exit code " + clip(f[1], 12) + "): " + clip(f[2], 1024));
    return;
  }
  long epoch = -1;
  if (verb == "BARRIER" && ready_ && f.size() >= 2 && f.size() % 2 == 0 && text::parse_number(f[1], &epoch) &&
      epoch == epoch_) {
    auto &puts = barrier_puts_[static_cast<std::size_t>(p.rank)];
    if (!puts.empty()) {
      on_lost(p, "entered one PMI barrier twice");
      return;
    }
    puts.assign(f.begin() + 2, f.end());
    puts.insert(puts.begin(), "");  // marks arrival, even without puts
    if (++in_barrier_ < size_) return;
    Fields out = {"BARRIER-OUT", std::to_string(epoch_)};
    for (auto &r : barrier_puts_) {
      if (!r.empty()) out.insert(out.end(), r.begin() + 1, r.end());
      r.clear();
    }
    const std::string message = frame(out);
    for (Peer *q : rank_peer_)
      if (!q->closed) send_to(q->fd, message);
    in_barrier_ = 0;
    ++epoch_;
    return;
  }
  on_lost(p, "sent a message out of protocol ('" + clip(verb, 32) + "')");
}

void Server::on_lost(Peer &p, const std::string &why) {
  if (!p.joined) {
    close_peer(p);
    return;
  }
  close_peer(p);
  if (!ready_) {
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
    failure_ = frame({"FAIL", std::to_string(status), message});
  }
  for (auto &p : peers_)
    if (p->joined && !p->closed) {
      send_to(p->fd, failure_);
      close_peer(*p);
      ++heard_;
    }
}

void Server::wait_failure_heard(double seconds) {
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
  fds_[size_] = -1;
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  done_ = true;
}

void Server::end_all(int code, const std::string &message) {
  const std::string out = frame({"END", std::to_string(code), message});
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

bool Server::all_gone() const {
  for (const Peer *p : rank_peer_)
    if (!p || !(p->closed || p->finalized || p->bye)) return false;
  return true;
}

void Server::run() {
  const auto join_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(timeout_s_));
  std::vector<pollfd> fds;
  std::vector<Peer *> owners;
  std::vector<char> buf(1 << 16);
  while (!done_) {
    fds.clear();
    owners.clear();
    if (listen_fd_ >= 0) {
      fds.push_back(pollfd{listen_fd_, POLLIN, 0});
      owners.push_back(nullptr);
    }
    for (auto &p : peers_)
      if (!p->closed) {
        fds.push_back(pollfd{p->fd, POLLIN, 0});
        owners.push_back(p.get());
      }
    const int rc = poll(fds.data(), fds.size(), 200);
    if (rc < 0 && errno != EINTR) break;
    for (std::size_t i = 0; rc > 0 && i < fds.size() && !done_; ++i) {
      if (!fds[i].revents) continue;
      Peer *p = owners[i];
      if (!p) {
        accept_one();
        continue;
      }
      if (p->closed) continue;
      const ssize_t n = recv(p->fd, buf.data(), buf.size(), 0);
      if (n <= 0) {
        on_lost(*p, n == 0 ? "closed" : std::string("failed (") + std::strerror(errno) + ")");
        continue;
      }
      p->reader.feed(buf.data(), static_cast<std::size_t>(n));
      Fields f;
      std::string error;
      int got = 0;
      while (!p->closed && !done_ && (got = p->reader.next(&f, &error)) == 1) {
        if (!p->joined)
          on_hello(*p, f);
        else
          on_frame(*p, f);
      }
      if (got < 0 && !p->closed) {
        if (p->joined)
          on_lost(*p, "broke the protocol (" + error + ")");
        else
          refuse(*p, error, "");
      }
    }
    const auto now = Clock::now();
    for (auto &p : peers_)
      if (!p->closed && !p->joined && now > p->hello_deadline)
        refuse(*p, "it did not prove the job's secret within " + std::to_string(int(kHelloSeconds)) + " s", "");
    if (!ready_ && !done_ && now > join_deadline && failed_) stop();
    if (!ready_ && !done_ && now > join_deadline) {
      std::vector<std::string> missing;
      for (int r = 0; r < size_; ++r)
        if (!rank_peer_[static_cast<std::size_t>(r)]) missing.push_back(std::to_string(r));
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s_);
      fail_all(PG_ERR_TIMEOUT, std::string(missing.size() == 1 ? "rank " : "ranks ") + text::join(missing, ", ") +
                                   " of " + std::to_string(size_) + " did not reach the job's rendezvous at " + shown_ +
                                   " within PGS_BOOTSTRAP_TIMEOUT=" + seconds + " s (" + std::to_string(joined_) +
                                   " did)");
      stop();
    }
    // Strangers that left are forgotten; the job's processes stay listed.
    peers_.erase(std::remove_if(peers_.begin(), peers_.end(),
                                [](const std::unique_ptr<Peer> &p) { return p->closed && !p->joined; }),
                 peers_.end());
    if (ready_) {
      std::vector<std::string> waiting;
      for (const Peer *p : rank_peer_)
        if (!(p->closed || p->finalized || p->bye)) waiting.push_back(std::to_string(p->rank));
      std::lock_guard<std::mutex> lock(mutex_);
      waiting_ = waiting;
      if (all_gone()) done_ = true;
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
  std::unique_lock<std::mutex> lock(mutex_);
  const auto start = Clock::now();
  bool said = false;
  while (!finished_) {
    changed_.wait_for(lock, std::chrono::milliseconds(200));
    if (!said && !finished_ && Clock::now() - start > std::chrono::seconds(30)) {
      said = true;
      log::write(params::LogLevel::warn,
                 "bootstrap: rank 0 waits for rank(s) %s to finalize MPI before it exits: it serves the job's "
                 "rendezvous",
                 text::join(waiting_, ", ").c_str());
    }
  }
}

void Server::wait_drained(double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return drained_ || finished_; });
}

}  // namespace pg::launch
