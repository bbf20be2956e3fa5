// The job's rendezvous, served by rank 0 of a job that no MPI launcher
// started (docs/launch.md): every process of the job, rank 0's own included,
// keeps one TCP connection to it from its arrival to its exit. It admits
// only processes that prove the job's secret, waits up to
// PGS_BOOTSTRAP_TIMEOUT for all of them, then carries their PMI barriers,
// keeps what every process put, hands it out key by key to the processes
// that ask (PMI get), and ends the whole job when one of them aborts or dies.
// What it sends each process is what that process asked for: its bytes grow
// with the processes times what each reads, not with their square. One
// thread serves every connection, none of which may hold it up: sockets are
// nonblocking, and what a process does not read yet waits in its own buffer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "launch/net.h"
#include "pg_strategy.h"
#include "launch/wire.h"

namespace pg::launch {

// The protocol's version, in every greeting.
constexpr const char *kProtocol = "pgstrategy-bootstrap-2";
// How long a connection may take to prove the secret.
constexpr double kHelloSeconds = 10;
// How long ending the job waits for the news to reach every process.
constexpr double kEndDrainSeconds = 1;
// Connections from one address that may be proving the secret at once;
// beyond them, a newcomer from there is told BUSY and comes back later
// (greet, member.h), so that no one host takes every place.
constexpr std::size_t kMaxStrangersPerAddress = 32;
// Bytes waiting for a process that does not read them (stopped, or flooding
// the rendezvous with gets) above which its requests are not read either,
// until it has read them.
constexpr std::size_t kMaxUnsent = std::size_t(1) << 20;

class Server {
 public:
  // Serves `size` processes on the listening socket `fd` (`shown`: the
  // address as the members reach it, for messages); `timeout_s` for all to
  // arrive (PGS_BOOTSTRAP_TIMEOUT), `exit_timeout_s` for all to finalize MPI
  // once rank 0's process exits (PGS_BOOTSTRAP_EXIT_TIMEOUT).
  Server(int fd, int size, std::string secret, double timeout_s, double exit_timeout_s, std::string shown);
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;
  pg_status start();
  // Waits, at rank 0's exit, until every other process has finalized MPI or
  // gone: the rendezvous must outlive them. At most PGS_BOOTSTRAP_TIMEOUT:
  // then it says which ranks it did not hear from, and returns.
  void wait_for_members();
  // When the job could not form: waits (bounded, but at least
  // kEndDrainSeconds) until every process of it has heard why or is gone,
  // so that rank 0's process, which serves them, stays that long.
  void wait_failure_heard(double seconds);
  // Waits (bounded) until the news of the job's end has gone out.
  void wait_drained(double seconds);
  // In a child forked from rank 0: closes its copies of the members'
  // connections, so that they still notice when rank 0 dies.
  void close_in_child();
  // Bytes this rendezvous has sent its peers (the benchmark reads them).
  std::uint64_t bytes_sent() const { return bytes_sent_.load(); }

 private:
  struct Peer {
    int fd = -1;
    FrameReader reader{kMaxHelloFrame};
    bool joined = false, finalized = false, bye = false, closed = false;
    bool settled = false;  // finalized, said goodbye or gone: counted in settled_
    int rank = -1;
    std::string host, pid, from, nonce;
    std::string address;  // `from` without the port: where its strangers are counted
    Clock::time_point hello_deadline;
    std::string unsent;          // bytes for it that its socket did not take yet, from unsent_at
    std::size_t unsent_at = 0;
    std::uint32_t watched = 0;   // the epoll events asked for it
    std::size_t pending() const { return unsent.size() - unsent_at; }
  };

  void run();
  void watch(int fd, Peer *p);
  void unwatch(int fd);
  void update_watch(Peer &p);
  void on_readable(Peer &p, std::vector<char> &buf);
  bool flush(Peer &p);
  void left_strangers(Peer &p);
  void sweep(Clock::time_point now);
  void check_join_deadline(Clock::time_point now, Clock::time_point deadline);
  void close_listener();
  void pace_accepting();
  bool send_to(Peer &p, const std::string &data);
  std::string framed(const Fields &f) const;
  void on_barrier(Peer &p, const Fields &f);
  void end_barrier();
  void on_get(Peer &p, const Fields &f);
  void accept_one();
  void on_hello(Peer &p, const Fields &f);
  void on_frame(Peer &p, const Fields &f);
  void on_lost(Peer &p, const std::string &why);
  void refuse(Peer &p, const std::string &why, const std::string &reply);
  void fail_all(int status, const std::string &message);
  void stop();
  void end_all(int code, const std::string &message);
  void close_peer(Peer &p);
  std::string who(const Peer &p) const;
  bool holds_rank(const Peer &p) const;
  void settle(Peer &p);
  // At most `n` characters of `s`, printable, for a message.
  static std::string clip(const std::string &s, std::size_t n);

  int listen_fd_;
  const int size_;
  const std::string secret_;
  const double timeout_s_, exit_timeout_s_;
  const std::string shown_;
  const std::string kvsname_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<Peer *> rank_peer_;  // by rank; null before it arrives
  int joined_ = 0;
  std::size_t strangers_ = 0;  // connections that have not proved the secret yet
  std::unordered_map<std::string, std::size_t> strangers_from_;  // by address
  bool accepting_ = true;      // the listening socket is watched (fewer strangers than the limit)
  int settled_ = 0;  // ranks that finalized MPI, said goodbye or are gone
  bool ready_ = false, done_ = false;
  bool failed_ = false;  // the job cannot form: failure_ answers every member
  std::string failure_;
  std::atomic<int> heard_{0};  // processes told why the job cannot form, or gone before it could
  // The members' connections by rank and the listening socket last, readable
  // without a lock (a fork may come at any time).
  std::unique_ptr<std::atomic<int>[]> fds_;
  std::atomic<int> epoll_fd_;  // what the thread waits on: the listening socket and every peer
  // The barrier in progress: what each rank put, and how many arrived.
  long epoch_ = 0;
  int in_barrier_ = 0;
  std::vector<std::vector<std::string>> barrier_puts_;
  // Every put of the barriers that ended, the later ones over the earlier,
  // and the rank that put each key first: only it may put the key again.
  struct Put {
    std::string value;
    int rank;
  };
  std::unordered_map<std::string, Put> kvs_;
  int refusals_ = 0;
  std::atomic<std::uint64_t> bytes_sent_{0}, gets_{0};

  std::mutex mutex_;
  std::condition_variable changed_;
  bool drained_ = false, finished_ = false;
  std::atomic<bool> exiting_{false};  // rank 0's process is at its exit
  std::vector<std::string> waiting_;  // then: ranks not finalized yet (for the exit's note)
  std::thread thread_;
};

// Ends this process because its job ends (a process of it died or aborted):
// prints `message` once, waits (bounded) until the rendezvous this process
// may host has told the others, and exits with `code`. Defined in bootstrap.cpp.
[[noreturn]] void end_job(int code, const std::string &message);

}  // namespace pg::launch
