// The job's rendezvous, served by rank 0 of a job that no MPI launcher
// started (docs/launch.md): every process of the job, rank 0's own included,
// keeps one TCP connection to it from its arrival to its exit. It admits
// only processes that prove the job's secret, waits up to
// PGS_BOOTSTRAP_TIMEOUT for all of them, then carries their PMI barriers
// (an allgather of what each put since the last one) and ends the whole job
// when one of them aborts or dies.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "launch/net.h"
#include "launch/wire.h"

namespace pg::launch {

// The protocol's version, in every greeting.
constexpr const char *kProtocol = "pgstrategy-bootstrap-1";
// How long a connection may take to prove the secret.
constexpr double kHelloSeconds = 10;
// How long ending the job waits for the news to reach every process.
constexpr double kEndDrainSeconds = 1;

class Server {
 public:
  // Serves `size` processes on the listening socket `fd` (`shown`: the
  // address as the members reach it, for messages).
  Server(int fd, int size, std::string secret, double timeout_s, std::string shown);
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;
  void start();
  // Waits, at rank 0's exit, until every other process has finalized MPI or
  // gone: the rendezvous must outlive them.
  void wait_for_members();
  // When the job could not form: waits (bounded) until every process of it
  // has heard why, so that rank 0's process, which serves them, stays that long.
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
    int rank = -1;
    std::string host, pid, from, nonce;
    Clock::time_point hello_deadline;
  };

  void run();
  bool send_to(int fd, const std::string &data);
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
  bool all_gone() const;

  int listen_fd_;
  const int size_;
  const std::string secret_;
  const double timeout_s_;
  const std::string shown_;
  const std::string kvsname_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<Peer *> rank_peer_;  // by rank; null before it arrives
  int joined_ = 0;
  bool ready_ = false, done_ = false;
  bool failed_ = false;  // the job cannot form: failure_ answers every member
  std::string failure_;
  std::atomic<int> heard_{0};  // processes told why the job cannot form
  // The members' connections by rank and the listening socket last, readable
  // without a lock (a fork may come at any time).
  std::unique_ptr<std::atomic<int>[]> fds_;
  // The barrier in progress: what each rank put, and how many arrived.
  long epoch_ = 0;
  int in_barrier_ = 0;
  std::vector<std::vector<std::string>> barrier_puts_;
  int refusals_ = 0;
  std::atomic<std::uint64_t> bytes_sent_{0};

  std::mutex mutex_;
  std::condition_variable changed_;
  bool drained_ = false, finished_ = false;
  std::vector<std::string> waiting_;  // ranks not finalized yet (for the exit's note)
  std::thread thread_;
};

// Ends this process because its job ends (a process of it died or aborted):
// prints `message` once, waits (bounded) until the rendezvous this process
// may host has told the others, and exits with `code`. Defined in bootstrap.cpp.
[[noreturn]] void end_job(int code, const std::string &message);

}  // namespace pg::launch
