// A backend written against pg_reduce_local (include/pg_backend.h) agrees bit
// for bit with the mpi backend: every rank gathers all ranks' inputs
// (MPI_Allgather), folds them in rank order with pg_reduce_local and
// pg_reduce_finish, and compares with pg_allreduce on a strategy created with
// backend "mpi", and with MPI_Allreduce on the library's own datatype and
// operation (pg_mpi_datatype, pg_mpi_op). The inputs are NaNs, signed zeros and infinities for MIN and
// MAX, sums that are ties in float16, bfloat16, float32 and float64, and
// integer sums that wrap around.
//
// MPI combines contributions in an order of its choosing, and for SUM the
// rounding depends on it on 3 ranks and more. So every SUM (and AVG) input
// gives the same bits in every order: a tie pair plus zeros (whichever two are
// added first, the tie is rounded once), or a single NaN or infinity. Two NaNs
// of different signs never meet: which one wins depends on the order.
#include <cstdint>
#include <cstring>
#include <vector>

#include "pg_backend.h"
#include "pg_test.h"

namespace {

// The bit patterns of a floating type. The sign is the top bit.
struct FloatBits {
  pg_dtype dtype;
  uint64_t one, infinity, nan;
  uint64_t even, odd;  // even + 1 and odd + 1 are ties: they round to even and odd + 2
};

const FloatBits kFloats[] = {
    {PG_FLOAT16, 0x3c00, 0x7c00, 0x7e00, 0x6800, 0x6801},  // 2048, 2050
    {PG_BFLOAT16, 0x3f80, 0x7f80, 0x7fc0, 0x4380, 0x4381},  // 256, 258
    {PG_FLOAT32, 0x3f800000, 0x7f800000, 0x7fc00000, 0x4b800000, 0x4b800001},  // 2^24, 2^24 + 2
    {PG_FLOAT64, 0x3ff0000000000000, 0x7ff0000000000000, 0x7ff8000000000000, 0x4340000000000000,
     0x4340000000000001},  // 2^53, 2^53 + 2
};

uint64_t sign_bit(pg_dtype dtype) { return uint64_t{1} << (8 * pg_dtype_size(dtype) - 1); }

// One element of dtype from its bit pattern, and back.
void put(pg_dtype dtype, uint64_t bits, unsigned char *element) {
  const uint8_t v8 = static_cast<uint8_t>(bits);
  const uint16_t v16 = static_cast<uint16_t>(bits);
  const uint32_t v32 = static_cast<uint32_t>(bits);
  switch (pg_dtype_size(dtype)) {
    case 1: std::memcpy(element, &v8, 1); break;
    case 2: std::memcpy(element, &v16, 2); break;
    case 4: std::memcpy(element, &v32, 4); break;
    default: std::memcpy(element, &bits, 8); break;
  }
}

uint64_t get(pg_dtype dtype, const unsigned char *element) {
  uint8_t v8;
  uint16_t v16;
  uint32_t v32;
  uint64_t v64;
  switch (pg_dtype_size(dtype)) {
    case 1: std::memcpy(&v8, element, 1); return v8;
    case 2: std::memcpy(&v16, element, 2); return v16;
    case 4: std::memcpy(&v32, element, 4); return v32;
    default: std::memcpy(&v64, element, 8); return v64;
  }
}

// pg_allreduce on the mpi backend against the rank-order fold of everyone's
// `mine` with pg_reduce_local and pg_reduce_finish; returns the fold.
std::vector<uint64_t> compare(pg_strategy *s, pg_dtype dtype, pg_op op, const std::vector<uint64_t> &mine) {
  pg_test_step("%s %s, %zu elements", pg_dtype_name(dtype), pg_op_name(op), mine.size());
  const int ranks = pg_strategy_size(s);
  const std::size_t size = pg_dtype_size(dtype), bytes = mine.size() * size;
  std::vector<unsigned char> send(bytes);
  for (std::size_t i = 0; i < mine.size(); ++i) put(dtype, mine[i], &send[i * size]);
  std::vector<unsigned char> all(bytes * ranks);
  MPI_Allgather(send.data(), static_cast<int>(bytes), MPI_BYTE, all.data(), static_cast<int>(bytes), MPI_BYTE,
                MPI_COMM_WORLD);
  std::vector<unsigned char> folded(all.begin(), all.begin() + bytes);
  for (int r = 1; r < ranks; ++r)
    PG_TEST_STATUS(pg_reduce_local(dtype, op, folded.data(), &all[r * bytes], mine.size()), PG_OK);
  PG_TEST_STATUS(pg_reduce_finish(dtype, op, folded.data(), mine.size(), ranks), PG_OK);

  std::vector<unsigned char> got(bytes), raw(bytes);
  PG_TEST_STATUS(pg_allreduce(s, send.data(), got.data(), mine.size(), dtype, op), PG_OK);
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op mpi_op = MPI_OP_NULL;
  PG_TEST_STATUS(pg_mpi_datatype(dtype, &type), PG_OK);
  PG_TEST_STATUS(pg_mpi_op(dtype, op, &mpi_op), PG_OK);
  MPI_Allreduce(send.data(), raw.data(), static_cast<int>(mine.size()), type, mpi_op, MPI_COMM_WORLD);
  PG_TEST_STATUS(pg_reduce_finish(dtype, op, raw.data(), mine.size(), ranks), PG_OK);
  std::vector<uint64_t> result(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) result[i] = get(dtype, &folded[i * size]);
  for (const auto &[name, bits] : {std::make_pair("mpi backend", &got), std::make_pair("MPI_Allreduce", &raw)})
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const uint64_t value = get(dtype, &(*bits)[i * size]);
      if (!PG_TEST_TRUE(value == result[i], "%s %s element %zu: %s 0x%llx, pg_reduce_local 0x%llx",
                        pg_dtype_name(dtype), pg_op_name(op), i, name, (unsigned long long)value,
                        (unsigned long long)result[i]))
        break;  // one message per call is enough
    }
  return result;
}

// Every assignment of `values` to the ranks: element k gives rank r
// values[(k / n^r) % n].
std::vector<uint64_t> every_assignment(const std::vector<uint64_t> &values, int rank, int ranks) {
  std::size_t count = 1, stride = 1;
  for (int r = 0; r < ranks; ++r) count *= values.size();
  for (int r = 0; r < rank; ++r) stride *= values.size();
  std::vector<uint64_t> mine(count);
  for (std::size_t k = 0; k < count; ++k) mine[k] = values[(k / stride) % values.size()];
  return mine;
}

// A sum of one addend per rank (the list padded with a zero) and its value.
struct Sum {
  std::vector<uint64_t> addends;
  uint64_t want;
};

// Each sum spread over the ranks in every rotation: element (sum i, t) gives
// rank r addends[(r + t) % ranks]. Checks the fold against `want` and returns
// the elements, for other ops on the same inputs.
std::vector<uint64_t> compare_sums(pg_strategy *s, pg_dtype dtype, const std::vector<Sum> &sums,
                                   uint64_t padding) {
  const int rank = pg_strategy_rank(s), ranks = pg_strategy_size(s);
  std::vector<uint64_t> mine;
  for (const Sum &sum : sums) {
    std::vector<uint64_t> addends = sum.addends;
    addends.resize(ranks, padding);
    for (int t = 0; t < ranks; ++t) mine.push_back(addends[(rank + t) % ranks]);
  }
  const std::vector<uint64_t> got = compare(s, dtype, PG_SUM, mine);
  for (std::size_t i = 0; i < got.size(); ++i)
    PG_TEST_TRUE(got[i] == sums[i / ranks].want, "%s sum #%zu is 0x%llx, expected 0x%llx", pg_dtype_name(dtype),
                 i / ranks, (unsigned long long)got[i], (unsigned long long)sums[i / ranks].want);
  return mine;
}

void compare_floats(pg_strategy *s, const FloatBits &f) {
  const uint64_t minus = sign_bit(f.dtype), zero = 0;
  for (const uint64_t nan : {f.nan, f.nan | minus}) {
    const std::vector<uint64_t> values = {zero,       zero | minus, f.one, f.one | minus,
                                         f.infinity, f.infinity | minus, nan};
    const std::vector<uint64_t> mine = every_assignment(values, pg_strategy_rank(s), pg_strategy_size(s));
    for (const pg_op op : {PG_MIN, PG_MAX}) compare(s, f.dtype, op, mine);
  }
  const std::vector<Sum> sums = {
      {{f.even, f.one}, f.even},  // a tie: rounds to even
      {{f.odd, f.one}, f.odd + 1},
      {{f.even | minus, f.one | minus}, f.even | minus},
      {{f.odd | minus, f.one | minus}, (f.odd + 1) | minus},
      {{zero, zero | minus}, zero},
      {{f.nan, f.one}, f.nan},
      {{f.nan | minus, f.one}, f.nan | minus},
      {{f.infinity | minus, f.one}, f.infinity | minus},
  };
  compare(s, f.dtype, PG_AVG, compare_sums(s, f.dtype, sums, zero));
  compare_sums(s, f.dtype, {{{zero | minus}, zero | minus}}, zero | minus);  // -0 on every rank
}

}  // namespace

int main() {
  pg_test_watchdog("test_reduce_local");
  pg_strategy *s = nullptr;
  PG_TEST_STATUS(pg_strategy_create("cpu", "mpi", &s), PG_OK);
  if (!s) return 1;
  for (const FloatBits &f : kFloats) compare_floats(s, f);
  // Integer sums wrap around, in any order.
  compare_sums(s, PG_INT8, {{{127, 1}, 0x80}, {{0x80, 0xff}, 127}}, 0);
  compare_sums(s, PG_UINT64, {{{UINT64_MAX, 2}, 1}}, 0);
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_reduce_local");
}
