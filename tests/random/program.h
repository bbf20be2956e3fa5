// The random program: a seeded generator that every rank runs alike, so that
// every rank draws the same sequence of operations (how the test uses it:
// the comment at the top of tests/random/CMakeLists.txt). Where each rank
// places its point-to-point calls among them is its own: schedule.h.
#ifndef PG_RANDOM_PROGRAM_H
#define PG_RANDOM_PROGRAM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pgr {

// splitmix64: seeds the streams and hashes element values.
inline std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Hash of a few numbers: element values are functions of (operation seed,
// sending rank, receiving rank, element index), so every rank can compute
// what every other rank sent.
inline std::uint64_t hash(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t i) {
  return splitmix(splitmix(seed ^ (a * 0x100000001b3ull) ^ (b << 32)) + i);
}

// xoshiro256**: a small, fast stream; one per program and one per rank.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    for (auto &word : s_) word = seed = splitmix(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) (n > 0); the tiny bias of the modulo does not matter here.
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // True with probability percent / 100.
  bool chance(unsigned percent) { return below(100) < percent; }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// What one operation of the program is.
enum class Kind : int {
  allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, gather, scatter, barrier,
  send_recv,  // pairs drawn from the seed exchange blocks, each way
  sendrecv,   // every rank sends `shift` ranks on and receives from `shift` ranks back
  allgatherv, reduce_scatterv, alltoallv, gatherv, scatterv,
  unsupported,  // a dtype/op pair that does not exist: refused locally, nothing runs
  count
};
const char *kind_name(Kind kind);
bool is_reduction(Kind kind);
bool is_collective(Kind kind);      // not point-to-point and not the local refusal
bool is_point_to_point(Kind kind);  // send_recv and sendrecv

// Tags: 1 + index for an operation of its own (below 30000 operations), or
// one of kSharedTags from kSharedTag on, which several operations share so
// that MPI's non-overtaking rule decides which message a receive gets.
constexpr int kSharedTag = 30001, kSharedTags = 3;

// The strategies a program runs on, by index.
enum { kWorld = 0, kDuplicate = 1, kSplit = 2, kStrategies = 3 };
const char *strategy_name(int strategy);

struct Op {
  std::size_t index = 0;
  Kind kind = Kind::barrier;
  int strategy = kWorld;
  bool nonblocking = false;
  bool in_place = false;
  pg_dtype dtype = PG_UINT8;
  pg_op redop = PG_SUM;
  // The size drawn, in bytes of a rank's input as the algorithms' thresholds
  // count it; turned into element counts for the group the call runs on
  // (calls.cpp), so that one drawn operation fits groups of any size.
  std::size_t bytes = 0;
  // Which meaning of `bytes` a block-layout collective takes (the thresholds
  // count allgather's block, reduce_scatter's whole input: both are drawn).
  bool per_block = false;
  std::uint32_t root_draw = 0;  // root = root_draw % group size
  std::uint64_t seed = 0;       // values, uneven counts, pairs
  int tag = 0;                  // point-to-point: the tag of its messages
  bool any_source = false;      // point-to-point: this rank receives from PG_ANY_SOURCE (schedule.h)
  bool big = false;             // the soak's operation above 2 GiB
  // Outstanding nonblocking operations (their indices) settled after this one.
  std::vector<std::size_t> settle;
};

// Sizes drawn around every threshold the entry's environment sets.
struct Sizes {
  std::vector<std::size_t> boundaries;  // bytes, sorted, at most max_bytes
  std::size_t max_bytes = 1 << 18;
  std::size_t mpi_chunk = 0;  // PGS_MPI_CHUNK_COUNT (0: unset), whose multiples are among the boundaries
  // Sizes drawn between the largest threshold and max_bytes, in percent of
  // all (0: none but those the other classes give; a value above 0 draws
  // other programs from the same seed).
  unsigned large_percent = 0;
  // The thresholds of every algorithm (docs/algorithms.md), read from the
  // PGS_FAIRRING_* and PGS_MPI_CHUNK_COUNT values this process sees, with
  // their defaults when unset; `ranks` is the world's size.
  static Sizes from_environment(std::size_t max_bytes, int ranks);
  std::string describe() const;
};

struct Limits {
  std::size_t ops = 200;
  unsigned max_in_flight = 6;    // at most this many outstanding nonblocking operations
  std::vector<int> strategies;   // the strategies this (sub-)program may use
  bool point_to_point = true;
  std::vector<Kind> kinds;       // when not empty: only these
  long forced_index = -1;        // this operation is a blocking allreduce on the world (hang check)
  long fault_index = -1;         // this operation is a collective on the world or the duplicate that
                                 // no rank can finish without every other (the fault mode's)
  bool fault_any = false;        // ... or any collective (the late fault: its peers come after the abort;
                                 // the destroy race: it does not run)
  int ranks = 1;                 // the world's size
  long big_index = -1;           // this operation is the one above 2 GiB
  bool shared_tags = false;      // point-to-point operations may share a tag (kSharedTag)
};

// The generator: every rank constructs it with the same seed and calls next()
// the same number of times, so every rank sees the same program.
class Program {
 public:
  Program(std::uint64_t seed, Sizes sizes, Limits limits);
  bool done() const { return next_ >= limits_.ops; }
  Op next();
  std::size_t size() const { return limits_.ops; }

 private:
  std::size_t draw_bytes(pg_dtype dtype);
  pg_dtype draw_dtype();
  pg_op draw_op(pg_dtype dtype);
  void draw_settle(Op &op);

  Rng rng_;
  Sizes sizes_;
  Limits limits_;
  std::size_t next_ = 0;
  std::vector<std::size_t> outstanding_;
};

// Every operation of the program drawn from `seed`.
std::vector<Op> draw_program(std::uint64_t seed, const Sizes &sizes, const Limits &limits);

// One message of a point-to-point operation, between ranks of its group.
struct Message {
  int from = 0, to = 0;
};
// The messages of a point-to-point operation on a group of `ranks`, each
// rank's in the order it posts them: send_recv's pairs of a permutation drawn
// from the seed (the first of a pair sends first; the odd one out of an odd
// group does nothing), sendrecv's shift (every rank sends `shift` ranks on and
// receives from `shift` ranks back, both at once).
std::vector<Message> messages(const Op &op, int ranks);

// "allreduce float16 sum bytes=..., world, nonblocking, in place": what the
// failure messages start with (the counts the group runs are added by the call).
std::string describe(const Op &op);

}  // namespace pgr

#endif
