// The sliced, pipelined schedule of the hierarchical algorithms, written once
// over a node transport. Every slice goes through (1) publish, (2) reduce,
// (3) the rail step, (4) gather; up to PGS_FAIRRING_INFLIGHT slices are on the
// rails at once, so the node's memory work on one slice overlaps the rail
// exchange of others. Operations are numbered in start order, which is the same
// on every rank, and each step runs in that order across operations.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/fairring/node_transport.h"

namespace pg::fairring {

class Schedule {
 public:
  Schedule(NodeTransport &node, Backend &rail, int inflight) : node_(node), rail_(rail), inflight_(inflight) {}
  Schedule(const Schedule &) = delete;
  Schedule &operator=(const Schedule &) = delete;

  // Rail requests of failed operations may still write into shared slots:
  // they are left, like the shared window (FairringBackend::~FairringBackend).
  ~Schedule();

  // Starts `plan`; the request finishes when the operation has (and no peer
  // reads its buffers any more).
  std::unique_ptr<Request> start(std::unique_ptr<Plan> plan);

 private:
  class Operation;
  // Advances every started operation as far as it can without waiting.
  void progress(bool *moved);
  void advance(Operation &op, bool first[4], bool *moved);
  // A step failed here (or on a peer, seen through the transport): every
  // operation started, and every later one, fails with `message`, since the
  // node's slices can no longer line up.
  void fail_all(pg_status st, const std::string &message);

  NodeTransport &node_;
  Backend &rail_;
  const int inflight_;
  std::mutex mutex_;  // a lane's pass and a blocking caller may test from two threads
  std::deque<Operation *> active_;
  std::uint64_t next_tick_ = 0;
  int on_rails_ = 0;
  pg_status failure_ = PG_OK;
  std::string failure_message_;
  std::vector<std::unique_ptr<Request>> orphans_;  // rail requests of failed operations
};

}  // namespace pg::fairring
