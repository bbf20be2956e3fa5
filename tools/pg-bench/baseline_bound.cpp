// The bound (--bound): what this machine allows an allreduce of the row's
// bytes among the ranks of one node, measured here rather than computed from
// a data sheet. Its row runs the data movement that any allreduce in shared
// memory must make with ordinary buffers, as copies between the ranks' cores,
// without the arithmetic, on the faster of the two schedules that need the
// fewest flag rounds and the fewest bytes pulled, each pulling with memcpy or
// by pages as the library can (util/copy.h) (docs/performance.md, "The
// bound"):
//
//   exchange     each rank writes its input into its shared part (beside
//                its flag, in one cache line, when it fits); one flag round;
//                each copies every peer's n bytes out of the peer's cache:
//                (L-1) n pulled, one round.
//   reduce-scatter then all-gather
//                each rank writes the blocks the others reduce; one round;
//                pulls its block from every peer (the reduction, as copies)
//                into its part; one round; pulls every other block:
//                2(L-1)/L n pulled, two rounds.
//
// The first call of each size runs each schedule with each pull a few times
// and keeps the fastest (every rank calls with the same sizes in the same
// order: the choice is collective). The flags and parts alternate between two parities, as a
// real path's slots would: a rank writes parity t % 2 again only at call t + 2, after
// every rank arrived at call t + 1, which each does only after it finished
// reading t; within a parity, places round the L1 data cache (data()).
// Its results are not an allreduce and are not checked; its busbw
// is the allreduce's (2(n-1)/n), so that it reads like the rows it bounds.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "backend.h"
#include "util/copy.h"  // header-only: the library's pulls by pages

namespace pgbench {
namespace {

constexpr size_t kLine = 64;

// A rank's flag of one parity, and the bytes that fit beside it: a small
// input travels in the flag's own cache line, as a real path's would.
struct alignas(kLine) Flag {
  std::atomic<uint64_t> round{0};
  char inline_data[kLine - sizeof(std::atomic<uint64_t>)];
};

class Bound final : public MpiBarrierBackend {
 public:
  Bound() : MpiBarrierBackend("bound") {}

  std::string description() const override {
    return "the data movement an allreduce needs in one node's shared memory, copies and flag rounds only, no "
           "arithmetic (docs/performance.md, \"The bound\"); rows not checked";
  }
  std::string unsupported(Collective c, pg_dtype, pg_op) const override {
    return c == Collective::Allreduce ? "" : "the bound has allreduce rows only";
  }
  bool checked() const override { return false; }

  void setup(const SetupInfo &info) override {
    // Skipped before anything is made: a skipped backend is not torn down.
    if (info.cuda) throw Unavailable("the bound is for host memory (--device cpu)");
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(info.world, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &node);
    int local = 0, ranks = 1;
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &ranks);
    MPI_Comm_free(&node);
    int all_local = ranks == info.nranks;
    MPI_Allreduce(MPI_IN_PLACE, &all_local, 1, MPI_INT, MPI_LAND, info.world);
    if (!all_local) throw Unavailable("the bound is for the ranks of one node (this job spans several)");
    if (info.nranks < 2) throw Unavailable("the bound needs 2 ranks or more");
    dup_world(info);
    // A window too large for the node's shared memory is an error message, not an abort.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    local_ = info.rank;
    ranks_ = info.nranks;
    parity_bytes_ = round_line(info.max_bytes);
    const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // 0 or -1 where the C library cannot say
    long fewest = l1d > 0 ? l1d : 32 << 10;
    MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_LONG, MPI_MIN, info.world);  // the same places everywhere
    l1d_bytes_ = static_cast<size_t>(fewest);
    const size_t part_bytes = 2 * sizeof(Flag) + 2 * parity_bytes_;
    char *base = nullptr;
    // A line more than the part: an MPI need not align a rank's segment to a
    // cache line (Open MPI does not), and each part starts at the next one.
    if (MPI_Win_allocate_shared(static_cast<MPI_Aint>(part_bytes + kLine), 1, MPI_INFO_NULL, comm_, &base, &win_) !=
        MPI_SUCCESS)
      throw Error("cannot share " + std::to_string(part_bytes) +
                  " bytes per rank between the node's ranks (MPI_Win_allocate_shared failed): use a smaller -e");
    parts_.resize(static_cast<size_t>(ranks_));
    for (int q = 0; q < ranks_; ++q) {
      MPI_Aint size = 0;
      int unit = 0;
      char *at = nullptr;
      MPI_Win_shared_query(win_, q, &size, &unit, &at);
      parts_[static_cast<size_t>(q)] = at + (kLine - reinterpret_cast<uintptr_t>(at) % kLine) % kLine;
    }
    char *mine = parts_[static_cast<size_t>(local_)];
    new (mine) Flag[2]();
    std::memset(mine + 2 * sizeof(Flag), 0, part_bytes - 2 * sizeof(Flag));  // every page touched before timing
    MPI_Barrier(comm_);
  }

  std::string run(const Call &c) override {
    const size_t n = c.count * pg_dtype_size(c.dtype);
    if (n != chosen_for_) choose(c, n);
    one(c, n, way_);
    return "";
  }

  // A flag round, as a shared-memory path synchronizes its own ranks, not
  // MPI_Barrier: a rank that leaves a barrier first waits in the timed call
  // for the last, and how far apart the ranks leave an MPI's barrier depends
  // on the MPI that launched the job (MPICH 5.0.2's, about 1 us: its 8 B row
  // read 1.1 us, against 0.2 under MPICH 4.0.2 and Intel MPI).
  std::string barrier() override {
    round();
    return "";
  }

  void teardown() override {
    if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
    MpiBarrierBackend::teardown();
  }

 private:
  static size_t round_line(size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }
  // Rank q's flag and data of this call's parity.
  Flag &flag(int q) const { return reinterpret_cast<Flag *>(parts_[static_cast<size_t>(q)])[calls_ % 2]; }
  // Rank q's place for this call's n bytes: in its flag's line when they fit,
  // else in parity calls_ % 2, and there the next of the places of this size
  // that span the L1 data cache (two below 2 KiB), as fairring's fast path
  // takes its slots: memory a peer read is written again only once it has
  // left the peer's L1.
  char *data(int q, size_t n) const {
    if (n <= sizeof(Flag::inline_data)) return flag(q).inline_data;
    const size_t span = round_line(n), wanted = span < (size_t(2) << 10) ? 2 : (l1d_bytes_ + span - 1) / span;
    const size_t places = std::max<size_t>(1, std::min(parity_bytes_ / span, wanted));
    return parts_[static_cast<size_t>(q)] + 2 * sizeof(Flag) + (calls_ % 2) * parity_bytes_ + (calls_ / 2) % places * span;
  }

  // One flag round: this rank arrives (its writes before are visible), then
  // waits for every rank to arrive; work between the two overlaps the wait.
  uint64_t arrive() {
    flag(local_).round.store(++rounds_, std::memory_order_release);
    return rounds_;
  }
  void wait_all(uint64_t r) const {
    for (int q = 0; q < ranks_; ++q)
      for (unsigned spins = 0; flag(q).round.load(std::memory_order_acquire) < r; ++spins)
        if (spins > 4096) std::this_thread::yield();  // more ranks than cores: let the peer run
  }
  void round() { wait_all(arrive()); }

  // Block q of n bytes: whole cache lines but the last.
  std::pair<size_t, size_t> block(int q, size_t n) const {
    const size_t per = round_line((n + static_cast<size_t>(ranks_) - 1) / static_cast<size_t>(ranks_));
    const size_t lo = std::min(n, static_cast<size_t>(q) * per);
    return {lo, std::min(n, lo + per) - lo};
  }

  // A schedule and how it pulls.
  struct Way {
    bool exchange = true;
    bool pages = false;  // pg::pull_pages, else memcpy
  };

  void one(const Call &c, size_t n, Way way) {
    ++calls_;
    pages_ = way.pages;
    if (way.exchange) exchange(c, n);
    else reduce_scatter_all_gather(c, n);
  }

  // The fastest way for n bytes, on every rank: rounds of a few calls of
  // each way in turn, a way's time the median of its rounds (of the slowest
  // rank's times), so that a slow moment of the machine does not decide. The
  // same four ways on every rank: by pages is memcpy where the CPU cannot.
  void choose(const Call &c, size_t n) {
    constexpr int kWays = 4, kRounds = 9;
    const Way ways[kWays] = {{true, false}, {false, false}, {true, true}, {false, true}};
    const int calls = static_cast<int>(std::clamp<size_t>((size_t(1) << 20) / std::max<size_t>(n, 1), 1, 8));
    for (const Way &w : ways) one(c, n, w);  // warm
    double took[kRounds][kWays];
    for (int r = 0; r < kRounds; ++r)
      for (int w = 0; w < kWays; ++w) {
        MPI_Barrier(comm_);
        const double start = MPI_Wtime();
        for (int i = 0; i < calls; ++i) one(c, n, ways[w]);
        took[r][w] = MPI_Wtime() - start;
      }
    MPI_Allreduce(MPI_IN_PLACE, &took[0][0], kRounds * kWays, MPI_DOUBLE, MPI_MAX, comm_);
    double median[kWays];
    for (int w = 0; w < kWays; ++w) {
      double each[kRounds];
      for (int r = 0; r < kRounds; ++r) each[r] = took[r][w];
      std::nth_element(each, each + kRounds / 2, each + kRounds);
      median[w] = each[kRounds / 2];
    }
    way_ = ways[std::min_element(median, median + kWays) - median];
    chosen_for_ = n;
  }

  void exchange(const Call &c, size_t n) {
    std::memcpy(data(local_, n), c.send, n);
    round();
    char *recv = static_cast<char *>(c.recv);
    for (int q = 0; q < ranks_; ++q)
      if (q != local_) pull(recv, data(q, n), n);
  }

  // The reduction as copies: every peer's copy of this rank's block pulled
  // into this rank's part, where the others then pull it from.
  void reduce_scatter_all_gather(const Call &c, size_t n) {
    const auto [lo, len] = block(local_, n);
    char *recv = static_cast<char *>(c.recv), *mine = data(local_, n);
    const char *send = static_cast<const char *>(c.send);
    std::memcpy(mine, send, lo);  // every block but this rank's own
    std::memcpy(mine + lo + len, send + lo + len, n - lo - len);
    round();
    for (int q = 0; q < ranks_; ++q)
      if (q != local_) pull(mine + lo, data(q, n) + lo, len);
    const uint64_t reduced = arrive();
    std::memcpy(recv + lo, mine + lo, len);
    wait_all(reduced);
    for (int q = 0; q < ranks_; ++q) {
      if (q == local_) continue;
      const auto [qlo, qlen] = block(q, n);
      pull(recv + qlo, data(q, n) + qlo, qlen);
    }
  }

  // `bytes` out of a peer's part, as the chosen way pulls.
  void pull(char *to, const char *from, size_t bytes) const {
    if (pages_)
      pg::pull_pages(to, from, bytes);
    else
      std::memcpy(to, from, bytes);
  }

  MPI_Win win_ = MPI_WIN_NULL;
  int local_ = 0, ranks_ = 1;
  size_t parity_bytes_ = 0;  // one parity's data in a rank's part
  size_t l1d_bytes_ = 0;     // the L1 data cache: how much of a parity its places span
  std::vector<char *> parts_;
  uint64_t calls_ = 0, rounds_ = 0;
  size_t chosen_for_ = SIZE_MAX;  // the size `way_` was chosen for
  Way way_;
  bool pages_ = false;  // the call running now pulls by pages
};

}  // namespace

std::unique_ptr<Backend> make_bound() { return std::make_unique<Bound>(); }

}  // namespace pgbench
