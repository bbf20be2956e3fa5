#include "launch/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/epoll.h>
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

// Connections that have not proved the secret yet, at most. Beyond them,
// newcomers wait in the listening socket's backlog, not turned away: when
// thousands of processes arrive at once, one turned away would fail the job.
// (One address may hold kMaxStrangersPerAddress of them.)
constexpr std::size_t kMaxStrangers = 256;
// Refusals printed; later ones are counted only.
constexpr int kRefusalsShown = 10;

// "host:port" of the connection's other end; *address: the host alone.
std::string peer_name(int fd, std::string *address) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) == 0)
    getnameinfo(reinterpret_cast<sockaddr *>(&ss), len, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
  *address = host;
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

std::string Server::clip(const std::string &s, std::size_t n) { return text::printable(s.substr(0, n)); }

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

bool Server::send_to(Peer &p, const std::string &data) {
  bytes_sent_ += data.size();
  if (p.closed) return false;
  p.unsent.append(data);
  return flush(p);
}

bool Server::flush(Peer &p) {
  while (p.pending() > 0) {
    const ssize_t n = send(p.fd, p.unsent.data() + p.unsent_at, p.pending(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      // Gone: its reads say so (epoll reports the error whatever is watched).
      p.unsent.clear();
      p.unsent_at = 0;
      return false;
    }
    p.unsent_at += static_cast<std::size_t>(n);
  }
  if (p.pending() == 0) {
    p.unsent.clear();
    p.unsent_at = 0;
  } else if (p.unsent_at >= kMaxUnsent) {
    p.unsent.erase(0, p.unsent_at);
    p.unsent_at = 0;
  }
  update_watch(p);
  return true;
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
  // Before the job formed, a process of the job closed here was told why it
  // cannot form, or is gone: nothing more to tell it, so rank 0's process
  // waits only for the others (wait_failure_heard), not for the timeout.
  if (p.joined && !ready_) ++heard_;
  if (!p.joined) left_strangers(p);
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
  if (!reply.empty()) send_to(p, framed({"REFUSED", std::to_string(PG_ERR_INVALID_ARGUMENT), reply}));
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
  const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  tune(fd);
  auto p = std::make_unique<Peer>();
  p->fd = fd;
  p->from = peer_name(fd, &p->address);
  const auto crowd = strangers_from_.find(p->address);
  if (crowd != strangers_from_.end() && crowd->second >= kMaxStrangersPerAddress) {
    // Its host holds its share of the places: a process of the job comes
    // back later (greet). A fresh socket takes the few bytes whole.
    const std::string busy = framed({"BUSY"});
    static_cast<void>(send(fd, busy.data(), busy.size(), MSG_NOSIGNAL));
    ::close(fd);
    return;
  }
  p->nonce = random_hex(16);
  if (p->nonce.empty()) {
    ::close(fd);
    return;
  }
  p->hello_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(kHelloSeconds));
  ++strangers_;
  ++strangers_from_[p->address];
  Peer &q = *p;
  peers_.push_back(std::move(p));
  watch(fd, &q);
  send_to(q, framed({"HELLO", kProtocol, q.nonce}));
  pace_accepting();
}

void Server::left_strangers(Peer &p) {
  --strangers_;
  const auto crowd = strangers_from_.find(p.address);
  if (crowd != strangers_from_.end() && --crowd->second == 0) strangers_from_.erase(crowd);
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

void Server::watch(int fd, Peer *p) {
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.ptr = p;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e);
  if (p) p->watched = EPOLLIN;
}

// Its requests are read while less than kMaxUnsent waits for it; what waits
// goes when its socket has room.
void Server::update_watch(Peer &p) {
  if (p.closed || p.watched == 0) return;
  const std::uint32_t want = (p.pending() < kMaxUnsent ? EPOLLIN : 0u) | (p.pending() > 0 ? EPOLLOUT : 0u);
  if (want == p.watched) return;
  epoll_event e{};
  e.events = want;
  e.data.ptr = &p;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, p.fd, &e);
  p.watched = want;
}

void Server::unwatch(int fd) {
  epoll_event e{};
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, &e);
}

void Server::on_readable(Peer &p, std::vector<char> &buf) {
  const ssize_t n = recv(p.fd, buf.data(), buf.size(), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
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
      const epoll_event &e = events[static_cast<std::size_t>(i)];
      Peer *p = static_cast<Peer *>(e.data.ptr);
      if (!p) {
        if (listen_fd_ >= 0) accept_one();
        continue;
      }
      if (!p->closed && (e.events & EPOLLOUT) && !flush(*p))
        on_lost(*p, std::string("failed (") + std::strerror(errno) + ")");
      if (!p->closed && !done_ && (e.events & (EPOLLIN | EPOLLERR | EPOLLHUP))) on_readable(*p, buf);
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

}  // namespace pg::launch
