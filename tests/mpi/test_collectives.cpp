// Every collective of the strategy's backend, for every dtype x op the
// capability table allows (and the refusal of those it does not), counts
// 0, 1, odd, P*k+1 and larger, in place and out of place, checked bit for bit
// against values computed here.
//
//   test_collectives [backend] [quick]
// "quick" narrows dtypes and counts (for runs with a tiny chunk limit).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "pg_test.h"

namespace {

int P, R;
pg_strategy *S;
bool quick;

// Small values, so sums, products and bitwise results are exact in every dtype.
uint64_t input(pg_op op, int rank, std::size_t i) {
  switch (op) {
    case PG_PROD: return 1 + (rank + i) % 2;
    case PG_BAND:
    case PG_BOR:
    case PG_BXOR: return (uint64_t(1) << ((rank + i) % 6)) | 1u;
    default: return 1 + (rank * 7 + i) % 5;
  }
}

uint64_t combine(pg_op op, std::size_t i) {
  uint64_t r = input(op, 0, i);
  for (int q = 1; q < P; ++q) {
    uint64_t v = input(op, q, i);
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

// Writes v into element i of buf as dtype; PG_AVG divides as the library does
// (the exact sum rounded to the type, divided in the type's arithmetic).
void store(std::vector<char> &buf, std::size_t i, pg_dtype dtype, uint64_t v, bool avg = false) {
  char *p = buf.data() + i * pg::dtype_size(dtype);
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (dtype) {
    case PG_INT8: put(int8_t(v)); break;
    case PG_UINT8: put(uint8_t(v)); break;
    case PG_INT32: put(int32_t(v)); break;
    case PG_UINT32: put(uint32_t(v)); break;
    case PG_INT64: put(int64_t(v)); break;
    case PG_UINT64: put(uint64_t(v)); break;
    case PG_FLOAT16: {
      uint16_t h = pg::float_to_half(float(v));
      put(avg ? pg::float_to_half(pg::half_to_float(h) / float(P)) : h);
      break;
    }
    case PG_BFLOAT16: {
      uint16_t b = pg::float_to_bf16(float(v));
      put(avg ? pg::float_to_bf16(pg::bf16_to_float(b) / float(P)) : b);
      break;
    }
    case PG_FLOAT32: put(avg ? float(v) / float(P) : float(v)); break;
    case PG_FLOAT64: put(avg ? double(v) / double(P) : double(v)); break;
  }
}

std::vector<char> buffer(std::size_t count, pg_dtype dtype) {
  return std::vector<char>(count * pg::dtype_size(dtype) + 1, char(0x5a));  // +1: never empty
}

void expect_equal(const std::vector<char> &got, const std::vector<char> &want, std::size_t bytes,
                  const char *what, pg_dtype dtype, pg_op op, std::size_t count, bool in_place) {
  PG_CHECK_TRUE(std::memcmp(got.data(), want.data(), bytes) == 0,
                "%s %s op=%s count=%zu %s: wrong result", what, pg::dtype_name(dtype),
                pg::op_name(op), count, in_place ? "in place" : "out of place");
}

#define RUN(call, what)                                                                     \
  do {                                                                                      \
    pg_status st_ = (call);                                                                 \
    PG_CHECK_TRUE(st_ == PG_OK, "%s %s op=%s count=%zu: %s: %s", what, pg::dtype_name(dtype), \
                  pg::op_name(op), n, pg_status_name(st_), pg_last_error());                \
  } while (0)

void reductions(pg_dtype dtype, pg_op op, std::size_t n, bool in_place) {
  const std::size_t es = pg::dtype_size(dtype);
  const bool avg = op == PG_AVG;
  const int root = P - 1;
  pg_test_step("reductions %s %s n=%zu", pg::dtype_name(dtype), pg::op_name(op), n);

  // allreduce
  std::vector<char> send = buffer(n, dtype), recv = buffer(n, dtype), want = buffer(n, dtype);
  for (std::size_t i = 0; i < n; ++i) {
    store(send, i, dtype, input(op, R, i));
    store(want, i, dtype, combine(op, i), avg);
  }
  RUN(pg_allreduce(S, send.data(), in_place ? send.data() : recv.data(), n, dtype, op), "allreduce");
  expect_equal(in_place ? send : recv, want, n * es, "allreduce", dtype, op, n, in_place);

  // reduce to the last rank
  for (std::size_t i = 0; i < n; ++i) store(send, i, dtype, input(op, R, i));
  std::fill(recv.begin(), recv.end(), char(0x5a));
  RUN(pg_reduce(S, send.data(), in_place && R == root ? send.data() : recv.data(), n, dtype, op, root),
      "reduce");
  if (R == root) expect_equal(in_place ? send : recv, want, n * es, "reduce", dtype, op, n, in_place);

  // reduce_scatter: block b of the reduction lands on rank b
  std::vector<char> all = buffer(n * P, dtype), mine = buffer(n, dtype), block = buffer(n, dtype);
  for (std::size_t i = 0; i < n * P; ++i) store(all, i, dtype, input(op, R, i));
  for (std::size_t i = 0; i < n; ++i) store(block, i, dtype, combine(op, R * n + i), avg);
  char *out = in_place ? all.data() + R * n * es : mine.data();
  RUN(pg_reduce_scatter(S, all.data(), out, n, dtype, op), "reduce_scatter");
  PG_CHECK_TRUE(std::memcmp(out, block.data(), n * es) == 0,
                "reduce_scatter %s op=%s count=%zu %s: wrong result", pg::dtype_name(dtype),
                pg::op_name(op), n, in_place ? "in place" : "out of place");
}

// Element i of rank q's contribution for the data-movement collectives.
uint64_t code(int q, std::size_t i) { return (q * 13 + i) % 97; }

void movement(pg_dtype dtype, std::size_t n, bool in_place) {
  const std::size_t es = pg::dtype_size(dtype);
  const int root = P - 1;
  const pg_op op = PG_SUM;  // for RUN's message
  pg_test_step("movement %s n=%zu", pg::dtype_name(dtype), n);

  // broadcast from the last rank
  std::vector<char> buf = buffer(n, dtype), want = buffer(n, dtype);
  for (std::size_t i = 0; i < n; ++i) {
    store(buf, i, dtype, R == root ? code(root, i) : 0);
    store(want, i, dtype, code(root, i));
  }
  RUN(pg_broadcast(S, buf.data(), n, dtype, root), "broadcast");
  expect_equal(buf, want, n * es, "broadcast", dtype, op, n, false);

  // allgather
  std::vector<char> send = buffer(n, dtype), all = buffer(n * P, dtype), all_want = buffer(n * P, dtype);
  for (std::size_t i = 0; i < n; ++i) store(send, i, dtype, code(R, i));
  for (int q = 0; q < P; ++q)
    for (std::size_t i = 0; i < n; ++i) store(all_want, q * n + i, dtype, code(q, i));
  if (in_place) std::memcpy(all.data() + R * n * es, send.data(), n * es);
  RUN(pg_allgather(S, in_place ? all.data() + R * n * es : send.data(), all.data(), n, dtype), "allgather");
  expect_equal(all, all_want, n * P * es, "allgather", dtype, op, n, in_place);

  // gather to the last rank
  std::fill(all.begin(), all.end(), char(0));
  if (in_place && R == root) std::memcpy(all.data() + R * n * es, send.data(), n * es);
  RUN(pg_gather(S, in_place && R == root ? all.data() + R * n * es : send.data(), all.data(), n, dtype, root),
      "gather");
  if (R == root) expect_equal(all, all_want, n * P * es, "gather", dtype, op, n, in_place);

  // scatter from the last rank: block q goes to rank q
  std::vector<char> part = buffer(n, dtype), part_want = buffer(n, dtype);
  for (std::size_t i = 0; i < n; ++i) store(part_want, i, dtype, code(R, i));
  char *dest = in_place && R == root ? all_want.data() + R * n * es : part.data();
  RUN(pg_scatter(S, R == root ? all_want.data() : nullptr, dest, n, dtype, root), "scatter");
  PG_CHECK_TRUE(std::memcmp(dest, part_want.data(), n * es) == 0, "scatter %s count=%zu: wrong result",
                pg::dtype_name(dtype), n);

  // alltoall: block q of rank r goes to block r of rank q
  std::vector<char> a_send = buffer(n * P, dtype), a_recv = buffer(n * P, dtype), a_want = buffer(n * P, dtype);
  for (int q = 0; q < P; ++q)
    for (std::size_t i = 0; i < n; ++i) {
      store(a_send, q * n + i, dtype, code(R * P + q, i));
      store(a_want, q * n + i, dtype, code(q * P + R, i));
    }
  RUN(pg_alltoall(S, a_send.data(), in_place ? a_send.data() : a_recv.data(), n, dtype), "alltoall");
  expect_equal(in_place ? a_send : a_recv, a_want, n * P * es, "alltoall", dtype, op, n, in_place);

  // sendrecv around the ring, and send/recv between pairs
  const int next = (R + 1) % P, prev = (R + P - 1) % P;
  std::vector<char> got = buffer(n, dtype), ring_want = buffer(n, dtype);
  for (std::size_t i = 0; i < n; ++i) store(ring_want, i, dtype, code(prev, i));
  RUN(pg_sendrecv(S, send.data(), n, next, got.data(), n, prev, dtype, 7), "sendrecv");
  expect_equal(got, ring_want, n * es, "sendrecv", dtype, op, n, false);
  if (P > 1 && !(P % 2 == 1 && R == P - 1)) {
    const int peer = R % 2 == 0 ? R + 1 : R - 1;
    std::vector<char> pair_want = buffer(n, dtype);
    for (std::size_t i = 0; i < n; ++i) store(pair_want, i, dtype, code(peer, i));
    if (R % 2 == 0) {
      RUN(pg_send(S, send.data(), n, dtype, peer, 3), "send");
      RUN(pg_recv(S, got.data(), n, dtype, peer, 4), "recv");
    } else {
      RUN(pg_recv(S, got.data(), n, dtype, peer, 3), "recv");
      RUN(pg_send(S, send.data(), n, dtype, peer, 4), "send");
    }
    expect_equal(got, pair_want, n * es, "send/recv", dtype, op, n, false);
  }
}

}  // namespace

int main(int argc, char **argv) {
  pg_test_watchdog("test_collectives");
  const char *backend = argc > 1 && std::strcmp(argv[1], "-") != 0 ? argv[1] : nullptr;
  quick = argc > 2 && std::strcmp(argv[2], "quick") == 0;
  pg_status st = pg_strategy_create("cpu", backend, &S);
  if (st != PG_OK) {
    std::fprintf(stderr, "pg_strategy_create: %s: %s\n", pg_status_name(st), pg_last_error());
    return 1;
  }
  P = pg_strategy_size(S);
  R = pg_strategy_rank(S);

  const std::vector<std::size_t> counts =
      quick ? std::vector<std::size_t>{1, std::size_t(2 * P + 1), 50}
            : std::vector<std::size_t>{0, 1, std::size_t(3 * P + 1), 1001};
  std::vector<pg_dtype> dtypes;
  for (int d = 0; d < pg::kDtypeCount; ++d)
    if (!quick || d == PG_INT8 || d == PG_UINT64 || d == PG_FLOAT16 || d == PG_BFLOAT16 || d == PG_FLOAT64)
      dtypes.push_back(pg_dtype(d));

  for (pg_dtype dtype : dtypes) {
    for (int o = 0; o < pg::kOpCount; ++o) {
      const pg_op op = pg_op(o);
      if (!pg::op_supported(dtype, op)) {
        // The capability table's refusals: a status and a message, nothing run.
        char x[8] = {0}, y[8];
        PG_CHECK_STATUS(pg_allreduce(S, x, y, 1, dtype, op), PG_ERR_UNSUPPORTED);
        continue;
      }
      for (std::size_t n : counts)
        for (bool in_place : {false, true})
          if (!in_place || n == counts.back()) reductions(dtype, op, n, in_place);
    }
    for (std::size_t n : counts)
      for (bool in_place : {false, true}) movement(dtype, n, in_place);
  }
  // MIN/MAX over NaN and signed zeros: every rank gets the same bits (MPI
  // combines in a different order on each rank), -0 < +0, and NaN wins.
  pg_test_step("min/max symmetry");
  for (pg_dtype dtype : {PG_FLOAT16, PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64}) {
    const std::size_t es = pg::dtype_size(dtype);
    for (pg_op op : {PG_MIN, PG_MAX}) {
      // element 0: +0 on even ranks, -0 on odd; element 1: NaN on the last rank, else 1.
      std::vector<char> v(2 * es), out(2 * es);
      auto put = [&](std::size_t i, double x) {
        char *p = v.data() + i * es;
        if (dtype == PG_FLOAT16) { uint16_t h = pg::float_to_half(float(x)); std::memcpy(p, &h, 2); }
        else if (dtype == PG_BFLOAT16) { uint16_t b = pg::float_to_bf16(float(x)); std::memcpy(p, &b, 2); }
        else if (dtype == PG_FLOAT32) { float f = float(x); std::memcpy(p, &f, 4); }
        else std::memcpy(p, &x, 8);
      };
      put(0, R % 2 ? -0.0 : 0.0);
      put(1, R == P - 1 && P > 1 ? NAN : 1.0);
      PG_CHECK_STATUS(pg_allreduce(S, v.data(), out.data(), 2, dtype, op), PG_OK);
      std::vector<char> all(2 * es * P);
      MPI_Allgather(out.data(), int(2 * es), MPI_BYTE, all.data(), int(2 * es), MPI_BYTE, MPI_COMM_WORLD);
      for (int q = 1; q < P; ++q)
        PG_CHECK_TRUE(std::memcmp(all.data(), all.data() + q * 2 * es, 2 * es) == 0,
                      "%s %s: rank %d got other bits than rank 0", pg::dtype_name(dtype), pg::op_name(op), q);
      // The sign bit of element 0 is the top bit of its last byte (little endian).
      const bool negative = (out[es - 1] & 0x80) != 0;
      if (P > 1) PG_CHECK_TRUE(negative == (op == PG_MIN), "%s %s of +0 and -0", pg::dtype_name(dtype), pg::op_name(op));
      const char *e1 = out.data() + es;
      double second = 0;
      if (dtype == PG_FLOAT16) { uint16_t h; std::memcpy(&h, e1, 2); second = pg::half_to_float(h); }
      else if (dtype == PG_BFLOAT16) { uint16_t b; std::memcpy(&b, e1, 2); second = pg::bf16_to_float(b); }
      else if (dtype == PG_FLOAT32) { float f; std::memcpy(&f, e1, 4); second = f; }
      else std::memcpy(&second, e1, 8);
      if (P > 1) PG_CHECK_TRUE(std::isnan(second), "%s %s with a NaN: %g", pg::dtype_name(dtype), pg::op_name(op), second);
    }
  }
  pg_test_step("barrier");
  PG_CHECK_STATUS(pg_barrier(S), PG_OK);
  PG_CHECK_STATUS(pg_strategy_destroy(S), PG_OK);
  int failed = pg_test_verdict(MPI_COMM_WORLD, "test_collectives");
  return failed;
}
