// The conformance suite, run for every backend and layout (tests/mpi/CMakeLists.txt):
// every collective for every dtype x op the capability table allows (and the
// refusal of those it does not), counts 0, 1, odd, P*k+1 and larger, in place
// and out of place, checked bit for bit against values computed here; MIN/MAX
// over NaN and signed zeros; sums of inexact floats bit-identical on every rank.
//
//   test_collectives BACKEND [quick] [mem-alloc | mem-alloc-even] [cuda | cuda:N] [nccl-own-hosts]
// BACKEND "-" means the default. "quick" narrows dtypes and counts (for runs
// with a tiny chunk or slice size); "mem-alloc" takes the send and receive
// buffers from pg_mem_alloc, "mem-alloc-even" on even ranks only (the odd
// ones use the heap: a call that mixes both). "cuda" runs every check on device buffers: the
// test fills and reads host copies, which go up before each call and come
// back after it; without a usable GPU the test is skipped (exit 77).
// "nccl-own-hosts" gives each rank an NCCL host of its own (NCCL_HOSTID), so
// that ranks sharing one GPU (virtual nodes on a one-GPU machine) can still
// form NCCL communicators, over NCCL's network transport.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pg_backend.h"  // pg_reduce_local: the reference combines as the library does
#include "pg_test.h"
#include "pg_test_device.h"
#include "util/dtype.h"  // the capability table: which dtype x op pairs exist
#include "util/half.h"

namespace {

struct Options {
  const char *backend = nullptr;
  const char *device = "cpu";
  bool quick = false;
  bool mem_alloc = false;
  bool odd_ranks_on_heap = false;  // mem-alloc-even
  bool own_hosts = false;
  bool cuda() const { return std::strncmp(device, "cuda", 4) == 0; }
};

// What the strategy's device serves: the capability table, less the bitwise
// reductions on CUDA, which NCCL does not have (docs/nccl.md).
bool serves(const Options &options, pg_dtype dtype, pg_op op) {
  const bool bitwise = op == PG_BAND || op == PG_BOR || op == PG_BXOR;
  return pg::op_supported(dtype, op) && !(options.cuda() && bitwise);
}

// What one check is about, for its failure message.
struct Case {
  const char *what;
  pg_dtype dtype;
  pg_op op;
  std::size_t count;
  bool in_place;
};

void expect_ok(pg_status st, const Case &c) {
  PG_TEST_TRUE(st == PG_OK, "%s %s op=%s count=%zu %s: %s: %s", c.what, pg_dtype_name(c.dtype),
               pg_op_name(c.op), c.count, c.in_place ? "in place" : "out of place", pg_status_name(st),
               pg_last_error());
}

void expect_bytes(const void *got, const void *want, std::size_t bytes, const Case &c) {
  PG_TEST_TRUE(std::memcmp(got, want, bytes) == 0, "%s %s op=%s count=%zu %s: wrong result", c.what,
               pg_dtype_name(c.dtype), pg_op_name(c.op), c.count, c.in_place ? "in place" : "out of place");
}

// Element i of `buf` as dtype, from an exact small integer (PG_AVG: divided by
// `ranks` as the library does: the sum rounded to the type, divided in the
// type's arithmetic).
void store(void *buf, std::size_t i, pg_dtype dtype, uint64_t v, int avg_ranks = 0) {
  char *p = static_cast<char *>(buf) + i * pg_dtype_size(dtype);
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  const bool avg = avg_ranks > 0;
  switch (dtype) {
    case PG_INT8: put(int8_t(v)); break;
    case PG_UINT8: put(uint8_t(v)); break;
    case PG_INT32: put(int32_t(v)); break;
    case PG_UINT32: put(uint32_t(v)); break;
    case PG_INT64: put(int64_t(v)); break;
    case PG_UINT64: put(uint64_t(v)); break;
    case PG_FLOAT16: {
      uint16_t h = pg::float_to_half(float(v));
      put(avg ? pg::float_to_half(pg::half_to_float(h) / float(avg_ranks)) : h);
      break;
    }
    case PG_BFLOAT16: {
      uint16_t b = pg::float_to_bf16(float(v));
      put(avg ? pg::float_to_bf16(pg::bf16_to_float(b) / float(avg_ranks)) : b);
      break;
    }
    case PG_FLOAT32: put(avg ? float(v) / float(avg_ranks) : float(v)); break;
    case PG_FLOAT64: put(avg ? double(v) / double(avg_ranks) : double(v)); break;
  }
}

// A floating value of any floating dtype.
void store_real(void *buf, std::size_t i, pg_dtype dtype, double x) {
  char *p = static_cast<char *>(buf) + i * pg_dtype_size(dtype);
  if (dtype == PG_FLOAT16) { uint16_t h = pg::float_to_half(float(x)); std::memcpy(p, &h, 2); }
  else if (dtype == PG_BFLOAT16) { uint16_t b = pg::float_to_bf16(float(x)); std::memcpy(p, &b, 2); }
  else if (dtype == PG_FLOAT32) { float f = float(x); std::memcpy(p, &f, 4); }
  else std::memcpy(p, &x, 8);
}

double load_real(const void *buf, std::size_t i, pg_dtype dtype) {
  const char *p = static_cast<const char *>(buf) + i * pg_dtype_size(dtype);
  if (dtype == PG_FLOAT16) { uint16_t h; std::memcpy(&h, p, 2); return pg::half_to_float(h); }
  if (dtype == PG_BFLOAT16) { uint16_t b; std::memcpy(&b, p, 2); return pg::bf16_to_float(b); }
  if (dtype == PG_FLOAT32) { float f; std::memcpy(&f, p, 4); return f; }
  double d;
  std::memcpy(&d, p, 8);
  return d;
}

class Suite {
 public:
  Suite(pg_strategy *s, const Options &options)
      : s_(s), options_(options), P_(pg_strategy_size(s)), R_(pg_strategy_rank(s)) {}
  ~Suite() {
    for (void *a : arenas_) pg_mem_free(s_, a);
  }
  Suite(const Suite &) = delete;
  Suite &operator=(const Suite &) = delete;

  bool init(std::size_t max_bytes) {
    if (!options_.mem_alloc) return true;
    // Two arenas, allocated once (pg_mem_alloc is collective): sends and receives.
    for (int i = 0; i < 2; ++i) {
      void *p = nullptr;
      pg_status st = pg_mem_alloc(s_, max_bytes, &p);
      PG_TEST_STATUS(st, PG_OK);
      if (st != PG_OK) return false;
      arenas_.push_back(p);
      arena_bytes_ = max_bytes;
    }
    return true;
  }

  void run() {
    const std::vector<std::size_t> counts =
        options_.quick ? std::vector<std::size_t>{1, std::size_t(2 * P_ + 1), 50}
                       : std::vector<std::size_t>{0, 1, std::size_t(3 * P_ + 1), 1001};
    for (int d = 0; d < pg::kDtypeCount; ++d) {
      const pg_dtype dtype = pg_dtype(d);
      if (options_.quick && !(d == PG_INT8 || d == PG_UINT64 || d == PG_FLOAT16 || d == PG_BFLOAT16 || d == PG_FLOAT64))
        continue;
      for (int o = 0; o < pg::kOpCount; ++o) {
        const pg_op op = pg_op(o);
        if (!serves(options_, dtype, op)) {
          // The capability table's refusals: a status and a message, nothing run.
          char x[8] = {0}, y[8];
          PG_TEST_STATUS(pg_allreduce(s_, x, y, 1, dtype, op), PG_ERR_UNSUPPORTED);
          continue;
        }
        for (std::size_t n : counts)
          for (bool in_place : {false, true})
            if (!in_place || n == counts.back()) reductions(dtype, op, n, in_place);
      }
      for (std::size_t n : counts)
        for (bool in_place : {false, true}) movement(dtype, n, in_place);
    }
    if (options_.mem_alloc) large_reductions();
    uneven_all(options_.quick);
    random_reductions(options_.quick ? 50 : 1001);
    symmetry();
    unsigned_extremes();
    identical(options_.quick ? 40 : 3001);
    pg_test_step("barrier");
    PG_TEST_STATUS(pg_barrier(s_), PG_OK);
  }

  // Buffers of kLargeCount float32 or int32: each rank's block of them
  // outgrows an L1 data cache, which is where fairring's fast path starts to
  // read pg_mem_alloc inputs in place.
  static constexpr std::size_t kLargeCount = 60001;

 private:
  void large_reductions() {
    for (bool in_place : {false, true}) {
      reductions(PG_FLOAT32, PG_SUM, kLargeCount, in_place);
      reductions(PG_INT32, PG_MAX, kLargeCount, in_place);
    }
  }

  // On CUDA, the device copy of a host buffer, which the library gets
  // instead (on()). Every live copy goes up before a call and comes back
  // after it (call()).
  struct Mirror {
    Suite *suite;
    char *host;
    std::size_t bytes;
    char *device;  // nullptr once a later buffer took over its arena
    bool owned;    // device memory of its own, not a pg_mem_alloc arena
    Mirror(const Mirror &) = delete;
    Mirror &operator=(const Mirror &) = delete;
    ~Mirror() {
      auto &live = suite->mirrors_;
      live.erase(std::remove(live.begin(), live.end(), this), live.end());
      if (owned) pg_test_device_free(device);
    }
  };

  // A buffer for one call: the send or receive arena with mem-alloc, else the
  // heap. Filled with a marker so that unwritten bytes show. On CUDA `data`
  // is the host copy and `mirror` the device buffer.
  struct Buffer {
    std::vector<char> heap;
    char *data = nullptr;
    std::shared_ptr<Mirror> mirror;
  };

  Buffer make(std::size_t bytes, int arena) {
    Buffer b;
    char *arena_at = nullptr;
    const bool on_heap = options_.odd_ranks_on_heap && R_ % 2 == 1;
    if (options_.mem_alloc && !on_heap && arena >= 0 && bytes + 1 <= arena_bytes_)
      arena_at = static_cast<char *>(arenas_[static_cast<std::size_t>(arena)]);
    if (arena_at && !options_.cuda()) {
      b.data = arena_at;
    } else {
      b.heap.assign(bytes + 1, 0);  // +1: never empty
      b.data = b.heap.data();
    }
    std::memset(b.data, 0x5a, bytes + 1);
    if (options_.cuda()) b.mirror = mirror(b.data, bytes + 1, arena_at);
    return b;
  }
  Buffer sendbuf(std::size_t bytes) { return make(bytes, 0); }
  Buffer recvbuf(std::size_t bytes) { return make(bytes, 1); }
  // A buffer the library gets that is not an arena (on the heap, or on the device).
  Buffer buffer(std::size_t bytes) { return make(bytes, -1); }
  // Expected values: only the test reads them.
  static Buffer local(std::size_t bytes) {
    Buffer b;
    b.heap.assign(bytes + 1, 0x5a);
    b.data = b.heap.data();
    return b;
  }

  // A device copy of [host, host + bytes): in `arena` (a pg_mem_alloc buffer,
  // which the older buffers on it give up), else newly allocated.
  std::shared_ptr<Mirror> mirror(char *host, std::size_t bytes, char *arena) {
    if (arena) {
      for (Mirror *m : mirrors_)
        if (m->device == arena) m->device = nullptr;
      mirrors_.erase(std::remove_if(mirrors_.begin(), mirrors_.end(), [](Mirror *m) { return !m->device; }),
                     mirrors_.end());
    }
    char *device = arena ? arena : static_cast<char *>(pg_test_device_alloc(bytes));
    auto m = std::shared_ptr<Mirror>(new Mirror{this, host, bytes, device, arena == nullptr});
    if (device) mirrors_.push_back(m.get());
    return m;
  }

  // What the library gets for the host address p: itself on CPU, its place in
  // the device copy on CUDA.
  template <typename T>
  T *on(T *p) const {
    if (!options_.cuda() || !p) return p;
    const char *c = reinterpret_cast<const char *>(p);
    for (const Mirror *m : mirrors_)
      if (c >= m->host && c <= m->host + m->bytes)
        return reinterpret_cast<T *>(m->device + (c - m->host));
    PG_TEST_TRUE(false, "the test handed the library a buffer without a device copy");
    return p;
  }

  // Runs one library call; on CUDA, with every live buffer copied up before and back after.
  template <typename Call>
  pg_status call(Call library_call) {
    if (!options_.cuda()) return library_call();
    for (const Mirror *m : mirrors_) pg_test_device_copy(m->device, m->host, m->bytes);
    const pg_status st = library_call();
    for (const Mirror *m : mirrors_) pg_test_device_copy(m->host, m->device, m->bytes);
    return st;
  }

  // Small values, so sums, products and bitwise results are exact in every dtype.
  static uint64_t input(pg_op op, int rank, std::size_t i) {
    switch (op) {
      case PG_PROD: return 1 + (rank + i) % 2;
      case PG_BAND:
      case PG_BOR:
      case PG_BXOR: return (uint64_t(1) << ((rank + i) % 6)) | 1u;
      default: return 1 + (rank * 7 + i) % 5;
    }
  }

  uint64_t combined(pg_op op, std::size_t i) const {
    uint64_t r = input(op, 0, i);
    for (int q = 1; q < P_; ++q) {
      const uint64_t v = input(op, q, i);
      switch (op) {
        case PG_PROD: r *= v; break;
        case PG_MIN: r = v < r ? v : r; break;
        case PG_MAX: r = v > r ? v : r; break;
        case PG_BAND: r &= v; break;
        case PG_BOR: r |= v; break;
        case PG_BXOR: r ^= v; break;
        default: r += v; break;
      }
    }
    return r;
  }

  // Element i of rank q's contribution to the data-movement collectives.
  static uint64_t code(int q, std::size_t i) { return (q * 13 + i) % 97; }

  void reductions(pg_dtype dtype, pg_op op, std::size_t n, bool in_place) {
    const std::size_t es = pg_dtype_size(dtype), bytes = n * es;
    const int avg = op == PG_AVG ? P_ : 0;
    const int root = P_ - 1;
    pg_test_step("reductions %s %s n=%zu", pg_dtype_name(dtype), pg_op_name(op), n);

    Buffer want = local(bytes);
    for (std::size_t i = 0; i < n; ++i) store(want.data, i, dtype, combined(op, i), avg);

    Buffer send = sendbuf(bytes), recv = recvbuf(bytes);
    for (std::size_t i = 0; i < n; ++i) store(send.data, i, dtype, input(op, R_, i));
    char *out = in_place ? send.data : recv.data;
    expect_ok(call([&] { return pg_allreduce(s_, on(send.data), on(out), n, dtype, op); }),
              {"allreduce", dtype, op, n, in_place});
    expect_bytes(out, want.data, bytes, {"allreduce", dtype, op, n, in_place});

    send = sendbuf(bytes);
    recv = recvbuf(bytes);
    for (std::size_t i = 0; i < n; ++i) store(send.data, i, dtype, input(op, R_, i));
    out = in_place && R_ == root ? send.data : recv.data;
    expect_ok(call([&] { return pg_reduce(s_, on(send.data), on(out), n, dtype, op, root); }),
              {"reduce", dtype, op, n, in_place});
    if (R_ == root) expect_bytes(out, want.data, bytes, {"reduce", dtype, op, n, in_place});

    // reduce_scatter: block b of the reduction lands on rank b.
    Buffer all = sendbuf(bytes * P_), block = local(bytes);
    recv = recvbuf(bytes);
    for (std::size_t i = 0; i < n * P_; ++i) store(all.data, i, dtype, input(op, R_, i));
    for (std::size_t i = 0; i < n; ++i) store(block.data, i, dtype, combined(op, R_ * n + i), avg);
    out = in_place ? all.data + R_ * bytes : recv.data;
    expect_ok(call([&] { return pg_reduce_scatter(s_, on(all.data), on(out), n, dtype, op); }),
              {"reduce_scatter", dtype, op, n, in_place});
    expect_bytes(out, block.data, bytes, {"reduce_scatter", dtype, op, n, in_place});
  }

  void movement(pg_dtype dtype, std::size_t n, bool in_place) {
    const std::size_t es = pg_dtype_size(dtype), bytes = n * es;
    const int root = P_ - 1;
    auto c = [&](const char *what) { return Case{what, dtype, PG_SUM, n, in_place}; };
    pg_test_step("movement %s n=%zu", pg_dtype_name(dtype), n);

    // broadcast from the last rank
    Buffer buf = recvbuf(bytes), want = local(bytes);
    for (std::size_t i = 0; i < n; ++i) {
      store(buf.data, i, dtype, R_ == root ? code(root, i) : 0);
      store(want.data, i, dtype, code(root, i));
    }
    expect_ok(call([&] { return pg_broadcast(s_, on(buf.data), n, dtype, root); }), c("broadcast"));
    expect_bytes(buf.data, want.data, bytes, c("broadcast"));

    // allgather
    Buffer mine = buffer(bytes), all_want = local(bytes * P_);
    for (std::size_t i = 0; i < n; ++i) store(mine.data, i, dtype, code(R_, i));
    for (int q = 0; q < P_; ++q)
      for (std::size_t i = 0; i < n; ++i) store(all_want.data, q * n + i, dtype, code(q, i));
    Buffer send = sendbuf(bytes), all = recvbuf(bytes * P_);
    std::memcpy(send.data, mine.data, bytes);
    char *from = in_place ? all.data + R_ * bytes : send.data;
    if (in_place) std::memcpy(from, mine.data, bytes);
    expect_ok(call([&] { return pg_allgather(s_, on(from), on(all.data), n, dtype); }), c("allgather"));
    expect_bytes(all.data, all_want.data, bytes * P_, c("allgather"));

    // gather to the last rank
    send = sendbuf(bytes);
    all = recvbuf(bytes * P_);
    std::memcpy(send.data, mine.data, bytes);
    from = in_place && R_ == root ? all.data + R_ * bytes : send.data;
    if (from != send.data) std::memcpy(from, mine.data, bytes);
    expect_ok(call([&] { return pg_gather(s_, on(from), on(all.data), n, dtype, root); }), c("gather"));
    if (R_ == root) expect_bytes(all.data, all_want.data, bytes * P_, c("gather"));

    // scatter from the last rank: block q goes to rank q
    Buffer blocks = sendbuf(bytes * P_), part = recvbuf(bytes);
    std::memcpy(blocks.data, all_want.data, bytes * P_);
    char *to = in_place && R_ == root ? blocks.data + R_ * bytes : part.data;
    expect_ok(call([&] { return pg_scatter(s_, R_ == root ? on(blocks.data) : nullptr, on(to), n, dtype, root); }),
              c("scatter"));
    expect_bytes(to, mine.data, bytes, c("scatter"));

    // alltoall: block q of rank r goes to block r of rank q
    Buffer a_send = sendbuf(bytes * P_), a_recv = recvbuf(bytes * P_), a_want = local(bytes * P_);
    for (int q = 0; q < P_; ++q)
      for (std::size_t i = 0; i < n; ++i) {
        store(a_send.data, q * n + i, dtype, code(R_ * P_ + q, i));
        store(a_want.data, q * n + i, dtype, code(q * P_ + R_, i));
      }
    char *a_out = in_place ? a_send.data : a_recv.data;
    expect_ok(call([&] { return pg_alltoall(s_, on(a_send.data), on(a_out), n, dtype); }), c("alltoall"));
    expect_bytes(a_out, a_want.data, bytes * P_, c("alltoall"));

    // sendrecv around the ring, and send/recv between pairs
    const int next = (R_ + 1) % P_, prev = (R_ + P_ - 1) % P_;
    Buffer got = buffer(bytes), ring_want = local(bytes);
    for (std::size_t i = 0; i < n; ++i) store(ring_want.data, i, dtype, code(prev, i));
    expect_ok(call([&] { return pg_sendrecv(s_, on(mine.data), n, next, on(got.data), n, prev, dtype, 7); }),
              c("sendrecv"));
    expect_bytes(got.data, ring_want.data, bytes, c("sendrecv"));
    if (P_ > 1 && !(P_ % 2 == 1 && R_ == P_ - 1)) {
      const int peer = R_ % 2 == 0 ? R_ + 1 : R_ - 1;
      Buffer pair_want = local(bytes);
      for (std::size_t i = 0; i < n; ++i) store(pair_want.data, i, dtype, code(peer, i));
      if (R_ % 2 == 0) {
        expect_ok(call([&] { return pg_send(s_, on(mine.data), n, dtype, peer, 3); }), c("send"));
        expect_ok(call([&] { return pg_recv(s_, on(got.data), n, dtype, peer, 4); }), c("recv"));
      } else {
        expect_ok(call([&] { return pg_recv(s_, on(got.data), n, dtype, peer, 3); }), c("recv"));
        expect_ok(call([&] { return pg_send(s_, on(mine.data), n, dtype, peer, 4); }), c("send"));
      }
      expect_bytes(got.data, pair_want.data, bytes, c("send/recv"));
    }
  }

  // --- the uneven (v) collectives ---------------------------------------------

  // The elements rank q sends to rank r in one of the patterns, for a base
  // size n: the same matrix on every rank.
  // kGrowing (rank q's block n*(q+1), each longer than the blocks before it)
  // runs apart from the loops, large: see uneven_all.
  enum Pattern { kMixed, kSilent, kOnePeer, kRandom, kPatterns, kGrowing = kPatterns };
  static const char *pattern_name(int pattern) {
    static const char *const names[] = {"counts with zeros", "a rank with nothing", "everything to one peer",
                                        "random counts", "growing blocks"};
    return names[pattern];
  }
  std::vector<std::size_t> matrix(int pattern, std::size_t n) const {
    const std::size_t P = static_cast<std::size_t>(P_);
    std::vector<std::size_t> c(P * P);
    std::mt19937_64 random(4242 + pattern * 7 + n);  // seeded: the same matrix on every rank
    for (std::size_t q = 0; q < P; ++q)
      for (std::size_t r = 0; r < P; ++r) {
        std::size_t &x = c[q * P + r];
        switch (pattern) {
          case kMixed: x = ((q * 5 + r * 3) % 4) * n / 3; break;         // a quarter are zero
          case kSilent: x = q == P - 1 ? 0 : n + r; break;              // the last rank sends nothing
          case kOnePeer: x = q == 0 ? (r == P - 1 ? n * P : 0) : n / 2 + q; break;  // rank 0: all to the last
          case kGrowing: x = n * (P - r); break;                         // block_of(q) = n*(q+1)
          default: x = random() % (2 * n + 1); break;
        }
      }
    return c;
  }
  // The block rank q contributes to allgatherv, gatherv and scatterv, and the
  // block reduce_scatterv leaves on rank q: a column of the matrix (the last
  // rank's is empty under kSilent; rank 0's holds n*P under kOnePeer).
  std::size_t block_of(const std::vector<std::size_t> &c, int q) const {
    return c[static_cast<std::size_t>(q) * P_ + static_cast<std::size_t>(P_ - 1 - q)];
  }
  // Displacements with gaps of one or two elements, blocks in reverse order
  // (`reverse`) or in rank order; *extent: the elements the buffer needs.
  static std::vector<std::size_t> displacements(const std::vector<std::size_t> &counts, bool reverse,
                                                std::size_t *extent) {
    const std::size_t P = counts.size();
    std::vector<std::size_t> d(P);
    std::size_t at = 1;
    for (std::size_t k = 0; k < P; ++k) {
      const std::size_t q = reverse ? P - 1 - k : k;
      d[q] = at;
      at += counts[q] + 1 + q % 2;
    }
    *extent = at;
    return d;
  }

  // Element i of the block rank q sends to rank r (allgatherv and friends: r = 0).
  static uint64_t vcode(int q, int r, std::size_t i) { return (q * 31 + r * 7 + i) % 97; }

  void uneven_all(bool quick) {
    const std::vector<std::size_t> sizes = quick ? std::vector<std::size_t>{2, 13} : std::vector<std::size_t>{1, 7, 300};
    for (int d = 0; d < pg::kDtypeCount; ++d) {
      const pg_dtype dtype = pg_dtype(d);
      if (quick && !(d == PG_INT8 || d == PG_FLOAT16 || d == PG_FLOAT64)) continue;
      for (int pattern = 0; pattern < kPatterns; ++pattern)
        for (std::size_t n : sizes)
          for (int mode = 0; mode < 3; ++mode) {  // out of place, in place, nonblocking
            if (mode == 1 && n != sizes.back()) continue;
            uneven_movement(dtype, pattern, n, mode == 1, mode == 2);
          }
      for (int o = 0; o < pg::kOpCount; ++o) {
        const pg_op op = pg_op(o);
        if (!serves(options_, dtype, op)) continue;
        for (int pattern = 0; pattern < kPatterns; ++pattern)
          for (int mode = 0; mode < 3; ++mode)
            if (pattern == kRandom || mode == 0) uneven_reduction(dtype, op, pattern, sizes.back(), mode == 1, mode == 2);
      }
    }
    // In place, blocks longer than their displacements, over 512 KiB in all
    // (where MPICH's reduce_scatter moves the blocks with memcpy and aborted on
    // the overlap: docs/known-issues.md). Not in the quick runs: under a tiny
    // PGS_MPI_CHUNK_COUNT it would take hundreds of thousands of rounds.
    if (quick) return;
    for (int mode = 1; mode < 3; ++mode)
      uneven_reduction(PG_FLOAT32, PG_SUM, kGrowing, std::size_t(1) << 17, true, mode == 2);
  }

  // A nonblocking v-collective's work, waited for after the count arrays were
  // scribbled over (the library must have copied them), then freed.
  template <typename Start>
  static pg_status settle(Start start, std::initializer_list<std::vector<std::size_t> *> arrays) {
    pg_work *w = nullptr;
    const pg_status started = start(&w);
    if (started != PG_OK) return started;
    for (auto *a : arrays)
      for (std::size_t &x : *a) x = 0xdeadbeef;
    const pg_status st = pg_work_wait(w, -1);
    pg_work_free(w);
    return st;
  }

  void uneven_movement(pg_dtype dtype, int pattern, std::size_t n, bool in_place, bool nonblocking) {
    const std::size_t es = pg_dtype_size(dtype), P = static_cast<std::size_t>(P_), me = static_cast<std::size_t>(R_);
    const int root = pattern % P_;
    pg_test_step("uneven %s %s n=%zu%s%s", pg_dtype_name(dtype), pattern_name(pattern), n, in_place ? " in place" : "",
                 nonblocking ? " nonblocking" : "");
    char what[160];
    auto c = [&](const char *op) {
      std::snprintf(what, sizeof what, "%s (%s)%s", op, pattern_name(pattern), nonblocking ? " nonblocking" : "");
      return Case{what, dtype, PG_SUM, n, in_place};
    };
    const std::vector<std::size_t> m = matrix(pattern, n);
    std::vector<std::size_t> blocks(P);
    for (std::size_t q = 0; q < P; ++q) blocks[q] = block_of(m, static_cast<int>(q));

    {  // allgatherv: block q lands at displs[q] (reverse order, gaps) on every rank
      std::size_t extent = 0;
      std::vector<std::size_t> counts = blocks, displs = displacements(counts, true, &extent);
      Buffer recv = recvbuf(extent * es), want = local(extent * es), mine = buffer(blocks[me] * es);
      std::memset(want.data, 0x5a, extent * es);
      for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < counts[q]; ++i) store(want.data, displs[q] + i, dtype, vcode(int(q), 0, i));
      for (std::size_t i = 0; i < blocks[me]; ++i) store(mine.data, i, dtype, vcode(R_, 0, i));
      char *from = mine.data;
      if (in_place) {
        from = recv.data + displs[me] * es;
        std::memcpy(from, mine.data, blocks[me] * es);
      }
      pg_status st = call([&] {
        if (!nonblocking) return pg_allgatherv(s_, on(from), blocks[me], on(recv.data), counts.data(), displs.data(), dtype);
        return settle([&](pg_work **w) {
          return pg_iallgatherv(s_, on(from), blocks[me], on(recv.data), counts.data(), displs.data(), dtype, w);
        }, {&counts, &displs});
      });
      expect_ok(st, c("allgatherv"));
      expect_bytes(recv.data, want.data, extent * es, c("allgatherv"));
    }

    {  // alltoallv: block r of rank q (m[q][r] elements) goes to rank r
      std::size_t sextent = 0, rextent = 0;
      std::vector<std::size_t> sc(P), rc(P);
      for (std::size_t r = 0; r < P; ++r) {
        sc[r] = m[me * P + r];
        rc[r] = m[r * P + me];
      }
      std::vector<std::size_t> sd = displacements(sc, false, &sextent), rd = displacements(rc, true, &rextent);
      const std::size_t extent = in_place ? std::max(sextent, rextent) : rextent;
      Buffer send = sendbuf(sextent * es), recv = recvbuf(extent * es), want = local(extent * es);
      Buffer &holder = in_place ? recv : send;
      for (std::size_t r = 0; r < P; ++r)
        for (std::size_t i = 0; i < sc[r]; ++i) store(holder.data, sd[r] + i, dtype, vcode(R_, int(r), i));
      if (in_place)
        std::memcpy(want.data, holder.data, extent * es);  // what is outside the receive blocks stays
      else
        std::memset(want.data, 0x5a, extent * es);
      for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < rc[q]; ++i) store(want.data, rd[q] + i, dtype, vcode(int(q), R_, i));
      pg_status st = call([&] {
        const void *sb = on(holder.data);
        if (!nonblocking) return pg_alltoallv(s_, sb, sc.data(), sd.data(), on(recv.data), rc.data(), rd.data(), dtype);
        return settle([&](pg_work **w) {
          return pg_ialltoallv(s_, sb, sc.data(), sd.data(), on(recv.data), rc.data(), rd.data(), dtype, w);
        }, {&sc, &sd, &rc, &rd});
      });
      expect_ok(st, c("alltoallv"));
      expect_bytes(recv.data, want.data, extent * es, c("alltoallv"));
    }

    {  // gatherv to `root`: arrays at the root only
      std::size_t extent = 0;
      std::vector<std::size_t> counts = blocks, displs = displacements(counts, pattern % 2 == 0, &extent);
      Buffer recv = recvbuf(extent * es), want = local(extent * es), mine = buffer(blocks[me] * es);
      std::memset(want.data, 0x5a, extent * es);
      for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < counts[q]; ++i) store(want.data, displs[q] + i, dtype, vcode(int(q), 0, i));
      for (std::size_t i = 0; i < blocks[me]; ++i) store(mine.data, i, dtype, vcode(R_, 0, i));
      const bool at_root = R_ == root;
      char *from = mine.data;
      if (in_place && at_root) {
        from = recv.data + displs[me] * es;
        std::memcpy(from, mine.data, blocks[me] * es);
      }
      const std::size_t *rcounts = at_root ? counts.data() : nullptr, *rdispls = at_root ? displs.data() : nullptr;
      pg_status st = call([&] {
        void *rb = at_root ? on(recv.data) : nullptr;
        if (!nonblocking) return pg_gatherv(s_, on(from), blocks[me], rb, rcounts, rdispls, dtype, root);
        return settle([&](pg_work **w) {
          return pg_igatherv(s_, on(from), blocks[me], rb, rcounts, rdispls, dtype, root, w);
        }, {&counts, &displs});
      });
      expect_ok(st, c("gatherv"));
      if (at_root) expect_bytes(recv.data, want.data, extent * es, c("gatherv"));
    }

    {  // scatterv from `root`: block q to rank q
      std::size_t extent = 0;
      std::vector<std::size_t> counts = blocks, displs = displacements(counts, pattern % 2 == 1, &extent);
      Buffer all = sendbuf(extent * es), part = recvbuf(blocks[me] * es), want = local(blocks[me] * es);
      for (std::size_t q = 0; q < P; ++q)
        for (std::size_t i = 0; i < counts[q]; ++i) store(all.data, displs[q] + i, dtype, vcode(int(q), 1, i));
      for (std::size_t i = 0; i < blocks[me]; ++i) store(want.data, i, dtype, vcode(R_, 1, i));
      const bool at_root = R_ == root;
      char *to = in_place && at_root ? all.data + displs[me] * es : part.data;
      const std::size_t *scounts = at_root ? counts.data() : nullptr, *sdispls = at_root ? displs.data() : nullptr;
      pg_status st = call([&] {
        const void *sb = at_root ? on(all.data) : nullptr;
        if (!nonblocking) return pg_scatterv(s_, sb, scounts, sdispls, on(to), blocks[me], dtype, root);
        return settle([&](pg_work **w) {
          return pg_iscatterv(s_, sb, scounts, sdispls, on(to), blocks[me], dtype, root, w);
        }, {&counts, &displs});
      });
      expect_ok(st, c("scatterv"));
      expect_bytes(to, want.data, blocks[me] * es, c("scatterv"));
    }
  }

  void uneven_reduction(pg_dtype dtype, pg_op op, int pattern, std::size_t n, bool in_place, bool nonblocking) {
    const std::size_t es = pg_dtype_size(dtype), P = static_cast<std::size_t>(P_), me = static_cast<std::size_t>(R_);
    const int avg = op == PG_AVG ? P_ : 0;
    pg_test_step("reduce_scatterv %s %s %s%s%s", pg_dtype_name(dtype), pg_op_name(op), pattern_name(pattern),
                 in_place ? " in place" : "", nonblocking ? " nonblocking" : "");
    char what[160];
    std::snprintf(what, sizeof what, "reduce_scatterv (%s)%s", pattern_name(pattern), nonblocking ? " nonblocking" : "");
    const Case c{what, dtype, op, n, in_place};
    const std::vector<std::size_t> m = matrix(pattern, n);
    std::vector<std::size_t> counts(P);
    std::size_t total = 0, before = 0;
    for (std::size_t q = 0; q < P; ++q) {
      counts[q] = block_of(m, int(q));
      if (q < me) before += counts[q];
      total += counts[q];
    }
    Buffer all = sendbuf(total * es), recv = recvbuf(counts[me] * es), want = local(counts[me] * es);
    for (std::size_t j = 0; j < total; ++j) store(all.data, j, dtype, input(op, R_, j));
    for (std::size_t i = 0; i < counts[me]; ++i) store(want.data, i, dtype, combined(op, before + i), avg);
    char *out = in_place ? all.data + before * es : recv.data;
    const std::size_t bytes = counts[me] * es;
    pg_status st = call([&] {
      if (!nonblocking) return pg_reduce_scatterv(s_, on(all.data), on(out), counts.data(), dtype, op);
      return settle([&](pg_work **w) {
        return pg_ireduce_scatterv(s_, on(all.data), on(out), counts.data(), dtype, op, w);
      }, {&counts});
    });
    expect_ok(st, c);
    expect_bytes(out, want.data, bytes, c);
  }

  // Rank q's random input to a reduction: every bit pattern for integers;
  // for floating types multiples of 1/64 in [-1, 1] (PG_PROD: +-1/2, 1, 2),
  // whose sums and products are exact in every type at these rank counts, so
  // the result does not depend on the order a backend combines in.
  // Floating-point sums are of multiples of 1/64 small enough that every
  // partial sum of P inputs is exact (bfloat16 holds 8 significant bits: at
  // most 256/P sixty-fourths each), so any order of combining gives the bits
  // of the rank-order reference.
  void random_input(char *buf, std::size_t n, pg_dtype dtype, pg_op op, int q) const {
    std::mt19937_64 random(977 * (q + 1) + 31 * dtype + op);
    const int largest = dtype == PG_BFLOAT16 ? std::max(1, std::min(64, 256 / P_)) : 64;
    for (std::size_t i = 0; i < n; ++i) {
      const uint64_t bits = random();
      if (!pg::is_floating(dtype)) {
        std::memcpy(buf + i * pg_dtype_size(dtype), &bits, pg_dtype_size(dtype));
      } else if (op == PG_PROD) {
        const double magnitude[] = {0.5, 1.0, 2.0};
        store_real(buf, i, dtype, (bits & 1 ? -1 : 1) * magnitude[(bits >> 1) % 3]);
      } else {
        const int k = static_cast<int>(bits % (2 * largest + 1)) - largest;
        store_real(buf, i, dtype, static_cast<double>(k) / 64);
      }
    }
  }

  // Random inputs against a reference computed here: every rank's input
  // (regenerated from its seed), combined in rank order with the library's
  // own kernel (pg_reduce_local, then pg_reduce_finish).
  void random_reductions(std::size_t n) {
    for (int d = 0; d < pg::kDtypeCount; ++d)
      for (int o = 0; o < pg::kOpCount; ++o) {
        const pg_dtype dtype = pg_dtype(d);
        const pg_op op = pg_op(o);
        if (!serves(options_, dtype, op)) continue;
        pg_test_step("random %s %s n=%zu", pg_dtype_name(dtype), pg_op_name(op), n);
        const std::size_t bytes = n * pg_dtype_size(dtype), all = bytes * P_;
        Buffer want = local(all), theirs = local(all);
        random_input(want.data, n * P_, dtype, op, 0);
        for (int q = 1; q < P_; ++q) {
          random_input(theirs.data, n * P_, dtype, op, q);
          pg_reduce_local(dtype, op, want.data, theirs.data, n * P_);
        }
        pg_reduce_finish(dtype, op, want.data, n * P_, P_);

        Buffer send = sendbuf(all), recv = recvbuf(all);
        random_input(send.data, n * P_, dtype, op, R_);
        expect_ok(call([&] { return pg_allreduce(s_, on(send.data), on(recv.data), n, dtype, op); }),
                  {"random allreduce", dtype, op, n, false});
        expect_bytes(recv.data, want.data, bytes, {"random allreduce", dtype, op, n, false});
        const int root = P_ / 2;
        expect_ok(call([&] { return pg_reduce(s_, on(send.data), on(recv.data), n, dtype, op, root); }),
                  {"random reduce", dtype, op, n, false});
        if (R_ == root) expect_bytes(recv.data, want.data, bytes, {"random reduce", dtype, op, n, false});
        expect_ok(call([&] { return pg_reduce_scatter(s_, on(send.data), on(recv.data), n, dtype, op); }),
                  {"random reduce_scatter", dtype, op, n, false});
        expect_bytes(recv.data, want.data + R_ * bytes, bytes, {"random reduce_scatter", dtype, op, n, false});
      }
  }

  // MIN/MAX over NaN and signed zeros: every rank gets the same bits (ranks
  // combine in different orders), -0 < +0, and NaN wins. On CUDA NCCL
  // compares (docs/nccl.md): the same bits on every rank only.
  void symmetry() {
    pg_test_step("min/max symmetry");
    for (pg_dtype dtype : {PG_FLOAT16, PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64}) {
      const std::size_t es = pg_dtype_size(dtype);
      for (pg_op op : {PG_MIN, PG_MAX}) {
        // element 0: +0 on even ranks, -0 on odd; element 1: NaN on the last rank, else 1.
        Buffer v = sendbuf(2 * es), out = recvbuf(2 * es);
        store_real(v.data, 0, dtype, R_ % 2 ? -0.0 : 0.0);
        store_real(v.data, 1, dtype, R_ == P_ - 1 && P_ > 1 ? NAN : 1.0);
        PG_TEST_STATUS(call([&] { return pg_allreduce(s_, on(v.data), on(out.data), 2, dtype, op); }), PG_OK);
        same_on_every_rank(out.data, 2 * es, pg_dtype_name(dtype), pg_op_name(op));
        // The sign bit of element 0 is the top bit of its last byte (little endian).
        if (options_.cuda()) continue;
        const bool negative = (out.data[es - 1] & 0x80) != 0;
        if (P_ > 1) PG_TEST_TRUE(negative == (op == PG_MIN), "%s %s of +0 and -0", pg_dtype_name(dtype), pg_op_name(op));
        const double second = load_real(out.data, 1, dtype);
        if (P_ > 1) PG_TEST_TRUE(std::isnan(second), "%s %s with a NaN: %g", pg_dtype_name(dtype), pg_op_name(op), second);
      }
    }
  }

  // MIN/MAX of unsigned values with the top bit set (an MPI that compares them
  // as signed gets these wrong): rank q contributes 14 + q, rank 0 also a value
  // at the top of the type's range.
  void unsigned_extremes() {
    pg_test_step("unsigned min/max");
    for (pg_dtype dtype : {PG_UINT8, PG_UINT32, PG_UINT64}) {
      const std::size_t es = pg_dtype_size(dtype);
      const uint64_t top = uint64_t(0x90) << (8 * (es - 1));  // 144 << ...: the top bit set
      for (pg_op op : {PG_MIN, PG_MAX}) {
        Buffer v = sendbuf(2 * es), out = recvbuf(2 * es), want = local(2 * es);
        store(v.data, 0, dtype, 14 + R_);
        store(v.data, 1, dtype, R_ == 0 ? top : 14 + R_);
        store(want.data, 0, dtype, op == PG_MIN ? 14 : 14 + P_ - 1);
        store(want.data, 1, dtype, op == PG_MIN ? (P_ > 1 ? 15 : top) : top);
        expect_ok(call([&] { return pg_allreduce(s_, on(v.data), on(out.data), 2, dtype, op); }),
                  {"allreduce", dtype, op, 2, false});
        expect_bytes(out.data, want.data, 2 * es, {"allreduce (top bit set)", dtype, op, 2, false});
      }
    }
  }

  // Sums of inexact values (the order of combining changes the bits): every
  // rank must still get the same bits, over several slices of a hierarchical backend.
  void identical(std::size_t n) {
    for (pg_dtype dtype : {PG_FLOAT16, PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64})
      for (pg_op op : {PG_SUM, PG_AVG, PG_PROD}) {
        pg_test_step("identical %s %s", pg_dtype_name(dtype), pg_op_name(op));
        const std::size_t es = pg_dtype_size(dtype);
        std::mt19937_64 random(1234 + R_);
        std::uniform_real_distribution<double> value(op == PG_PROD ? 0.9 : -1.0, op == PG_PROD ? 1.1 : 1.0);
        Buffer send = sendbuf(n * es), recv = recvbuf(n * es);
        for (std::size_t i = 0; i < n; ++i) store_real(send.data, i, dtype, value(random));
        PG_TEST_STATUS(call([&] { return pg_allreduce(s_, on(send.data), on(recv.data), n, dtype, op); }), PG_OK);
        same_on_every_rank(recv.data, n * es, pg_dtype_name(dtype), pg_op_name(op));
      }
  }

  void same_on_every_rank(const char *data, std::size_t bytes, const char *dtype, const char *op) {
    std::vector<char> all(bytes * static_cast<std::size_t>(P_));
    MPI_Allgather(data, static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes), MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int q = 1; q < P_; ++q)
      PG_TEST_TRUE(std::memcmp(all.data(), all.data() + q * bytes, bytes) == 0,
                   "%s %s: rank %d got other bits than rank 0", dtype, op, q);
  }

  pg_strategy *s_;
  const Options options_;
  const int P_, R_;
  std::vector<void *> arenas_;
  std::vector<Mirror *> mirrors_;  // the live device copies (CUDA)
  std::size_t arena_bytes_ = 0;
};

}  // namespace

int main(int argc, char **argv) {
  pg_test_watchdog("test_collectives");
  Options options;
  if (argc > 1 && std::strcmp(argv[1], "-") != 0) options.backend = argv[1];
  for (int i = 2; i < argc; ++i) {
    options.quick = options.quick || std::strcmp(argv[i], "quick") == 0;
    options.odd_ranks_on_heap = options.odd_ranks_on_heap || std::strcmp(argv[i], "mem-alloc-even") == 0;
    options.mem_alloc = options.mem_alloc || options.odd_ranks_on_heap || std::strcmp(argv[i], "mem-alloc") == 0;
    options.own_hosts = options.own_hosts || std::strcmp(argv[i], "nccl-own-hosts") == 0;
    if (std::strncmp(argv[i], "cuda", 4) == 0) options.device = argv[i];
  }
  // NCCL reads NCCL_HOSTID when a communicator is made: set before the
  // strategy, from this rank's number (so MPI is initialized here first).
  if (options.own_hosts) {
    int provided = 0, rank = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    setenv("NCCL_HOSTID", ("pgstrategy-test-rank-" + std::to_string(rank)).c_str(), 1);
  }
  auto finish = [&](int code) {
    if (options.own_hosts) MPI_Finalize();
    return code;
  };
  pg_strategy *s = nullptr;
  pg_status st = pg_strategy_create(options.device, options.backend, &s);
  if (st == PG_ERR_UNAVAILABLE && options.cuda()) {  // the same status on every rank
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("test_collectives on %s: skipped: %s\n", options.device, pg_last_error());
    return finish(PG_TEST_SKIP);
  }
  if (st != PG_OK) {
    std::fprintf(stderr, "pg_strategy_create: %s: %s\n", pg_status_name(st), pg_last_error());
    return finish(1);
  }
  if (options.cuda() && pg_strategy_rank(s) == 0) {
    char text[1024];
    if (pg_strategy_describe(s, text, sizeof text) == PG_OK) std::printf("%s\n", text);
  }
  {
    Suite suite(s, options);
    // The largest buffer: every rank's block of 3001 float64 or, with
    // mem-alloc, of kLargeCount float32 (reduce_scatter's input), plus the marker byte.
    const std::size_t block = std::max<std::size_t>(3001 * 8, options.mem_alloc ? Suite::kLargeCount * 4 : 0);
    if (suite.init(static_cast<std::size_t>(pg_strategy_size(s)) * block + 64)) suite.run();
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return finish(pg_test_verdict(MPI_COMM_WORLD, "test_collectives"));
}
