#include "backends/fairring/fast_path.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "core/runtime.h"
#include "core/trace.h"
#include "util/copy.h"
#include "util/dtype.h"
#include "util/reduce.h"
#include "util/round_up.h"
#include "util/status.h"

namespace pg::fairring {
namespace {

constexpr std::size_t kPage = 4096;
// The smallest input that takes more than two places in a slot (input()).
constexpr std::size_t kCyclingSpan = std::size_t(2) << 10;
constexpr int kRadix = 4;  // children per rank in the tree

// The bytes a rank publishes for `a` (its input), on `ranks` ranks.
std::size_t input_bytes(const CollArgs &a, int rank, int ranks) {
  const std::size_t one = a.count * dtype_size(a.dtype);
  switch (a.coll) {
    case Coll::allreduce:
    case Coll::reduce:
    case Coll::allgather: return one;
    case Coll::broadcast: return rank == a.root ? one : 0;
    case Coll::reduce_scatter: return one * static_cast<std::size_t>(ranks);
    default: return 0;
  }
}

// The larger of a rank's input and output for `a` on `ranks` ranks: the fast
// path serves a call whose every buffer is within its limit. An allgather above that
// took up to twice the hierarchical path's time on 2 ranks (docs/algorithms.md).
std::size_t call_bytes(const CollArgs &a, int ranks) {
  const std::size_t in = input_bytes(a, a.root, ranks);
  return a.coll == Coll::allgather ? in * static_cast<std::size_t>(ranks) : in;
}

}  // namespace

// One operation, as a sequence of stages (docs/algorithms.md, "The fast
// path", describes the protocol):
//
//   publish  once the operation before it is done here: this rank's input
//            into its part, seq = t (up the tree, climbing publishes instead)
//   gather   every local rank has published (up the tree: this rank's
//            children): read and reduce what this rank needs, or its block
//   across   this rank's step across nodes over its rail (MPI), then done = t
//   result   the node's first rank's result is there: copy it
//   share    every rank's block is there: copy them
//
// test() runs the stages in order as far as it can without waiting: each
// stage names the next one, or itself when it must wait; a failed stage ends
// the operation.
class FastPath::Op final : public Request {
 public:
  Op(FastPath &path, const CollArgs &a, std::uint64_t t)
      : p_(path), a_(a), t_(t), place_(path.next_place(a)), bytes_(a.count * dtype_size(a.dtype)), split_(splits()),
        tree_(climbs()), spot_(split_ && reads_in_place() ? path.memory_->find(a.send, bytes_) : SharedSpot{}) {
    if (input_shared()) trace::annotate_shared(true, false);  // the flight recorder's mark, as the schedule's
  }

  pg_status test(bool *done) override {
    *done = false;
    while (stage_ != Stage::finished) {
      Stage next = stage_;
      pg_status st = PG_OK;
      switch (stage_) {
        case Stage::publish: publish_when_ready(&next); break;
        case Stage::gather: st = tree_ ? climb_tree(&next) : gather(&next); break;
        case Stage::across: st = finish_across(&next); break;
        case Stage::result: st = copy_result(&next); break;
        case Stage::share: st = copy_blocks(&next); break;
        case Stage::finished: break;
      }
      if (st != PG_OK) {
        stage_ = Stage::finished;
        return st;
      }
      if (next == stage_) return PG_OK;  // waiting
      stage_ = next;
    }
    *done = true;
    return PG_OK;
  }

 private:
  enum class Stage { publish, gather, result, share, across, finished };

  // The operation before this one is done here: this rank publishes.
  void publish_when_ready(Stage *next) {
    if (p_.finished_.load(std::memory_order_acquire) + 1 < t_) return;
    if (!tree_) publish();
    *next = Stage::gather;
  }

  // This rank's step across nodes has finished: a split block is final and
  // shared; the leader's result goes to its part with done = t.
  pg_status finish_across(Stage *next) {
    bool finished = false;
    pg_status st = across_ ? across_->test(&finished) : PG_OK;
    if (st == PG_OK && across_ && !finished) return PG_OK;
    across_.reset();
    if (st == PG_OK && p_.fail_across_)  // after its MPI step, so that no other node waits for it
      st = fail(PG_ERR_BACKEND, "the step across nodes failed on request (PGS_FAIRRING_FAULT)");
    if (st != PG_OK) return fail_node(st);
    if (split_) {
      reduce_finish(a_.dtype, a_.op, block_home(), block(p_.local_).second, p_.size_);
      share_block();
      *next = Stage::share;
      return PG_OK;
    }
    if (a_.coll == Coll::allreduce) {
      reduce_finish(a_.dtype, a_.op, a_.recv, a_.count, p_.size_);
      std::memcpy(input(0, bytes_), a_.recv, bytes_);
    }
    p_.parts_[0].flags[t_ % 2].done.store(t_, std::memory_order_release);
    return finish(next);
  }

  // The node's first rank has stored its result: every other rank copies it.
  pg_status copy_result(Stage *next) {
    bool ready = false;
    PG_CHECK(posted(0, &ready));
    if (!ready) return PG_OK;
    if (a_.coll == Coll::allreduce) std::memcpy(a_.recv, input(0, bytes_), bytes_);
    return finish(next);
  }

  // Every rank has stored its final block: this rank copies the others'.
  pg_status copy_blocks(Stage *next) {
    for (int q = 0; q < p_.local_size_; ++q) {
      bool ready = false;
      PG_CHECK(posted(q, &ready));
      if (!ready) return PG_OK;
    }
    gather_blocks();
    return finish(next);
  }

  bool leader_mode() const { return p_.nodes_ > 1; }
  // Small allreduces and barriers on a node of PGS_FAIRRING_TREE_RANKS or more go up the tree.
  bool climbs() const {
    return p_.tree_ && (a_.coll == Coll::barrier || (a_.coll == Coll::allreduce && !split_));
  }
  // This rank's children in the tree: local ranks kRadix * local + 1 ... (fewer at the bottom).
  std::pair<int, int> children() const {
    const int first = kRadix * p_.local_ + 1;
    return {std::min(first, p_.local_size_), std::min(first + kRadix, p_.local_size_)};
  }
  bool children_arrived() const {
    const auto [first, end] = children();
    for (int q = first; q < end; ++q)
      if (p_.parts_[static_cast<std::size_t>(q)].flags[t_ % 2].seq.load(std::memory_order_acquire) < t_) return false;
    return true;
  }
  // This rank's input combined with its children's partial results (its own
  // first, then theirs in order) into its flag or slot, then seq = t.
  void climb() {
    const std::size_t n = bytes_;
    if (a_.coll == Coll::allreduce) {
      char *out = input(p_.local_, n);
      const auto [first, end] = children();
      const pg_op op = combining_op(a_.op);
      if (first == end) {
        std::memcpy(out, a_.send, n);
      } else {
        reduce_into(a_.dtype, op, out, a_.send, input(first, n), a_.count);
        for (int q = first + 1; q < end; ++q) reduce_local(a_.dtype, op, out, input(q, n), a_.count);
      }
    }
    p_.parts_[static_cast<std::size_t>(p_.local_)].flags[t_ % 2].seq.store(t_, std::memory_order_release);
  }
  // The gather stage on a large node, once this rank's children are up: its
  // part of the tree; the root then finishes the node's result or crosses.
  pg_status climb_tree(Stage *next) {
    if (!children_arrived()) return PG_OK;
    climb();
    if (p_.local_ != 0) {
      *next = Stage::result;
      return PG_OK;
    }
    char *total = input(0, bytes_);
    if (leader_mode()) {
      if (a_.coll == Coll::allreduce) std::memcpy(a_.recv, total, bytes_);
      return cross(a_.recv, a_.count, next);
    }
    if (a_.coll == Coll::allreduce) reduce_finish(a_.dtype, a_.op, total, a_.count, p_.size_);
    p_.parts_[0].flags[t_ % 2].done.store(t_, std::memory_order_release);
    if (a_.coll == Coll::allreduce) std::memcpy(a_.recv, total, bytes_);
    return finish(next);
  }

  // The gather stage otherwise, once every local rank has published (across
  // nodes, unsplit, the others wait for the first rank's result instead).
  pg_status gather(Stage *next) {
    if (leader_mode() && !split_ && p_.local_ != 0) {
      *next = Stage::result;
      return PG_OK;
    }
    if (!p_.arrived(t_)) return PG_OK;
    if (split_) {
      reduce_block();
      if (leader_mode()) return cross(block_home(), block(p_.local_).second, next);  // each its own block, on its rail
      share_block();
      *next = Stage::share;
      return PG_OK;
    }
    if (leader_mode()) {
      if (a_.coll == Coll::allreduce) reduce_node_into(static_cast<char *>(a_.recv), 0);
      return cross(a_.recv, a_.count, next);
    }
    read_node();
    return finish(next);
  }

  // This rank's step across nodes, in place over its rail: an allreduce of
  // `count` elements at `at` (none: nothing to send), or a barrier.
  pg_status cross(void *at, std::size_t count, Stage *next) {
    *next = Stage::across;
    if (a_.coll == Coll::allreduce && count == 0) return PG_OK;
    const CollArgs across =
        a_.coll == Coll::allreduce
            ? CollArgs::reduction(Coll::allreduce, at, at, count, a_.dtype, combining_op(a_.op)).placed(0)
            : CollArgs{};
    const pg_status st = p_.rail_->start(across, &across_);
    return st == PG_OK ? PG_OK : fail_node(st);
  }

  // This rank's input into its own flag or slot, then seq = t. Across nodes,
  // unsplit, the leader reads its own buffer and publishes only its arrival.
  // A large split allreduce's input in a pg_mem_alloc buffer is not copied
  // (reads_in_place()): the flag says where it is, and the peers are done
  // with it once they posted their blocks, which this rank waits for before
  // it finishes (copy_blocks).
  void publish() {
    const std::size_t n = input_bytes(a_, p_.local_, p_.local_size_);
    const bool copy = n > 0 && !(leader_mode() && !split_ && p_.local_ == 0);
    if (copy && split_) {
      if (reads_in_place()) {
        const InputSpot where{spot_.id, spot_.offset};
        std::memcpy(p_.parts_[static_cast<std::size_t>(p_.local_)].flags[t_ % 2].payload, &where, sizeof where);
      }
      if (!input_shared()) {  // every block but this rank's own into its slot
        const auto [lo, len] = block(p_.local_);
        const std::size_t size = dtype_size(a_.dtype);
        publish_but(lo * size, len * size);
      }
    } else if (copy && reads_own_block()) {
      publish_but(static_cast<std::size_t>(p_.local_) * bytes_, bytes_);
    } else if (copy) {
      const void *from = a_.coll == Coll::broadcast ? a_.recv : a_.send;
      std::memcpy(input(p_.local_, n), from, n);
    }
    p_.parts_[static_cast<std::size_t>(p_.local_)].flags[t_ % 2].seq.store(t_, std::memory_order_release);
  }

  // This rank's input of n bytes into its slot but for [at, at + len), which
  // no peer reads.
  void publish_but(std::size_t at, std::size_t len) {
    const std::size_t n = input_bytes(a_, p_.local_, p_.local_size_);
    const char *from = static_cast<const char *>(a_.send);
    char *slot = input(p_.local_, n);
    std::memcpy(slot, from, at);
    std::memcpy(slot + at + len, from + at + len, n - at - len);
  }

  // Whether this rank reads its own block of a reduce_scatter's input from
  // its buffer, and publishes only its peers' blocks ((L - 1)/L of its input
  // on L ranks: half on 2). In place, a rank after the first two would overwrite
  // that block (its result) with the first two's sum before adding it: it
  // publishes its whole input, and reads its block there.
  bool reads_own_block() const {
    return a_.coll == Coll::reduce_scatter && !(a_.in_place && p_.local_ >= 2);
  }

  // Element `offset` (in bytes) of every local rank's input, reduced in local
  // rank order into `out` (the leader's own input read from its buffer).
  void reduce_node_into(char *out, std::size_t offset) const {
    const std::size_t n = input_bytes(a_, 0, p_.local_size_);
    const pg_op op = combining_op(a_.op);
    auto source = [&](int q) -> const char * {
      if ((leader_mode() && q == 0) || (q == p_.local_ && reads_own_block()))
        return static_cast<const char *>(a_.send) + offset;
      return input(q, n) + offset;
    };
    if (p_.local_size_ == 1) {  // a node of one rank (irregular layouts)
      if (out != source(0)) std::memcpy(out, source(0), bytes_);
      return;
    }
    reduce_into(a_.dtype, op, out, source(0), source(1), a_.count);
    for (int q = 2; q < p_.local_size_; ++q) reduce_local(a_.dtype, op, out, source(q), a_.count);
  }

  // A large allreduce is split: each rank reduces one block of the elements
  // (in local-rank order, so the bits do not depend on who reduces), across
  // nodes allreduces it over its rail (the same block of every node: regular
  // layouts), publishes it in its slot with done = t, and every rank copies
  // the blocks. Each rank then reads about 2/L of the data from its peers
  // instead of (L-1), reduces 1/L of it and sends 1/L: no rank does the
  // node's work alone.
  bool splits() const {
    return a_.coll == Coll::allreduce && p_.local_size_ > 1 && bytes_ >= p_.split_bytes_ &&
           (!leader_mode() || p_.rails_);
  }
  // Block q's first element and length, in elements: whole cache lines but the last.
  std::pair<std::size_t, std::size_t> block(int q) const {
    const std::size_t line = 64 / dtype_size(a_.dtype);
    const std::size_t ranks = static_cast<std::size_t>(p_.local_size_);
    const std::size_t per = round_up((a_.count + ranks - 1) / ranks, line);
    const std::size_t lo = std::min(a_.count, static_cast<std::size_t>(q) * per);
    return {lo, std::min(a_.count, lo + per) - lo};
  }

  // Where this rank reduces its block (handoff.h): in its slot, or in the
  // user's receive buffer, where the block is private, and the slot gets a
  // copy once it is final (share_block()). In place, a rank after the first
  // two would overwrite its own input there with theirs before adding it: it
  // reduces in its slot, where its own block of its input is not published.
  char *block_home() const {
    const std::size_t at = block(p_.local_).first * dtype_size(a_.dtype);
    if (!p_.reduce_in_buffer_ || (a_.in_place && p_.local_ >= 2)) return input(p_.local_, bytes_) + at;
    return static_cast<char *>(a_.recv) + at;
  }

  // This rank's block, reduced in local-rank order (so the bits do not depend
  // on who reduces) into block_home(); on one node it is then final (PG_AVG's
  // division included). Only this rank reads this block of its own input,
  // from the user's buffer.
  void reduce_block() {
    const auto [lo, len] = block(p_.local_);
    const std::size_t at = lo * dtype_size(a_.dtype);  // a lambda cannot capture lo (C++17)
    const pg_op op = combining_op(a_.op);
    auto source = [&](int q) -> const char * {
      return (q == p_.local_ ? static_cast<const char *>(a_.send) : published_input(q)) + at;
    };
    char *out = block_home();
    reduce_into(a_.dtype, op, out, source(0), source(1), len);
    for (int q = 2; q < p_.local_size_; ++q) reduce_local(a_.dtype, op, out, source(q), len);
    if (!leader_mode()) reduce_finish(a_.dtype, a_.op, out, len, p_.size_);
  }

  // This rank's final block in both the user's buffer and its slot, then
  // done = t for its peers.
  void share_block() {
    const auto [lo, len] = block(p_.local_);
    const std::size_t at = lo * dtype_size(a_.dtype);
    char *slot = input(p_.local_, bytes_) + at, *recv = static_cast<char *>(a_.recv) + at, *home = block_home();
    if (home == recv)
      std::memcpy(slot, recv, len * dtype_size(a_.dtype));
    else
      std::memcpy(recv, slot, len * dtype_size(a_.dtype));
    p_.parts_[static_cast<std::size_t>(p_.local_)].flags[t_ % 2].done.store(t_, std::memory_order_release);
  }

  void gather_blocks() {
    const std::size_t size = dtype_size(a_.dtype), n = bytes_;
    const bool pages = n <= p_.pages_up_to_;
    for (int q = 0; q < p_.local_size_; ++q) {
      if (q == p_.local_) continue;
      const auto [lo, len] = block(q);
      char *to = static_cast<char *>(a_.recv) + lo * size;
      const char *from = input(q, n) + lo * size;
      if (pages)
        pull_pages(to, from, len * size);
      else
        std::memcpy(to, from, len * size);
    }
  }

  // One node: what this rank needs of every local rank's input.
  void read_node() {
    const std::size_t len = bytes_;
    char *recv = static_cast<char *>(a_.recv);
    const int me = p_.local_;
    switch (a_.coll) {
      case Coll::allreduce:
        reduce_node_into(recv, 0);
        reduce_finish(a_.dtype, a_.op, recv, a_.count, p_.size_);
        break;
      case Coll::reduce:
        if (me != a_.root) break;
        reduce_node_into(recv, 0);
        reduce_finish(a_.dtype, a_.op, recv, a_.count, p_.size_);
        break;
      case Coll::reduce_scatter:
        reduce_node_into(recv, static_cast<std::size_t>(me) * len);
        reduce_finish(a_.dtype, a_.op, recv, a_.count, p_.size_);
        break;
      case Coll::broadcast:
        if (me != a_.root) std::memcpy(recv, input(a_.root, len), len);
        break;
      case Coll::allgather:
        for (int q = 0; q < p_.local_size_; ++q) {
          char *to = recv + static_cast<std::size_t>(q) * len;
          const char *from = q == me ? static_cast<const char *>(a_.send) : input(q, len);
          if (to != from) std::memcpy(to, from, len);
        }
        break;
      default:  // barrier
        break;
    }
  }

  // This rank's step across nodes failed: its node's ranks wait for its
  // `done`, so it says so there before returning the failure.
  pg_status fail_node(pg_status st) {
    const std::string why = last_error();
    p_.parts_[static_cast<std::size_t>(p_.local_)].flags[t_ % 2].done.store(t_ | kFailed, std::memory_order_release);
    return fail_message(st, "fairring: rank " + std::to_string(p_.rank_of_local_[static_cast<std::size_t>(p_.local_)]) +
                                " failed its step across nodes of this " + coll_name(a_.coll) + ": " + why);
  }

  // Whether local rank q has stored done = t (its result, or its block);
  // PG_ERR_BACKEND, naming it, when it stored that its step across nodes failed.
  pg_status posted(int q, bool *ready) {
    const std::uint64_t d = p_.parts_[static_cast<std::size_t>(q)].flags[t_ % 2].done.load(std::memory_order_acquire);
    *ready = (d & ~kFailed) >= t_;
    if (!*ready || !(d & kFailed)) return PG_OK;
    return fail(PG_ERR_BACKEND,
                "fairring: rank %d of this node failed its step across nodes of this %s; its own message says why",
                p_.rank_of_local_[static_cast<std::size_t>(q)], coll_name(a_.coll));
  }

  // This rank's result is in place and no peer reads its buffers any more.
  pg_status finish(Stage *next) {
    p_.finished_.store(t_, std::memory_order_release);
    *next = Stage::finished;
    return PG_OK;
  }

  // Whether this rank's input is read in place by its peers (publish()).
  bool input_shared() const { return spot_.id >= 0; }
  // Where local rank q publishes this operation's input of n bytes.
  char *input(int q, std::size_t n) const { return p_.input(q, t_, place_, n); }
  // Whether a split allreduce's inputs in pg_mem_alloc buffers are read in
  // place: where each rank's block outgrows the L1 data cache. Smaller, a
  // rank that computes in place writes its result where its peers just read
  // it, still in their L1 caches, and the copy it saved cost less (pg_mem_alloc
  // buffers on 2 ranks: 8-64 KiB up to 1.28 times slower in place, 128-256 KiB
  // 0.65-0.86 of the copy's time; docs/performance.md). The same on every rank.
  bool reads_in_place() const {
    return p_.memory_ && bytes_ / static_cast<std::size_t>(p_.local_size_) > p_.cycle_bytes_;
  }
  // Where local rank q's input to this split allreduce is: its pg_mem_alloc
  // buffer, or its slot (publish()).
  const char *published_input(int q) const {
    if (!reads_in_place()) return input(q, bytes_);
    InputSpot where;
    std::memcpy(&where, p_.parts_[static_cast<std::size_t>(q)].flags[t_ % 2].payload, sizeof where);
    if (where.id < 0) return input(q, bytes_);
    return p_.memory_->address(SharedSpot{static_cast<int>(where.id), static_cast<std::size_t>(where.offset)}, q);
  }

  FastPath &p_;
  const CollArgs a_;
  const std::uint64_t t_;
  const std::size_t place_;  // where in each rank's slots its input is, when it does not fit in a flag
  // What the operation is, worked out once: its bytes, whether it is split
  // into blocks, whether it climbs the tree.
  const std::size_t bytes_;
  const bool split_, tree_;
  const SharedSpot spot_;  // where a split allreduce's input lies in pg_mem_alloc memory (reads_in_place())
  Stage stage_ = Stage::publish;
  std::unique_ptr<Request> across_;
};

pg_status FastPath::create(MPI_Comm node_comm, const Config &config, Backend *rail,
                           std::unique_ptr<FastPath> *out) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "flags are shared between processes");
  static_assert(sizeof(InputSpot) <= kInline, "an input's spot travels in its flag's payload");
  std::unique_ptr<FastPath> f(new FastPath());
  MPI_Comm_rank(node_comm, &f->local_);
  MPI_Comm_size(node_comm, &f->local_size_);
  f->nodes_ = config.nodes;
  f->size_ = config.size;
  f->rail_ = rail;
  f->memory_ = config.memory;
  f->rails_ = rail && config.regular;
  f->slot_bytes_ = f->limit_ = round_up(config.slot_bytes, 64);
  f->split_bytes_ = config.split_bytes;
  f->cycle_bytes_ = config.cycle_bytes > 0 ? config.cycle_bytes : kCycleBytes;
  f->set_handoff(config.reduce_in_buffer, config.pages_up_to);
  f->tree_ = config.tree_ranks > 0 && f->local_size_ >= config.tree_ranks;
  f->fail_across_ = config.fail_across;
  f->rank_of_local_.resize(static_cast<std::size_t>(f->local_size_));
  PG_MPI_CHECK(MPI_Allgather(&config.rank, 1, MPI_INT, f->rank_of_local_.data(), 1, MPI_INT, node_comm));
  const std::size_t slots_at = round_up(2 * sizeof(Flag), kPage);
  NodeWindow window;
  PG_CHECK(allocate_node_window(node_comm, slots_at + 2 * f->slot_bytes_, "fairring's fast path", &window));
  f->win_ = window.win;
  PG_CHECK(touch_node_window(node_comm, window, slots_at + 2 * f->slot_bytes_));
  new (window.base) Flag[2]();  // this rank's flags, before any peer reads them
  f->parts_.resize(static_cast<std::size_t>(f->local_size_));
  for (int p = 0; p < f->local_size_; ++p) {
    char *at = window.parts[static_cast<std::size_t>(p)];
    f->parts_[static_cast<std::size_t>(p)] = {reinterpret_cast<Flag *>(at), at + slots_at};
  }
  PG_MPI_CHECK(MPI_Barrier(node_comm));
  *out = std::move(f);
  return PG_OK;
}

FastPath::~FastPath() {
  if (win_ != MPI_WIN_NULL && runtime::mpi_alive()) MPI_Win_free(&win_);
}

std::size_t FastPath::footprint() const { return round_up(2 * sizeof(Flag), kPage) + 2 * slot_bytes_; }

bool FastPath::fits(const CollArgs &a) const {
  switch (a.coll) {
    case Coll::allreduce:
    case Coll::barrier: break;
    case Coll::reduce:
    case Coll::broadcast:
    case Coll::allgather:
    case Coll::reduce_scatter:
      if (nodes_ > 1) return false;
      break;
    default: return false;
  }
  return call_bytes(a, local_size_) <= limit_;
}

pg_status FastPath::run(const CollArgs &a) {
  Op op(*this, a, ++started_);
  return op.wait();
}

pg_status FastPath::start(const CollArgs &a, std::unique_ptr<Request> *out) {
  auto op = std::make_unique<Op>(*this, a, ++started_);
  bool done = false;
  PG_CHECK(op->test(&done));  // publishes at once when it can
  *out = std::move(op);
  return PG_OK;
}

char *FastPath::input(int p, std::uint64_t t, std::size_t place, std::size_t bytes) const {
  const Part &part = parts_[static_cast<std::size_t>(p)];
  return bytes <= kInline ? part.flags[t % 2].payload : part.slots + place;
}

// The k-th operation whose input does not fit in a flag takes slot k % 2, and
// in it the next of the places of its size that span cycle_bytes_ (as many as
// the slot holds): a place is written again only after an L1 data cache's
// worth of other inputs went through the slot, by when its peers' copies of
// it have left their L1. Fewer places leave 2-96 KiB up to twice as slow;
// below kCyclingSpan the writer's own misses on more places cost more than
// they save, and two places are kept (docs/algorithms.md, "The fast path").
// Every rank counts the same operations: whether one uses a slot depends only
// on what every rank passes alike (the root's input for a broadcast).
std::size_t FastPath::next_place(const CollArgs &a) {
  const std::size_t bytes = input_bytes(a, a.root, local_size_);
  if (bytes <= kInline) return 0;
  const std::uint64_t k = slot_turns_++;
  const std::size_t span = round_up(bytes, 64);
  const std::size_t wanted = span < kCyclingSpan ? 2 : (cycle_bytes_ + span - 1) / span;
  const std::size_t places = std::max<std::size_t>(1, std::min(slot_bytes_ / span, wanted));
  return (k % 2) * slot_bytes_ + (k / 2) % places * span;
}

bool FastPath::arrived(std::uint64_t t) const {
  for (const Part &part : parts_)
    if (part.flags[t % 2].seq.load(std::memory_order_acquire) < t) return false;
  return true;
}

}  // namespace pg::fairring
