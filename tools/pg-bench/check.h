// The -c check: every rank fills its input with values that depend on its rank
// and the element's position, all small integers exact in every dtype, so the
// result of each collective is known exactly beforehand (for avg, up to the
// one rounding of the division). Wrong elements are counted, not printed.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives.h"
#include "pg_strategy.h"

namespace pgbench {

class Checker {
 public:
  Checker(pg_dtype dtype, pg_op op, int rank, int nranks, int root);

  // Writes this rank's input of the call into `send` (layout.send_bytes bytes;
  // broadcast: the root's data on the root, the sentinel elsewhere).
  void fill_input(const Layout &layout, void *send) const;
  // Writes the sentinel (every byte 0xff: NaN for floating types, a value no
  // expected result takes for integers) over `bytes` bytes.
  static void fill_sentinel(void *buf, size_t bytes);
  // Number of elements of this rank's result (layout.recv_bytes bytes at
  // `result`) that differ from the expectation.
  size_t count_wrong(const Layout &layout, const void *result) const;

 private:
  using Pattern = std::vector<unsigned char>;  // kPeriod elements of dtype
  static constexpr size_t kPeriod = 1021;      // a prime, so block shifts show

  void repeat(const Pattern &p, size_t start, void *dst, size_t count) const;
  size_t mismatches(const Pattern &p, size_t start, const void *got, size_t count) const;
  size_t mismatches_avg(size_t start, const void *got, size_t count) const;

  pg_dtype dtype_;
  pg_op op_;
  int rank_;
  int nranks_;
  int root_;
  size_t es_;
  std::vector<Pattern> source_;  // per rank: data of non-reducing collectives
  std::vector<Pattern> operand_;  // per rank: operands of reductions
  Pattern expected_;              // the reduction over ranks of operand_
  std::vector<double> expected_avg_;
};

}  // namespace pgbench
