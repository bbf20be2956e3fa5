#include "program.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pgr {

const char *kind_name(Kind kind) {
  static const char *const names[] = {"allreduce",  "broadcast",       "reduce",    "allgather", "reduce_scatter",
                                      "alltoall",   "gather",          "scatter",   "barrier",   "send/recv",
                                      "sendrecv",   "allgatherv",      "reduce_scatterv", "alltoallv", "gatherv",
                                      "scatterv",   "unsupported pair"};
  return names[static_cast<int>(kind)];
}

bool is_reduction(Kind kind) {
  return kind == Kind::allreduce || kind == Kind::reduce || kind == Kind::reduce_scatter ||
         kind == Kind::reduce_scatterv || kind == Kind::unsupported;
}

bool is_collective(Kind kind) { return !is_point_to_point(kind) && kind != Kind::unsupported; }

bool is_point_to_point(Kind kind) { return kind == Kind::send_recv || kind == Kind::sendrecv; }

const char *strategy_name(int strategy) {
  static const char *const names[] = {"world", "duplicate", "split"};
  return names[strategy];
}

namespace {

// A size as docs/env.md writes them, <unsigned>[K|M|G]; `fallback` when unset
// or empty. The library rejects a malformed value at create, so a value this
// cannot read is reported and the default kept.
std::size_t env_size(const char *name, std::size_t fallback) {
  const char *text = std::getenv(name);
  if (!text || !*text) return fallback;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K': value <<= 10; ++end; break;
    case 'M': value <<= 20; ++end; break;
    case 'G': value <<= 30; ++end; break;
    default: break;
  }
  if (end == text || *end) {
    std::fprintf(stderr, "test_random: cannot read %s=%s as a size; sizes drawn around its default\n", name, text);
    return fallback;
  }
  return static_cast<std::size_t>(value);
}

bool in_place_exists(Kind kind) {
  switch (kind) {
    case Kind::broadcast:
    case Kind::barrier:
    case Kind::send_recv:
    case Kind::sendrecv:
    case Kind::unsupported: return false;
    default: return true;
  }
}

}  // namespace

Sizes Sizes::from_environment(std::size_t max_bytes, int ranks) {
  Sizes sizes;
  sizes.max_bytes = max_bytes;
  const std::size_t fast = env_size("PGS_FAIRRING_FAST_BYTES", 1 << 20);
  // Unset, the split is at 8 KiB on one node of two ranks and 4 KiB otherwise: both are boundaries.
  const std::size_t split = env_size("PGS_FAIRRING_SPLIT_BYTES", 4 << 10);
  const std::size_t pair_split = std::getenv("PGS_FAIRRING_SPLIT_BYTES") ? split : 8 << 10;
  const std::size_t min = env_size("PGS_FAIRRING_MIN_BYTES", 32 << 10);
  const std::size_t slice = env_size("PGS_FAIRRING_SLICE_BYTES", 256 << 10);
  const std::size_t inflight = env_size("PGS_FAIRRING_INFLIGHT", 4);
  const std::size_t chunk = sizes.mpi_chunk = env_size("PGS_MPI_CHUNK_COUNT", 0);
  // The fast path's inline payload (48 bytes in the flag's cache line), its
  // split, its slots, the flat threshold, slices of the pipeline (one, two,
  // and more than fit in flight), and a split of fewer than 64 bytes a rank.
  std::vector<std::size_t> b = {48, split, pair_split, fast, min, slice, 2 * slice, (inflight + 1) * slice,
                                64 * static_cast<std::size_t>(ranks)};
  // The mpi backend's chunks, in every element size.
  if (chunk > 0)
    for (std::size_t es : {1, 2, 4, 8}) b.push_back(chunk * es), b.push_back(2 * chunk * es + es);
  // Unset, the fast path ends at 1 MiB or 256 KiB, as the strategy times it: both are boundaries.
  if (!std::getenv("PGS_FAIRRING_FAST_BYTES")) b.push_back(256 << 10);
  for (std::size_t x : b)
    if (x > 0 && x <= max_bytes) sizes.boundaries.push_back(x);
  std::sort(sizes.boundaries.begin(), sizes.boundaries.end());
  sizes.boundaries.erase(std::unique(sizes.boundaries.begin(), sizes.boundaries.end()), sizes.boundaries.end());
  return sizes;
}

std::string Sizes::describe() const {
  std::string text = "sizes up to " + std::to_string(max_bytes) + " bytes (" + std::to_string(large_percent) +
                     " % above the largest threshold) around";
  for (std::size_t b : boundaries) text += " " + std::to_string(b);
  return text;
}

Program::Program(std::uint64_t seed, Sizes sizes, Limits limits)
    : rng_(seed), sizes_(std::move(sizes)), limits_(std::move(limits)) {
  if (limits_.strategies.empty()) limits_.strategies = {kWorld};
  if (limits_.max_in_flight == 0) limits_.max_in_flight = 1;
}

pg_dtype Program::draw_dtype() { return static_cast<pg_dtype>(rng_.below(10)); }

pg_op Program::draw_op(pg_dtype dtype) {
  for (;;) {
    const pg_op op = static_cast<pg_op>(rng_.below(8));
    if (pg_op_supported(dtype, op)) return op;
  }
}

std::size_t Program::draw_bytes(pg_dtype dtype) {
  const std::size_t es = pg_dtype_size(dtype), max = sizes_.max_bytes;
  if (sizes_.large_percent && !sizes_.boundaries.empty() && rng_.chance(sizes_.large_percent)) {
    const std::size_t low = sizes_.boundaries.back();
    return (low + static_cast<std::size_t>(rng_.below(max - low + 1))) / es * es;
  }
  std::size_t bytes = 0;
  const std::uint64_t how = rng_.below(100);
  if (how < 10) {
    bytes = rng_.below(4) * es;  // 0 to 3 elements
  } else if (how < 20) {
    bytes = (rng_.below(4) * 5 + 1) * es;  // odd counts
  } else if (how < 80 && !sizes_.boundaries.empty()) {
    const std::size_t b = sizes_.boundaries[rng_.below(sizes_.boundaries.size())];
    switch (rng_.below(5)) {
      case 0: bytes = b >= es ? b - es : 0; break;
      case 1: bytes = b; break;
      case 2: bytes = b + es; break;
      case 3: bytes = b - std::min(b, static_cast<std::size_t>(rng_.below(b / 4 + 1))); break;
      default: bytes = b + rng_.below(b / 4 + 1); break;
    }
  } else {
    // Log-uniform up to the limit.
    const double x = std::exp2(rng_.uniform() * std::log2(static_cast<double>(max)));
    bytes = static_cast<std::size_t>(x);
  }
  bytes = std::min(bytes, max);
  return bytes / es * es;
}

void Program::draw_settle(Op &op) {
  if (outstanding_.empty()) return;
  const bool last = next_ >= limits_.ops;
  if (!last && outstanding_.size() < limits_.max_in_flight && !rng_.chance(25)) return;
  std::vector<std::size_t> keep;
  for (std::size_t index : outstanding_) {
    if (last || rng_.chance(50))
      op.settle.push_back(index);
    else
      keep.push_back(index);
  }
  if (op.settle.empty()) {  // at least one, any of them
    const std::size_t pick = rng_.below(keep.size());
    op.settle.push_back(keep[pick]);
    keep.erase(keep.begin() + static_cast<long>(pick));
  }
  outstanding_ = keep;
}

Op Program::next() {
  Op op;
  op.index = next_++;
  op.seed = rng_.next();
  op.root_draw = static_cast<std::uint32_t>(rng_.next());
  op.per_block = rng_.chance(50);
  const long index = static_cast<long>(op.index);
  if (index == limits_.forced_index) {
    op.kind = Kind::allreduce;
    op.dtype = PG_FLOAT32;
    op.redop = PG_SUM;
    op.bytes = 64;
  } else if (index == limits_.big_index) {
    op.kind = Kind::allreduce;
    op.dtype = PG_UINT8;
    op.redop = PG_SUM;
    op.in_place = true;
    op.big = true;
    op.bytes = static_cast<std::size_t>(INT_MAX) + 17;  // above 2 GiB, and more elements than INT_MAX
  } else {
    // Weights: the even collectives, then point-to-point, the uneven ones and
    // the refusal of a pair that does not exist.
    static const unsigned weights[] = {14, 6, 6, 6, 6, 5, 4, 4, 3, 4, 3, 4, 4, 4, 3, 3, 1};
    static_assert(sizeof weights / sizeof *weights == static_cast<std::size_t>(Kind::count), "one weight a kind");
    for (;;) {
      unsigned total = 0;
      for (unsigned w : weights) total += w;
      unsigned x = static_cast<unsigned>(rng_.below(total)), k = 0;
      while (x >= weights[k]) x -= weights[k++];
      op.kind = static_cast<Kind>(k);
      if (!limits_.point_to_point && !is_collective(op.kind)) continue;
      if (!limits_.kinds.empty() && std::find(limits_.kinds.begin(), limits_.kinds.end(), op.kind) == limits_.kinds.end())
        continue;
      // The fault: a collective in which every rank needs every other's data
      // (a root's broadcast, or an uneven call with nothing from one rank,
      // could finish without it).
      if (index == limits_.fault_index && !limits_.fault_any && op.kind != Kind::allreduce &&
          op.kind != Kind::allgather && op.kind != Kind::reduce_scatter && op.kind != Kind::alltoall &&
          op.kind != Kind::barrier)
        continue;
      if (index == limits_.fault_index && !is_collective(op.kind)) continue;
      break;
    }
    op.dtype = draw_dtype();
    if (op.kind == Kind::unsupported) {
      // A pair the capability table refuses (every dtype has one).
      for (;;) {
        op.redop = static_cast<pg_op>(rng_.below(8));
        if (!pg_op_supported(op.dtype, op.redop)) break;
      }
    } else if (is_reduction(op.kind)) {
      op.redop = draw_op(op.dtype);
    }
    op.bytes = draw_bytes(op.dtype);
    if (index == limits_.fault_index) {  // at least one element a block, a block a peer
      const std::size_t least = pg_dtype_size(op.dtype) * static_cast<std::size_t>(limits_.ranks * limits_.ranks);
      op.bytes = std::max(op.bytes, least);
      op.per_block = true;
    }
    op.in_place = in_place_exists(op.kind) && rng_.chance(30);
    op.nonblocking = op.kind != Kind::sendrecv && op.kind != Kind::unsupported && rng_.chance(50);
  }
  // A shared tag for about a third of the point-to-point operations, from
  // bits of the operation's seed: the stream draws what it drew without them.
  op.tag = 1 + static_cast<int>(op.index % 30000);
  if (limits_.shared_tags && is_point_to_point(op.kind) && (op.seed >> 61) < 3)
    op.tag = kSharedTag + static_cast<int>((op.seed >> 32) % kSharedTags);
  // The strategy: the world half of the time where it may be used.
  if (index == limits_.forced_index || index == limits_.big_index) {
    op.strategy = kWorld;
  } else {
    const auto &allowed = limits_.strategies;
    std::vector<int> choices = allowed;
    if (index == limits_.fault_index) {
      choices.clear();
      for (int s : allowed)
        if (s != kSplit) choices.push_back(s);
      if (choices.empty()) choices.push_back(kWorld);
    }
    const bool world = std::find(choices.begin(), choices.end(), kWorld) != choices.end();
    op.strategy = world && rng_.chance(50) ? kWorld : choices[rng_.below(choices.size())];
  }
  if (op.nonblocking) outstanding_.push_back(op.index);
  draw_settle(op);
  return op;
}

std::vector<Op> draw_program(std::uint64_t seed, const Sizes &sizes, const Limits &limits) {
  Program program(seed, sizes, limits);
  std::vector<Op> ops;
  while (!program.done()) ops.push_back(program.next());
  return ops;
}

std::vector<Message> messages(const Op &op, int ranks) {
  std::vector<Message> out;
  if (op.kind == Kind::send_recv) {
    Rng rng(op.seed ^ 0x9a1c5);
    std::vector<int> perm(static_cast<std::size_t>(ranks));
    for (int q = 0; q < ranks; ++q) perm[static_cast<std::size_t>(q)] = q;
    for (std::size_t k = perm.size(); k > 1; --k) std::swap(perm[k - 1], perm[rng.below(k)]);
    for (std::size_t k = 0; k + 1 < perm.size(); k += 2) {
      out.push_back({perm[k], perm[k + 1]});
      out.push_back({perm[k + 1], perm[k]});
    }
  } else if (op.kind == Kind::sendrecv) {
    const int shift = ranks > 1 ? 1 + static_cast<int>(op.seed % static_cast<std::uint64_t>(ranks - 1)) : 0;
    for (int r = 0; r < ranks; ++r) out.push_back({r, (r + shift) % ranks});
  }
  return out;
}

std::string describe(const Op &op) {
  char text[256];
  const char *name = op.kind == Kind::send_recv && op.nonblocking ? "isend/irecv" : kind_name(op.kind);
  std::snprintf(text, sizeof text, "#%zu %s%s", op.index,
                op.nonblocking && op.kind != Kind::send_recv ? "i" : "", name);
  std::string out = text;
  if (op.kind != Kind::barrier) {
    out += std::string(" ") + pg_dtype_name(op.dtype);
    if (is_reduction(op.kind)) out += std::string(" ") + pg_op_name(op.redop);
  }
  out += std::string(" on the ") + strategy_name(op.strategy) + (op.nonblocking ? ", nonblocking" : ", blocking");
  if (op.in_place) out += ", in place";
  if (op.any_source) out += ", from any source";
  return out;
}

}  // namespace pgr
