#include "check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "pg_backend.h"

namespace pgbench {
namespace {

// Operand of rank r at position j for a reduction `op`, chosen so the result
// stays exact: sums of values in {0,1,2} (exact up to 128 ranks in bfloat16,
// 63 in int8 — integers wrap like the type beyond); products of ones with one
// two; min, max and bitwise operators over values in [0, 96].
double operand(pg_op op, int r, int nranks, size_t j) {
  switch (op) {
    case PG_SUM:
    case PG_AVG: return static_cast<double>((static_cast<size_t>(r) + j) % 3);
    case PG_PROD: return j % static_cast<size_t>(nranks) == static_cast<size_t>(r) ? 2.0 : 1.0;
    default: return static_cast<double>((13 * static_cast<size_t>(r) + j) % 97);
  }
}

// Data of rank r at position j for allgather, broadcast and alltoall.
double source(int r, size_t j) { return static_cast<double>((13 * static_cast<size_t>(r) + j + 1) % 97); }

// Element `i` of a buffer of `dtype`, as a double (exact for every type).
double load_as_double(pg_dtype dtype, const void *buf, size_t i) {
  double value = 0;
  pg_dtype_to_double(dtype, static_cast<const char *>(buf) + i * pg_dtype_size(dtype), &value, 1);
  return value;
}

// Stores `value` as element `i`: integers wrap modulo 2^bits, floating types
// round to nearest (pg_dtype_from_double).
void store_from_double(pg_dtype dtype, void *buf, size_t i, double value) {
  pg_dtype_from_double(dtype, &value, static_cast<char *>(buf) + i * pg_dtype_size(dtype), 1);
}

double epsilon(pg_dtype d) {
  switch (d) {
    case PG_FLOAT16: return std::ldexp(1.0, -10);
    case PG_BFLOAT16: return std::ldexp(1.0, -7);
    case PG_FLOAT32: return std::ldexp(1.0, -23);
    default: return std::ldexp(1.0, -52);
  }
}

}  // namespace

Checker::Checker(pg_dtype dtype, pg_op op, int rank, int nranks, int root)
    : dtype_(dtype), op_(op), rank_(rank), nranks_(nranks), root_(root), es_(pg_dtype_size(dtype)) {
  const auto n = static_cast<size_t>(nranks);
  source_.assign(n, Pattern(kPeriod * es_));
  operand_.assign(n, Pattern(kPeriod * es_));
  for (int r = 0; r < nranks; ++r)
    for (size_t j = 0; j < kPeriod; ++j) {
      store_from_double(dtype, source_[static_cast<size_t>(r)].data(), j, source(r, j));
      store_from_double(dtype, operand_[static_cast<size_t>(r)].data(), j, operand(op, r, nranks, j));
    }
  // The expectation through the library's own kernel (integers wrap; the
  // floating values involved are exact), combining ranks in order.
  expected_ = operand_[0];
  for (size_t r = 1; r < n; ++r)
    pg_reduce_local(dtype, op, expected_.data(), operand_[r].data(), kPeriod);
  if (op == PG_AVG) {
    expected_avg_.resize(kPeriod);
    for (size_t j = 0; j < kPeriod; ++j) {
      double sum = 0;
      for (int r = 0; r < nranks; ++r) sum += operand(op, r, nranks, j);
      expected_avg_[j] = sum / nranks;
    }
  }
}

void Checker::fill_sentinel(void *buf, size_t bytes) { std::memset(buf, 0xff, bytes); }

void Checker::repeat(const Pattern &p, size_t start, void *dst, size_t count) const {
  auto *out = static_cast<unsigned char *>(dst);
  size_t j = start % kPeriod;
  while (count > 0) {
    const size_t run = std::min(count, kPeriod - j);
    std::memcpy(out, p.data() + j * es_, run * es_);
    out += run * es_;
    count -= run;
    j = 0;
  }
}

size_t Checker::mismatches(const Pattern &p, size_t start, const void *got, size_t count) const {
  const auto *in = static_cast<const unsigned char *>(got);
  size_t wrong = 0;
  size_t j = start % kPeriod;
  while (count > 0) {
    const size_t run = std::min(count, kPeriod - j);
    const unsigned char *want = p.data() + j * es_;
    if (std::memcmp(in, want, run * es_) != 0)
      for (size_t e = 0; e < run; ++e) wrong += std::memcmp(in + e * es_, want + e * es_, es_) != 0;
    in += run * es_;
    count -= run;
    j = 0;
  }
  return wrong;
}

size_t Checker::mismatches_avg(size_t start, const void *got, size_t count) const {
  const double eps = 2 * epsilon(dtype_);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = expected_avg_[(start + i) % kPeriod];
    const double v = load_as_double(dtype_, got, i);
    if (!(std::fabs(v - want) <= eps * std::max(1.0, std::fabs(want)))) ++wrong;
  }
  return wrong;
}

// The uneven collectives. allgatherv: rank q's block is source q from 0;
// reduce_scatterv: the operands as for reduce_scatter (position j of the
// whole input); alltoallv: the block rank q sends rank r is source q from
// position 31 r.
void Checker::fill_input(const Layout &l, void *send) const {
  const size_t count = l.send_bytes / es_;
  const auto r = static_cast<size_t>(rank_);
  if (is_uneven(l.coll)) {
    const UnevenCounts u = uneven_counts(l, rank_);
    auto *out = static_cast<unsigned char *>(send);
    if (l.coll == Collective::Allgatherv) repeat(source_[r], 0, send, u.send);
    if (l.coll == Collective::ReduceScatterv) repeat(operand_[r], 0, send, u.send);
    if (l.coll == Collective::Alltoallv)
      for (size_t q = 0; q < u.sc.size(); ++q) repeat(source_[r], 31 * q, out + u.sd[q] * es_, u.sc[q]);
    return;
  }
  switch (l.coll) {
    case Collective::Allreduce:
    case Collective::ReduceScatter:
      repeat(operand_[r], 0, send, count);
      break;
    case Collective::Allgather:
    case Collective::Alltoall:
      repeat(source_[r], 0, send, count);
      break;
    case Collective::Broadcast:
      if (rank_ == root_)
        repeat(source_[r], 0, send, count);
      else
        fill_sentinel(send, l.send_bytes);
      break;
    default:
      break;
  }
}

size_t Checker::count_wrong(const Layout &l, const void *result) const {
  const auto *res = static_cast<const unsigned char *>(result);
  const size_t c = l.call_count;
  const auto r = static_cast<size_t>(rank_);
  if (is_uneven(l.coll)) {
    const UnevenCounts u = uneven_counts(l, rank_);
    size_t wrong = 0;
    switch (l.coll) {
      case Collective::ReduceScatterv:
        return op_ == PG_AVG ? mismatches_avg(u.sd[r], res, u.recv) : mismatches(expected_, u.sd[r], res, u.recv);
      case Collective::Allgatherv:
        for (size_t q = 0; q < u.rc.size(); ++q) wrong += mismatches(source_[q], 0, res + u.rd[q] * es_, u.rc[q]);
        return wrong;
      default:  // alltoallv: block q from rank q, what it meant for this rank
        for (size_t q = 0; q < u.rc.size(); ++q)
          wrong += mismatches(source_[q], 31 * r, res + u.rd[q] * es_, u.rc[q]);
        return wrong;
    }
  }
  switch (l.coll) {
    case Collective::Allreduce:
      return op_ == PG_AVG ? mismatches_avg(0, res, c) : mismatches(expected_, 0, res, c);
    case Collective::ReduceScatter:
      // Block `rank` of the reduction of the whole inputs.
      return op_ == PG_AVG ? mismatches_avg(r * c, res, c) : mismatches(expected_, r * c, res, c);
    case Collective::Broadcast:
      return mismatches(source_[static_cast<size_t>(root_)], 0, res, c);
    case Collective::Allgather: {
      size_t wrong = 0;
      for (int q = 0; q < nranks_; ++q)
        wrong += mismatches(source_[static_cast<size_t>(q)], 0, res + static_cast<size_t>(q) * c * es_, c);
      return wrong;
    }
    case Collective::Alltoall: {
      // Block q comes from rank q: the part of its input meant for this rank.
      size_t wrong = 0;
      for (int q = 0; q < nranks_; ++q)
        wrong += mismatches(source_[static_cast<size_t>(q)], r * c,
                            res + static_cast<size_t>(q) * c * es_, c);
      return wrong;
    }
    default:
      return 0;
  }
  return 0;
}

}  // namespace pgbench
