// fairring's path for small and mid-size messages on a node (algorithm
// "fast", docs/algorithms.md): one shared window per strategy, made once.
// Each rank's part holds two cache-line flags and two slots, used by the
// node's operations alternately (operation t uses parity t % 2):
//
//   flag[t%2] = { seq, done, payload[48] }   seq: the rank has published its
//                                            input to operation t (inline in
//                                            payload when it fits, else in
//                                            slot[t%2]); done: the result
//                                            of t is there (the node's leader's
//                                            across nodes; on one node, split,
//                                            each rank's reduced block), or,
//                                            with kFailed, the leader's step
//                                            across nodes failed
//
// On nodes of PGS_FAIRRING_TREE_RANKS ranks or more, allreduces below the
// split and barriers go up a 4-ary tree of the local ranks instead: a rank
// waits for its children's seq = t, stores its input combined with their
// partial results (its own first, then theirs in order) in its flag or slot,
// then seq = t; local rank 0, the root, holds the node's result, stores
// done = t (after the step across nodes, as above), and every rank copies it.
// About log4(L) + 1 flag hops, k lines read per rank, instead of every rank
// reading all L inputs.
//
// An operation: every rank copies its input to its own flag or slot and
// stores seq = t (release); waits until every local rank's seq[t%2] is t
// (acquire); then reads what it needs straight from the peers' parts into the
// user's buffer, reducing with the library's kernel in local-rank order, so
// every rank gets the same bits. An allreduce from PGS_FAIRRING_SPLIT_BYTES is
// split: each rank reduces one block, across nodes (regular layouts)
// allreduces it over its rail, stores done = t, and copies the others'
// blocks. Across nodes otherwise (barrier, small or irregular allreduce) the
// node's first rank reduces, runs MPI among the first ranks of every node,
// puts the result in its part and stores done = t; the others copy it. A rank
// whose MPI step fails stores done = t | kFailed instead: its node's ranks
// return PG_ERR_BACKEND naming it rather than wait for a result that will
// not come.
//
// No barrier closes an operation: a rank writes parity t % 2 again only at
// operation t + 2, after it has seen every local rank arrive at t + 1, which
// each does only after it finished reading operation t. Operations start in
// order (a nonblocking one publishes once the one before it is done here).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/memory.h"

namespace pg::fairring {

class FastPath {
 public:
  struct Config {
    std::size_t slot_bytes = 0;   // the largest input one rank publishes in a slot (PGS_FAIRRING_FAST_BYTES)
    std::size_t split_bytes = 0;  // allreduces from this size up are split (PGS_FAIRRING_SPLIT_BYTES)
    int tree_ranks = 0;           // nodes of this many ranks or more use the tree below it (PGS_FAIRRING_TREE_RANKS)
    int nodes = 1, size = 1;      // the strategy's nodes and ranks
    int rank = 0;                 // this rank in the strategy
    bool regular = false;         // every node has as many ranks: rails carry the split blocks
    bool fail_across = false;     // testing: this rank's step across nodes fails (PGS_FAIRRING_FAULT)
  };
  // Collective over node_comm. `rail`: this rank's rail (an instance of its
  // own, for allreduce and barrier across nodes; the first ranks' rail is the
  // leaders'), or null on one node.
  static pg_status create(MPI_Comm node_comm, const Config &config, Backend *rail,
                          std::unique_ptr<FastPath> *out);
  ~FastPath();  // collective over the node, like create
  FastPath(const FastPath &) = delete;
  FastPath &operator=(const FastPath &) = delete;

  // Bytes of shared memory this rank's part takes, and the largest input a slot holds.
  std::size_t footprint() const;
  std::size_t slot_bytes() const { return slot_bytes_; }
  // Whether small allreduces and barriers go up the tree on this node.
  bool tree() const { return tree_; }
  // Whether the path serves `a`: a collective it has, an input that fits a
  // slot, and across nodes only allreduce and barrier.
  bool fits(const CollArgs &a) const;
  // Starts `a` (which fits); the request finishes when this rank's result is
  // in place and no peer reads its buffers.
  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out);
  // The same, waited for here: nothing allocated on one node (the blocking
  // hot path); across nodes the leader's MPI request is the one allocation.
  pg_status run(const CollArgs &a);

 private:
  class Op;
  struct alignas(64) Flag {
    std::atomic<std::uint64_t> seq{0};
    std::atomic<std::uint64_t> done{0};
    char payload[48];
  };
  struct Part {
    Flag *flags = nullptr;  // [2]
    char *slots = nullptr;  // [2][slot_bytes_]
  };
  static constexpr std::size_t kInline = sizeof(Flag::payload);
  static constexpr std::uint64_t kFailed = std::uint64_t(1) << 63;  // in `done`: the step across nodes failed

  FastPath() = default;
  // Where local rank p publishes operation t's input.
  char *input(int p, std::uint64_t t, std::size_t bytes) const;
  bool arrived(std::uint64_t t) const;

  MPI_Win win_ = MPI_WIN_NULL;
  int local_ = 0, local_size_ = 1, nodes_ = 1, size_ = 1;
  std::vector<int> rank_of_local_;  // the strategy rank of each local rank
  bool fail_across_ = false;
  std::size_t slot_bytes_ = 0, split_bytes_ = 0;
  bool tree_ = false;  // small allreduces and barriers go up a tree (a node of PGS_FAIRRING_TREE_RANKS or more)
  std::vector<Part> parts_;
  Backend *rail_ = nullptr;
  bool rails_ = false;  // split allreduces cross nodes on every rank's rail
  std::uint64_t started_ = 0;   // operations started here
  // Operations finished here, in order. Read by the next operation's first
  // step, which may run on another thread (the progress thread's, a queued task).
  std::atomic<std::uint64_t> finished_{0};
};

}  // namespace pg::fairring
