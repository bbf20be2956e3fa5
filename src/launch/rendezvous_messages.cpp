// The rendezvous's messages (rendezvous.h): a member's greeting and the
// challenge on the job's secret, the PMI barriers and gets it relays, and how
// the job ends when a member is lost or fails. The connections and the event
// loop are in rendezvous.cpp.
#include <poll.h>
#include <sys/socket.h>


#include "launch/auth.h"
#include "launch/pmi.h"
#include "launch/rendezvous.h"
#include "util/log.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {

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
  left_strangers(p);
  p.rank = rank;
  if (failed_) {
    send_to(p, failure_);
    close_peer(p);
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
  send_to(p, framed({"WELCOME", proof(secret_, "welcome", f[2], p.nonce, f[4])}));
  if (joined_ < size_) return;
  // Rank 0's host, for the message should it die: a list of every host
  // would make this frame's bytes, times the processes, grow with their square.
  const std::string message = framed({"READY", std::to_string(size_), kvsname_, rank_peer_[0]->host});
  for (Peer *q : rank_peer_) send_to(*q, message);
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
  // Rank by rank, each rank's puts in order: a key belongs to the rank that
  // put it first, whose later puts replace its value. Another rank's put of
  // it ends the job: no process may change what another published (MPI's
  // own keys name their rank; a process that is not of the job might).
  for (int rank = 0; rank < size_; ++rank) {
    auto &r = barrier_puts_[static_cast<std::size_t>(rank)];
    for (std::size_t i = 1; i + 1 < r.size(); i += 2) {
      auto [it, added] = kvs_.try_emplace(r[i], Put{r[i + 1], rank});
      if (added) continue;
      if (it->second.rank != rank)
        end_all(1, who(*rank_peer_[static_cast<std::size_t>(rank)]) + " put the PMI key '" + clip(r[i], 64) +
                       "', which rank " + std::to_string(it->second.rank) +
                       " put before: a process may replace only its own keys");
      it->second.value = std::move(r[i + 1]);
    }
    r.clear();
  }
  const std::string message = framed({"BARRIER-OUT", std::to_string(epoch_)});
  for (Peer *q : rank_peer_)
    if (!q->closed) send_to(*q, message);
  in_barrier_ = 0;
  ++epoch_;
}

void Server::on_get(Peer &p, const Fields &f) {
  ++gets_;
  auto it = kvs_.find(f[1]);
  send_to(p, it == kvs_.end() ? framed({"GOT", f[1], "0"}) : framed({"GOT", f[1], "1", it->second.value}));
}

void Server::on_lost(Peer &p, const std::string &why) {
  close_peer(p);
  if (!p.joined) return;
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
    failure_ = framed({"FAIL", std::to_string(status), message});
  }
  for (auto &p : peers_)
    if (p->joined && !p->closed) {
      send_to(*p, failure_);
      close_peer(*p);
    }
}

void Server::end_all(int code, const std::string &message) {
  const std::string out = framed({"END", std::to_string(code), message});
  std::vector<Peer *> told;
  for (auto &p : peers_)
    if (p->joined && !p->closed) {
      send_to(*p, out);
      told.push_back(p.get());
    }
  // Until each has read the news and closed (or exited), within the drain
  // time: what its socket did not take goes as it reads, then its end of the
  // connection closes. Rank 0's own process waits for this drain before it
  // exits: not awaited.
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(kEndDrainSeconds));
  std::vector<bool> shut(told.size(), false), gone(told.size(), false);
  char sink[4096];
  while (Clock::now() < deadline) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < told.size(); ++i) {
      Peer &p = *told[i];
      if (gone[i]) continue;
      if (!shut[i] && p.pending() == 0) {
        shutdown(p.fd, SHUT_WR);
        shut[i] = true;
      }
      if (shut[i] && p.rank == 0) continue;
      fds.push_back(pollfd{p.fd, static_cast<short>(POLLIN | (shut[i] ? 0 : POLLOUT)), 0});
      which.push_back(i);
    }
    if (fds.empty()) break;
    if (poll(fds.data(), fds.size(), 50) <= 0) continue;
    for (std::size_t k = 0; k < fds.size(); ++k) {
      const std::size_t i = which[k];
      if ((fds[k].revents & POLLOUT) && !flush(*told[i])) gone[i] = true;
      if (gone[i] || !(fds[k].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      const ssize_t n = recv(fds[k].fd, sink, sizeof sink, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) gone[i] = true;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drained_ = true;
  }
  changed_.notify_all();
  end_job(code, message);
}

}  // namespace pg::launch
