// fairring's path for small and mid-size messages on a node (algorithm
// "fast"; the protocol, step by step and with its costs: docs/algorithms.md,
// "The fast path"; its stages in code: FastPath::Op in fast_path.cpp).
//
// One shared window per strategy, made once. Each rank's part holds two
// cache-line flags and two slots; the node's operations t = 1, 2, ... use
// flag t % 2 by turns, and those whose input does not fit in a flag (the
// k-th such operation) slot k % 2, at the next of its places for an input of
// that size, round as much of the slot as the L1 data cache holds (input()):
//
//   flag[t%2] = { seq, done, payload[48] }
//     seq   the rank has published its input to t (in payload when it fits,
//           else in slot[k%2]; a split allreduce's input in a pg_mem_alloc
//           buffer stays there, and payload says where), or, up the tree,
//           its partial result
//     done  the result of t is in this rank's part (the node's leader's, or
//           the rank's own block of a split allreduce); with kFailed, the
//           rank's step across nodes failed
//
// No barrier closes an operation: a rank writes flag t % 2 again only at
// t + 2, and slot k % 2 only at the slot user k + 2, in both cases after it
// has seen every local rank arrive at an operation in between, which each
// does only after it finished reading the earlier one. The slots take turns
// of their own so that a barrier or a small call between two large ones
// (pg-bench's barrier before each call, a loss reduced after each gradient)
// does not send the second to the slot its peers have just read, and the
// places keep a smaller input off the memory its peers read while that may
// still sit in their L1 caches: memory written again soon after a peer read
// it costs up to twice as much to write and read (2-96 KiB on the Intel Xeon
// of docs/performance.md).
#pragma once

#include <mpi.h>

#include <algorithm>
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
    std::size_t slot_bytes = 0;   // the largest input or output of a call on the path (PGS_FAIRRING_FAST_BYTES)
    std::size_t split_bytes = 0;  // allreduces from this size up are split (PGS_FAIRRING_SPLIT_BYTES)
    int tree_ranks = 0;           // nodes of this many ranks or more use the tree below it (PGS_FAIRRING_TREE_RANKS)
    int nodes = 1, size = 1;      // the strategy's nodes and ranks
    int rank = 0;                 // this rank in the strategy
    bool regular = false;         // every node has as many ranks: rails carry the split blocks
    bool fail_across = false;     // testing: this rank's step across nodes fails (PGS_FAIRRING_FAULT)
    // How much of a slot its places span at least: the L1 data cache, the
    // same on every rank of the node, which must find the same places (0: kCycleBytes).
    std::size_t cycle_bytes = 0;
    // How blocks pass between the cores (handoff.h): reduced in the user's
    // buffer, then copied to the slot, or in the slot; pulled by pages up to
    // pages_up_to bytes.
    bool reduce_in_buffer = true;
    std::size_t pages_up_to = 0;
    const Memory *memory = nullptr;  // the strategy's pg_mem_alloc buffers: a split allreduce's peers read them in place
  };
  // The places of a slot span at least the L1 data cache, where hwloc does
  // not say how large it is: a common size.
  static constexpr std::size_t kCycleBytes = std::size_t(32) << 10;
  // Collective over node_comm. `rail`: this rank's rail (an instance of its
  // own, for allreduce and barrier across nodes; the first ranks' rail is the
  // leaders'), or null on one node.
  static pg_status create(MPI_Comm node_comm, const Config &config, Backend *rail,
                          std::unique_ptr<FastPath> *out);
  ~FastPath();  // collective over the node, like create
  FastPath(const FastPath &) = delete;
  FastPath &operator=(const FastPath &) = delete;

  // Bytes of shared memory this rank's part takes, and how much of a slot
  // its places span at least.
  std::size_t footprint() const;
  std::size_t cycle_bytes() const { return cycle_bytes_; }
  // Whether small allreduces and barriers go up the tree on this node.
  bool tree() const { return tree_; }
  // Whether the path serves `a`: a collective it has, whose input and output
  // are each at most limit(), and across nodes only allreduce and barrier.
  bool fits(const CollArgs &a) const;
  // Starts `a` (which fits); the request finishes when this rank's result is
  // in place and no peer reads its buffers.
  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out);
  // The same, waited for here: nothing allocated on one node (the blocking
  // hot path); across nodes the leader's MPI request is the one allocation.
  pg_status run(const CollArgs &a);
  // Another handoff (Config), for the operations started from now on: the
  // same on every local rank, between the same operations.
  void set_handoff(bool reduce_in_buffer, std::size_t pages_up_to) {
    reduce_in_buffer_ = reduce_in_buffer;
    pages_up_to_ = pages_up_to;
  }
  // The same for where allreduces split (Config::split_bytes): the handoff's probe times both.
  void set_split_bytes(std::size_t bytes) { split_bytes_ = bytes; }
  // The largest input or output of a call the path serves: the slot's size
  // unless set lower (the strategy's probe, for the calls from now on, the
  // same on every rank).
  std::size_t limit() const { return limit_; }
  void set_limit(std::size_t bytes) { limit_ = std::min(bytes, slot_bytes_); }

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
  // In a split allreduce's flag payload: where the rank's input lies, a
  // pg_mem_alloc buffer its peers read in place (id >= 0), or its slot (-1).
  struct InputSpot {
    std::int64_t id;
    std::uint64_t offset;
  };
  static constexpr std::size_t kInline = sizeof(Flag::payload);
  static constexpr std::uint64_t kFailed = std::uint64_t(1) << 63;  // in `done`: the step across nodes failed

  FastPath() = default;
  // Where local rank p publishes operation t's input of `bytes`: in its
  // flag, or at `place` in its slots.
  char *input(int p, std::uint64_t t, std::size_t place, std::size_t bytes) const;
  // The place in the slots of an operation about to start, by its input's size.
  std::size_t next_place(const CollArgs &a);
  bool arrived(std::uint64_t t) const;

  MPI_Win win_ = MPI_WIN_NULL;
  int local_ = 0, local_size_ = 1, nodes_ = 1, size_ = 1;
  std::vector<int> rank_of_local_;  // the strategy rank of each local rank
  bool fail_across_ = false;
  std::size_t slot_bytes_ = 0, limit_ = 0, split_bytes_ = 0, cycle_bytes_ = 0, pages_up_to_ = 0;
  bool reduce_in_buffer_ = true;
  bool tree_ = false;  // small allreduces and barriers go up a tree (a node of PGS_FAIRRING_TREE_RANKS or more)
  std::vector<Part> parts_;
  const Memory *memory_ = nullptr;
  Backend *rail_ = nullptr;
  bool rails_ = false;  // split allreduces cross nodes on every rank's rail
  std::uint64_t started_ = 0;   // operations started here
  std::uint64_t slot_turns_ = 0;  // those of them that publish in a slot
  // Operations finished here, in order. Read by the next operation's first
  // step, which may run on another thread (any that passes the collectives lane).
  std::atomic<std::uint64_t> finished_{0};
};

}  // namespace pg::fairring
