#include "calls.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "pg_backend.h"  // pg_dtype_from_double, pg_dtype_to_double

namespace pgr {
namespace {

bool is_floating(pg_dtype dtype) { return dtype >= PG_FLOAT16; }
bool is_signed(pg_dtype dtype) { return dtype == PG_INT8 || dtype == PG_INT32 || dtype == PG_INT64; }

// Element writers. Integers are the low bytes of a 64-bit value (the test
// machines are little endian; main() checks); floating values go through
// the library's conversion, which is exact for every value written here but
// the PG_AVG quotients, which it rounds to nearest even as the type requires.
void store_bits(unsigned char *p, std::size_t es, std::uint64_t bits) { std::memcpy(p, &bits, es); }
void store_real(unsigned char *p, pg_dtype dtype, double x) { pg_dtype_from_double(dtype, &x, p, 1); }

// A reduction operand: the bits of an integer, or the exact value of a float.
struct Value {
  std::uint64_t bits = 0;
  double real = 0;
};

// Rank q's input at element i. Integers: any bits (sums and products wrap,
// which is exact in any order). Floating types: values whose every partial
// result is exact in the narrowest type (bfloat16: 8 significant bits), so the
// order a backend combines in cannot change the bits:
//   sum, avg   integers in [-L, L] with L = 256 / ranks, and -0
//   prod       +-1, +-2 on ranks 0, 4, 8, ..., +-1/2 on ranks 2, 6, ..., and +-0
//   min, max   integers in [-100, 100], +-0, +-infinity and NaN (NaN wins, -0 < +0)
Value input_value(pg_dtype dtype, pg_op op, std::uint64_t seed, int q, std::size_t i, int ranks) {
  const std::uint64_t h = hash(seed, static_cast<std::uint64_t>(q), 0x5eed, i);
  Value v;
  v.bits = h;
  if (!is_floating(dtype)) return v;
  const unsigned rare = static_cast<unsigned>((h >> 40) % 32);
  switch (op) {
    case PG_SUM:
    case PG_AVG: {
      const std::int64_t largest = std::max(1, 256 / ranks);
      v.real = rare == 0 ? -0.0 : static_cast<double>(static_cast<std::int64_t>(h % (2 * largest + 1)) - largest);
      break;
    }
    case PG_PROD: {
      double m = 1;
      if ((h >> 8) & 1) m = q % 4 == 0 ? 2.0 : q % 4 == 2 ? 0.5 : 1.0;
      if (rare == 0) m = 0;
      v.real = (h & 1) ? -m : m;
      break;
    }
    default:  // PG_MIN, PG_MAX
      switch (rare) {
        case 0: v.real = NAN; break;
        case 1: v.real = INFINITY; break;
        case 2: v.real = -INFINITY; break;
        case 3: v.real = 0.0; break;
        case 4: v.real = -0.0; break;
        default: v.real = static_cast<double>(static_cast<std::int64_t>(h % 201) - 100); break;
      }
      break;
  }
  return v;
}

// An integer of the dtype's width as a number that orders as the type does.
std::int64_t signed_key(pg_dtype dtype, std::uint64_t bits) {
  const unsigned shift = static_cast<unsigned>(64 - 8 * pg_dtype_size(dtype));
  return shift ? static_cast<std::int64_t>(bits << shift) >> shift : static_cast<std::int64_t>(bits);
}
std::uint64_t unsigned_key(pg_dtype dtype, std::uint64_t bits) {
  const unsigned width = static_cast<unsigned>(8 * pg_dtype_size(dtype));
  return width == 64 ? bits : bits & ((std::uint64_t(1) << width) - 1);
}

// a (op) b, as the contract defines it (pg_strategy.h, pg_backend.h).
Value combine(pg_dtype dtype, pg_op op, Value a, Value b) {
  if (!is_floating(dtype)) {
    bool b_wins = false;
    switch (op) {
      case PG_SUM: a.bits += b.bits; return a;
      case PG_PROD: a.bits *= b.bits; return a;
      case PG_BAND: a.bits &= b.bits; return a;
      case PG_BOR: a.bits |= b.bits; return a;
      case PG_BXOR: a.bits ^= b.bits; return a;
      case PG_MIN:
        b_wins = is_signed(dtype) ? signed_key(dtype, b.bits) < signed_key(dtype, a.bits)
                                  : unsigned_key(dtype, b.bits) < unsigned_key(dtype, a.bits);
        return b_wins ? b : a;
      default:  // PG_MAX
        b_wins = is_signed(dtype) ? signed_key(dtype, b.bits) > signed_key(dtype, a.bits)
                                  : unsigned_key(dtype, b.bits) > unsigned_key(dtype, a.bits);
        return b_wins ? b : a;
    }
  }
  switch (op) {
    case PG_SUM:
    case PG_AVG: a.real += b.real; return a;
    case PG_PROD: a.real *= b.real; return a;
    default: {  // PG_MIN, PG_MAX: a NaN wins; -0 < +0
      if (std::isnan(a.real)) return a;
      if (std::isnan(b.real)) return b;
      const bool min = op == PG_MIN;
      if (a.real == b.real) {
        if (a.real != 0) return a;
        const bool negative = min ? (std::signbit(a.real) || std::signbit(b.real))
                                  : (std::signbit(a.real) && std::signbit(b.real));
        a.real = negative ? -0.0 : 0.0;
        return a;
      }
      return (b.real < a.real) == min ? b : a;
    }
  }
}

std::string list(const std::vector<std::size_t> &values) {
  std::string text = "[";
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (k == 8) {
      text += " ...";
      break;
    }
    text += (k ? " " : "") + std::to_string(values[k]);
  }
  return text + "]";
}

// Counts of one block per rank, drawn alike on every rank of the group: random
// up to 2n, a quarter of them zero, one rank with nothing, or one rank with
// everything.
std::vector<std::size_t> draw_counts(Rng &rng, std::size_t ranks, std::size_t n) {
  std::vector<std::size_t> counts(ranks);
  const std::uint64_t pattern = rng.below(4);
  const std::size_t special = rng.below(ranks);
  for (std::size_t q = 0; q < ranks; ++q) {
    switch (pattern) {
      case 0: counts[q] = rng.below(2 * n + 1); break;
      case 1: counts[q] = rng.chance(25) ? 0 : rng.below(2 * n + 1); break;
      case 2: counts[q] = q == special ? 0 : n + rng.below(3); break;
      default: counts[q] = q == special ? n * ranks : rng.below(2); break;
    }
  }
  return counts;
}

// Displacements for blocks of `counts`: in a random order, with gaps of 0 to 2
// elements (which must stay untouched); *extent: the elements they span.
std::vector<std::size_t> draw_displs(Rng &rng, const std::vector<std::size_t> &counts, std::size_t *extent) {
  const std::size_t ranks = counts.size();
  std::vector<std::size_t> order(ranks), displs(ranks);
  for (std::size_t q = 0; q < ranks; ++q) order[q] = q;
  for (std::size_t k = ranks; k > 1; --k) std::swap(order[k - 1], order[rng.below(k)]);
  std::size_t at = rng.below(3);
  for (std::size_t q : order) {
    displs[q] = at;
    at += counts[q] + rng.below(3);
  }
  *extent = at;
  return displs;
}

std::size_t sum(const std::vector<std::size_t> &values) {
  std::size_t total = 0;
  for (std::size_t v : values) total += v;
  return total;
}

// The bytes of one element as hexadecimal and, for reading, as a number.
std::string element_text(pg_dtype dtype, const unsigned char *p) {
  const std::size_t es = pg_dtype_size(dtype);
  std::uint64_t bits = 0;
  std::memcpy(&bits, p, es);
  double value = 0;
  pg_dtype_to_double(dtype, p, &value, 1);
  char text[96];
  if (is_floating(dtype))
    std::snprintf(text, sizeof text, "0x%0*" PRIx64 " (%g)", static_cast<int>(2 * es), bits, value);
  else if (is_signed(dtype))
    std::snprintf(text, sizeof text, "0x%0*" PRIx64 " (%" PRId64 ")", static_cast<int>(2 * es), bits,
                  signed_key(dtype, bits));
  else
    std::snprintf(text, sizeof text, "0x%0*" PRIx64 " (%" PRIu64 ")", static_cast<int>(2 * es), bits, bits);
  return text;
}

// The marker that fills what a call must not write: position-dependent, so a
// block copied to the wrong place shows.
unsigned char marker(std::size_t i) { return static_cast<unsigned char>(0xa5 ^ (i * 29)); }

}  // namespace

Call::Call(const Op &op, const Group &group) : op_(op), g_(group), es_(pg_dtype_size(op.dtype)) {
  buffers_.reserve(4);  // buffer() hands out references: no reallocation
  root_ = static_cast<int>(op.root_draw % static_cast<std::uint32_t>(group.size));
  tag_ = op.tag;
  what_ = describe(op);
  if (op.big)
    prepare_big();
  else
    prepare();
}

pg_status Pool::create(pg_strategy *s, std::size_t block_bytes, std::size_t blocks, std::unique_ptr<Pool> *out) {
  auto pool = std::make_unique<Pool>();
  pool->s_ = s;
  pool->block_bytes_ = (block_bytes + 63) / 64 * 64;
  const pg_status st = pg_mem_alloc(s, pool->block_bytes_ * blocks, &pool->memory_);
  if (st != PG_OK) return st;
  for (std::size_t k = blocks; k-- > 0;)
    pool->free_.push_back(static_cast<unsigned char *>(pool->memory_) + k * pool->block_bytes_);
  *out = std::move(pool);
  return PG_OK;
}

Pool::~Pool() {
  if (memory_) pg_mem_free(s_, memory_);
}

unsigned char *Pool::take(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > block_bytes_ || free_.empty()) return nullptr;
  unsigned char *block = free_.back();
  free_.pop_back();
  return block;
}

void Pool::give_back(unsigned char *block) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(block);
}

Call::~Call() {
  for (Buffer &b : buffers_)
    if (b.pooled) g_.pool->give_back(b.mem);
}

Call::Buffer &Call::buffer(const char *name, std::size_t bytes) {
  buffers_.emplace_back();
  Buffer &b = buffers_.back();
  b.name = name;
  b.bytes = bytes;
  b.size = bytes + 2 * kGuard;
  Rng draw(op_.seed ^ (static_cast<std::uint64_t>(g_.rank) << 40) ^ buffers_.size());
  if (g_.pool && draw.next() % 4 != 0) b.mem = g_.pool->take(b.size);
  b.pooled = b.mem != nullptr;
  if (!b.pooled) {
    b.own.resize(b.size);
    b.mem = b.own.data();
  }
  for (std::size_t i = 0; i < b.size; ++i) b.mem[i] = marker(i);
  return b;
}

void Call::freeze() {
  for (Buffer &b : buffers_) b.want.assign(b.mem, b.mem + b.size);
}

// Point-to-point: n_ elements sent to `to`, and those expected from `from`.
void Call::message_buffers(int to, int from) {
  const int r = g_.rank;
  Buffer &s = buffer("sendbuf", n_ * es_), &d = buffer("recvbuf", n_ * es_);
  for (std::size_t i = 0; i < n_; ++i) put_moved(s.at(i * es_), r, to, i);
  freeze();
  for (std::size_t i = 0; i < n_; ++i) put_moved(d.want_at(i * es_), from, r, i);
  send_ = s.at(0);
  recv_ = d.at(0);
}

void Call::put_moved(unsigned char *p, int from, int to, std::size_t i) const {
  store_bits(p, es_, hash(op_.seed, static_cast<std::uint64_t>(from), static_cast<std::uint64_t>(to), i));
}

void Call::put_input(unsigned char *p, int q, std::size_t i) const {
  const Value v = input_value(op_.dtype, op_.redop, op_.seed, q, i, g_.size);
  if (is_floating(op_.dtype))
    store_real(p, op_.dtype, v.real);
  else
    store_bits(p, es_, v.bits);
}

void Call::put_reduced(unsigned char *p, std::size_t i) const {
  Value r = input_value(op_.dtype, op_.redop, op_.seed, 0, i, g_.size);
  for (int q = 1; q < g_.size; ++q)
    r = combine(op_.dtype, op_.redop, r, input_value(op_.dtype, op_.redop, op_.seed, q, i, g_.size));
  if (!is_floating(op_.dtype)) {
    store_bits(p, es_, r.bits);
    return;
  }
  if (op_.redop == PG_AVG) {
    // The sum (exact in the type) divided in the type's arithmetic: float for
    // float16, bfloat16 and float32 (then rounded to the 16-bit types).
    if (op_.dtype == PG_FLOAT64)
      r.real /= g_.size;
    else
      r.real = static_cast<double>(static_cast<float>(r.real) / static_cast<float>(g_.size));
  }
  store_real(p, op_.dtype, r.real);
}

void Call::prepare() {
  const int P = g_.size, r = g_.rank;
  const std::size_t es = es_, Pz = static_cast<std::size_t>(P), rz = static_cast<std::size_t>(r);
  // The even collectives' count: the bytes drawn are a rank's whole input or
  // one block of it (op.per_block), as the thresholds count them.
  const std::size_t whole = op_.bytes / es, block = op_.per_block ? whole : whole / Pz;
  char text[512] = "";
  switch (op_.kind) {
    case Kind::allreduce:
    case Kind::reduce: {
      n_ = whole;
      const bool reduce = op_.kind == Kind::reduce, at_root = !reduce || r == root_;
      Buffer &s = buffer("sendbuf", n_ * es);
      for (std::size_t i = 0; i < n_; ++i) put_input(s.at(i * es), r, i);
      Buffer *d = at_root && !op_.in_place ? &buffer("recvbuf", n_ * es) : nullptr;
      freeze();
      Buffer &out = d ? *d : s;
      if (at_root)
        for (std::size_t i = 0; i < n_; ++i) put_reduced(out.want_at(i * es), i);
      send_ = s.at(0);
      recv_ = at_root ? out.at(0) : nullptr;
      std::snprintf(text, sizeof text, "count=%zu%s", n_, reduce ? (" root=" + std::to_string(root_)).c_str() : "");
      break;
    }
    case Kind::broadcast: {
      n_ = whole;
      Buffer &b = buffer("buf", n_ * es);
      if (r == root_)
        for (std::size_t i = 0; i < n_; ++i) put_moved(b.at(i * es), root_, 0, i);
      freeze();
      for (std::size_t i = 0; i < n_; ++i) put_moved(b.want_at(i * es), root_, 0, i);
      send_ = recv_ = b.at(0);
      std::snprintf(text, sizeof text, "count=%zu root=%d", n_, root_);
      break;
    }
    case Kind::allgather:
    case Kind::gather: {
      n_ = block;
      const bool gather = op_.kind == Kind::gather, at_root = !gather || r == root_;
      Buffer *all = at_root ? &buffer("recvbuf", Pz * n_ * es) : nullptr;
      unsigned char *mine = nullptr;
      if (op_.in_place && at_root) {
        mine = all->at(rz * n_ * es);
      } else {
        mine = buffer("sendbuf", n_ * es).at(0);
      }
      for (std::size_t i = 0; i < n_; ++i) put_moved(mine + i * es, r, 0, i);
      freeze();
      if (at_root)
        for (int q = 0; q < P; ++q)
          for (std::size_t i = 0; i < n_; ++i) put_moved(all->want_at((q * n_ + i) * es), q, 0, i);
      send_ = mine;
      recv_ = at_root ? all->at(0) : nullptr;
      std::snprintf(text, sizeof text, "sendcount=%zu%s", n_, gather ? (" root=" + std::to_string(root_)).c_str() : "");
      break;
    }
    case Kind::reduce_scatter: {
      n_ = block;
      Buffer &s = buffer("sendbuf", Pz * n_ * es);
      for (std::size_t j = 0; j < Pz * n_; ++j) put_input(s.at(j * es), r, j);
      Buffer *d = op_.in_place ? nullptr : &buffer("recvbuf", n_ * es);
      freeze();
      unsigned char *out = d ? d->want_at(0) : s.want_at(rz * n_ * es);
      for (std::size_t i = 0; i < n_; ++i) put_reduced(out + i * es, rz * n_ + i);
      if (!d) {  // in place: the other blocks are undefined afterwards
        s.undefined.push_back({0, rz * n_ * es});
        s.undefined.push_back({(rz + 1) * n_ * es, Pz * n_ * es});
      }
      send_ = s.at(0);
      recv_ = d ? d->at(0) : s.at(rz * n_ * es);
      std::snprintf(text, sizeof text, "recvcount=%zu", n_);
      break;
    }
    case Kind::alltoall: {
      n_ = op_.per_block ? whole / Pz : block / Pz;  // per peer
      Buffer &s = buffer("sendbuf", Pz * n_ * es);
      for (int p = 0; p < P; ++p)
        for (std::size_t i = 0; i < n_; ++i) put_moved(s.at((p * n_ + i) * es), r, p, i);
      Buffer &d = op_.in_place ? s : buffer("recvbuf", Pz * n_ * es);
      freeze();
      for (int q = 0; q < P; ++q)
        for (std::size_t i = 0; i < n_; ++i) put_moved(d.want_at((q * n_ + i) * es), q, r, i);
      send_ = s.at(0);
      recv_ = d.at(0);
      std::snprintf(text, sizeof text, "count=%zu per peer", n_);
      break;
    }
    case Kind::scatter: {
      n_ = block;
      const bool at_root = r == root_;
      Buffer *all = at_root ? &buffer("sendbuf", Pz * n_ * es) : nullptr;
      if (all)
        for (int q = 0; q < P; ++q)
          for (std::size_t i = 0; i < n_; ++i) put_moved(all->at((q * n_ + i) * es), root_, q, i);
      Buffer *part = op_.in_place && at_root ? nullptr : &buffer("recvbuf", n_ * es);
      freeze();
      if (part)
        for (std::size_t i = 0; i < n_; ++i) put_moved(part->want_at(i * es), root_, r, i);
      send_ = all ? all->at(0) : nullptr;
      recv_ = part ? part->at(0) : all->at(rz * n_ * es);
      std::snprintf(text, sizeof text, "recvcount=%zu root=%d", n_, root_);
      break;
    }
    case Kind::barrier: break;
    case Kind::send_recv: {
      n_ = whole;
      const std::vector<Message> all = messages(op_, P);
      const auto mine = std::find_if(all.begin(), all.end(), [&](const Message &m) { return m.from == r || m.to == r; });
      if (mine == all.end()) {
        involved_ = false;
        std::snprintf(text, sizeof text, "count=%zu, this rank unpaired", n_);
        break;
      }
      sends_first_ = mine->from == r;
      peer_ = sends_first_ ? mine->to : mine->from;
      message_buffers(peer_, peer_);
      std::snprintf(text, sizeof text, "count=%zu peer=%d tag=%d", n_, peer_, tag_);
      break;
    }
    case Kind::sendrecv: {
      n_ = whole;
      for (const Message &m : messages(op_, P)) {
        if (m.from == r) dest_ = m.to;
        if (m.to == r) source_ = m.from;
      }
      message_buffers(dest_, source_);
      std::snprintf(text, sizeof text, "count=%zu dest=%d source=%d tag=%d", n_, dest_, source_, tag_);
      break;
    }
    case Kind::allgatherv:
    case Kind::gatherv: {
      Rng shared(op_.seed ^ 0x7a11), mine(hash(op_.seed, rz, 0x1a, 0));
      counts_ = draw_counts(shared, Pz, block);
      const bool gather = op_.kind == Kind::gatherv, at_root = !gather || r == root_;
      n_ = counts_[rz];
      std::size_t extent = 0;
      displs_ = draw_displs(mine, counts_, &extent);
      Buffer *all = at_root ? &buffer("recvbuf", extent * es) : nullptr;
      unsigned char *from = op_.in_place && at_root ? all->at(displs_[rz] * es) : buffer("sendbuf", n_ * es).at(0);
      for (std::size_t i = 0; i < n_; ++i) put_moved(from + i * es, r, 0, i);
      freeze();
      if (at_root)
        for (std::size_t q = 0; q < Pz; ++q)
          for (std::size_t i = 0; i < counts_[q]; ++i) put_moved(all->want_at((displs_[q] + i) * es), int(q), 0, i);
      send_ = from;
      recv_ = at_root ? all->at(0) : nullptr;
      std::snprintf(text, sizeof text, "recvcounts=%s displs=%s%s", list(counts_).c_str(),
                    at_root ? list(displs_).c_str() : "(not the root)",
                    gather ? (" root=" + std::to_string(root_)).c_str() : "");
      if (!at_root) counts_.clear(), displs_.clear();  // NULL at the other ranks
      break;
    }
    case Kind::reduce_scatterv: {
      Rng shared(op_.seed ^ 0x7a12);
      counts_ = draw_counts(shared, Pz, block);
      const std::size_t total = sum(counts_);
      std::size_t before = 0;
      for (std::size_t q = 0; q < rz; ++q) before += counts_[q];
      n_ = counts_[rz];
      Buffer &s = buffer("sendbuf", total * es);
      for (std::size_t j = 0; j < total; ++j) put_input(s.at(j * es), r, j);
      Buffer *d = op_.in_place ? nullptr : &buffer("recvbuf", n_ * es);
      freeze();
      unsigned char *out = d ? d->want_at(0) : s.want_at(before * es);
      for (std::size_t i = 0; i < n_; ++i) put_reduced(out + i * es, before + i);
      if (!d) {
        s.undefined.push_back({0, before * es});
        s.undefined.push_back({(before + n_) * es, total * es});
      }
      send_ = s.at(0);
      recv_ = d ? d->at(0) : s.at(before * es);
      std::snprintf(text, sizeof text, "recvcounts=%s", list(counts_).c_str());
      break;
    }
    case Kind::alltoallv: {
      Rng shared(op_.seed ^ 0x7a13), mine(hash(op_.seed, rz, 0x1b, 0));
      // matrix[q][p]: what rank q sends to rank p, row by row.
      std::vector<std::size_t> matrix;
      for (std::size_t q = 0; q < Pz; ++q) {
        const std::vector<std::size_t> row = draw_counts(shared, Pz, block / Pz + 1);
        matrix.insert(matrix.end(), row.begin(), row.end());
      }
      counts_.resize(Pz);   // sendcounts
      counts2_.resize(Pz);  // recvcounts
      for (std::size_t p = 0; p < Pz; ++p) {
        counts_[p] = matrix[rz * Pz + p];
        counts2_[p] = matrix[p * Pz + rz];
      }
      std::size_t sext = 0, rext = 0;
      displs_ = draw_displs(mine, counts_, &sext);
      displs2_ = draw_displs(mine, counts2_, &rext);
      Buffer &s = buffer("sendbuf", (op_.in_place ? std::max(sext, rext) : sext) * es);
      for (std::size_t p = 0; p < Pz; ++p)
        for (std::size_t i = 0; i < counts_[p]; ++i) put_moved(s.at((displs_[p] + i) * es), r, int(p), i);
      Buffer &d = op_.in_place ? s : buffer("recvbuf", rext * es);
      freeze();
      for (std::size_t q = 0; q < Pz; ++q)
        for (std::size_t i = 0; i < counts2_[q]; ++i) put_moved(d.want_at((displs2_[q] + i) * es), int(q), r, i);
      send_ = s.at(0);
      recv_ = d.at(0);
      trace_count_ = sum(counts_);
      std::snprintf(text, sizeof text, "sendcounts=%s sdispls=%s recvcounts=%s rdispls=%s", list(counts_).c_str(),
                    list(displs_).c_str(), list(counts2_).c_str(), list(displs2_).c_str());
      break;
    }
    case Kind::scatterv: {
      Rng shared(op_.seed ^ 0x7a14), mine(hash(op_.seed, rz, 0x1c, 0));
      counts_ = draw_counts(shared, Pz, block);
      const bool at_root = r == root_;
      n_ = counts_[rz];
      std::size_t extent = 0;
      displs_ = draw_displs(mine, counts_, &extent);
      Buffer *all = at_root ? &buffer("sendbuf", extent * es) : nullptr;
      if (all)
        for (std::size_t q = 0; q < Pz; ++q)
          for (std::size_t i = 0; i < counts_[q]; ++i) put_moved(all->at((displs_[q] + i) * es), root_, int(q), i);
      Buffer *part = op_.in_place && at_root ? nullptr : &buffer("recvbuf", n_ * es);
      freeze();
      if (part)
        for (std::size_t i = 0; i < n_; ++i) put_moved(part->want_at(i * es), root_, r, i);
      send_ = all ? all->at(0) : nullptr;
      recv_ = part ? part->at(0) : all->at(displs_[rz] * es);
      std::snprintf(text, sizeof text, "sendcounts=%s displs=%s root=%d", list(counts_).c_str(),
                    at_root ? list(displs_).c_str() : "(not the root)", root_);
      if (!at_root) counts_.clear(), displs_.clear();
      break;
    }
    case Kind::unsupported: {
      n_ = 1;
      Buffer &s = buffer("sendbuf", es), &d = buffer("recvbuf", es);
      freeze();  // nothing may be written
      send_ = s.at(0);
      recv_ = d.at(0);
      std::snprintf(text, sizeof text, "count=1 (refused locally)");
      break;
    }
    case Kind::count: break;
  }
  if (op_.kind != Kind::alltoallv) trace_count_ = n_;
  what_ += std::string(": ") + text + (*text ? " " : "") + "(group of " + std::to_string(P) + ", rank " +
           std::to_string(r) + ")";
}

// The soak's call above 2 GiB: an in-place uint8 sum of more than INT_MAX
// elements. Element i of rank q is (3q + 7i + seed) mod 256, so the sum is
// known without an image of it.
void Call::prepare_big() {
  n_ = op_.bytes;
  Buffer &b = buffers_.emplace_back();
  b.name = "buf";
  b.bytes = n_;
  b.size = n_ + 2 * kGuard;
  b.own.resize(b.size);
  b.mem = b.own.data();
  const unsigned base = static_cast<unsigned>(3 * g_.rank + op_.seed % 256);
  for (std::size_t i = 0; i < n_; ++i) b.mem[kGuard + i] = static_cast<unsigned char>(base + 7 * i);
  send_ = recv_ = b.at(0);
  trace_count_ = n_;
  what_ += ": count=" + std::to_string(n_) + " (above 2 GiB)";
}

std::string Call::check_big() const {
  const Buffer &b = buffers_[0];
  const unsigned P = static_cast<unsigned>(g_.size);
  const unsigned ranks_part = 3 * P * (P - 1) / 2 + P * static_cast<unsigned>(op_.seed % 256);
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < n_; ++i) {
    const unsigned char want = static_cast<unsigned char>(ranks_part + P * 7 * i);
    if (b.mem[kGuard + i] != want && wrong++ == 0) first = i;
  }
  if (!wrong) return "";
  char text[256];
  std::snprintf(text, sizeof text, "buf: %zu elements differ, the first at %zu: expected %u, got %u", wrong, first,
                static_cast<unsigned char>(ranks_part + P * 7 * first), b.mem[kGuard + first]);
  return text;
}

bool Call::empty() const {
  switch (op_.kind) {
    case Kind::allreduce:
    case Kind::broadcast:
    case Kind::reduce:
    case Kind::allgather:
    case Kind::reduce_scatter:
    case Kind::alltoall:
    case Kind::gather:
    case Kind::scatter: return n_ == 0;
    default: return false;
  }
}

pg_status Call::expected_status() const { return op_.kind == Kind::unsupported ? PG_ERR_UNSUPPORTED : PG_OK; }

const char *Call::trace_name() const {
  switch (op_.kind) {
    case Kind::send_recv: return sends_first_ ? "send" : "recv";
    case Kind::unsupported: return "allreduce";
    default: return kind_name(op_.kind);
  }
}

pg_status Call::start() { return op_.nonblocking ? invoke_nonblocking() : invoke_blocking(); }

pg_status Call::invoke_blocking() {
  pg_strategy *s = g_.s;
  const pg_dtype t = op_.dtype;
  const pg_op o = op_.redop;
  const std::size_t *c1 = counts_.empty() ? nullptr : counts_.data(), *d1 = displs_.empty() ? nullptr : displs_.data();
  switch (op_.kind) {
    case Kind::allreduce: return pg_allreduce(s, send_, recv_, n_, t, o);
    case Kind::broadcast: return pg_broadcast(s, recv_, n_, t, root_);
    case Kind::reduce: return pg_reduce(s, send_, recv_, n_, t, o, root_);
    case Kind::allgather: return pg_allgather(s, send_, recv_, n_, t);
    case Kind::reduce_scatter: return pg_reduce_scatter(s, send_, recv_, n_, t, o);
    case Kind::alltoall: return pg_alltoall(s, send_, recv_, n_, t);
    case Kind::gather: return pg_gather(s, send_, recv_, n_, t, root_);
    case Kind::scatter: return pg_scatter(s, send_, recv_, n_, t, root_);
    case Kind::barrier: return pg_barrier(s);
    case Kind::send_recv: {
      if (!involved_) return PG_OK;
      pg_status st = PG_OK;
      if (sends_first_) {
        st = pg_send(s, send_, n_, t, peer_, tag_);
        if (st == PG_OK) st = pg_recv(s, recv_, n_, t, received_from(), tag_);
      } else {
        st = pg_recv(s, recv_, n_, t, received_from(), tag_);
        if (st == PG_OK) st = pg_send(s, send_, n_, t, peer_, tag_);
      }
      return st;
    }
    case Kind::sendrecv: return pg_sendrecv(s, send_, n_, dest_, recv_, n_, source_, t, tag_);
    case Kind::allgatherv: return pg_allgatherv(s, send_, n_, recv_, c1, d1, t);
    case Kind::reduce_scatterv: return pg_reduce_scatterv(s, send_, recv_, c1, t, o);
    case Kind::alltoallv:
      return pg_alltoallv(s, send_, c1, d1, recv_, counts2_.data(), displs2_.data(), t);
    case Kind::gatherv: return pg_gatherv(s, send_, n_, recv_, c1, d1, t, root_);
    case Kind::scatterv: return pg_scatterv(s, send_, c1, d1, recv_, n_, t, root_);
    case Kind::unsupported: return pg_allreduce(s, send_, recv_, n_, t, o);
    case Kind::count: break;
  }
  return PG_ERR_INTERNAL;
}

pg_status Call::invoke_nonblocking() {
  pg_strategy *s = g_.s;
  const pg_dtype t = op_.dtype;
  const pg_op o = op_.redop;
  const std::size_t *c1 = counts_.empty() ? nullptr : counts_.data(), *d1 = displs_.empty() ? nullptr : displs_.data();
  pg_work *w = nullptr;
  pg_status st = PG_ERR_INTERNAL;
  switch (op_.kind) {
    case Kind::allreduce: st = pg_iallreduce(s, send_, recv_, n_, t, o, &w); break;
    case Kind::broadcast: st = pg_ibroadcast(s, recv_, n_, t, root_, &w); break;
    case Kind::reduce: st = pg_ireduce(s, send_, recv_, n_, t, o, root_, &w); break;
    case Kind::allgather: st = pg_iallgather(s, send_, recv_, n_, t, &w); break;
    case Kind::reduce_scatter: st = pg_ireduce_scatter(s, send_, recv_, n_, t, o, &w); break;
    case Kind::alltoall: st = pg_ialltoall(s, send_, recv_, n_, t, &w); break;
    case Kind::gather: st = pg_igather(s, send_, recv_, n_, t, root_, &w); break;
    case Kind::scatter: st = pg_iscatter(s, send_, recv_, n_, t, root_, &w); break;
    case Kind::barrier: st = pg_ibarrier(s, &w); break;
    case Kind::send_recv: {
      if (!involved_) return PG_OK;
      // Both directions at once, receive or send first as the pair's order says.
      pg_work *a = nullptr, *b = nullptr;
      if (sends_first_) {
        st = pg_isend(s, send_, n_, t, peer_, tag_, &a);
        if (st == PG_OK) st = pg_irecv(s, recv_, n_, t, received_from(), tag_, &b);
        receive_ = b;
      } else {
        st = pg_irecv(s, recv_, n_, t, received_from(), tag_, &a);
        if (st == PG_OK) st = pg_isend(s, send_, n_, t, peer_, tag_, &b);
        receive_ = a;
      }
      if (a) works_.push_back(a);
      if (b) works_.push_back(b);
      return st;
    }
    case Kind::allgatherv: st = pg_iallgatherv(s, send_, n_, recv_, c1, d1, t, &w); break;
    case Kind::reduce_scatterv: st = pg_ireduce_scatterv(s, send_, recv_, c1, t, o, &w); break;
    case Kind::alltoallv:
      st = pg_ialltoallv(s, send_, c1, d1, recv_, counts2_.data(), displs2_.data(), t, &w);
      break;
    case Kind::gatherv: st = pg_igatherv(s, send_, n_, recv_, c1, d1, t, root_, &w); break;
    case Kind::scatterv: st = pg_iscatterv(s, send_, c1, d1, recv_, n_, t, root_, &w); break;
    default: break;
  }
  if (w) works_.push_back(w);
  // The library copied the count and displacement arrays: scribble over them.
  for (auto *a : {&counts_, &displs_, &counts2_, &displs2_})
    for (std::size_t &x : *a) x = 0xdeadbeef;
  return st;
}

std::string Call::check_source(pg_work *w, std::size_t chunk) const {
  if (!op_.any_source || w != receive_) return "";
  int from = -1;
  const pg_status st = pg_work_source(w, &from);
  if ((st == PG_OK && from == peer_) || (st == PG_ERR_STATE && chunk > 0 && n_ > chunk)) return "";
  char text[512];
  std::snprintf(text, sizeof text, "pg_work_source of the receive from any source returned %s (rank %d), expected rank %d: %s",
                pg_status_name(st), from, peer_, st == PG_OK ? "" : pg_last_error());
  return text;
}

std::string Call::check() const {
  if (op_.big) return check_big();
  std::string out;
  for (const Buffer &b : buffers_) {
    std::size_t wrong = 0, first = 0;
    for (std::size_t k = 0; k < b.size; ++k) {
      if (b.mem[k] == b.want[k]) continue;
      if (k >= kGuard && k < kGuard + b.bytes) {
        const std::size_t at = k - kGuard;
        bool undefined = false;
        for (const auto &range : b.undefined) undefined = undefined || (at >= range.first && at < range.second);
        if (undefined) continue;
      }
      if (wrong++ == 0) first = k;
    }
    if (!wrong) continue;
    char text[512];
    if (first < kGuard || first >= kGuard + b.bytes) {
      std::snprintf(text, sizeof text, "%s: written outside the buffer (byte %lld of %zu; %zu bytes differ)", b.name,
                    static_cast<long long>(first) - static_cast<long long>(kGuard), b.bytes, wrong);
    } else {
      const std::size_t element = (first - kGuard) / es_, at = kGuard + element * es_;
      std::snprintf(text, sizeof text, "%s element %zu of %zu differs: expected %s, got %s (%zu bytes differ)", b.name,
                    element, b.bytes / es_, element_text(op_.dtype, b.want.data() + at).c_str(),
                    element_text(op_.dtype, b.mem + at).c_str(), wrong);
    }
    out += (out.empty() ? "" : "; ") + std::string(text);
  }
  return out;
}

}  // namespace pgr
