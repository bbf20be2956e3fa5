#include "tensors.h"

#include <string>

#include "errors.h"

namespace pgstrategy_torch {
namespace {

// torch's dtypes and the library's. bool travels as uint8 (its reductions
// below are the logical ones, as in NCCL); the float8 types as bytes, for
// data movement only (the library has no float8 arithmetic).
struct DtypeName {
  at::ScalarType torch;
  pg_dtype pg;
};
constexpr DtypeName kDtypes[] = {
    {at::kChar, PG_INT8},        {at::kByte, PG_UINT8},    {at::kBool, PG_UINT8},
    {at::kInt, PG_INT32},        {at::kUInt32, PG_UINT32}, {at::kLong, PG_INT64},
    {at::kUInt64, PG_UINT64},    {at::kHalf, PG_FLOAT16},  {at::kBFloat16, PG_BFLOAT16},
    {at::kFloat, PG_FLOAT32},    {at::kDouble, PG_FLOAT64},
    {at::kFloat8_e4m3fn, PG_UINT8}, {at::kFloat8_e5m2, PG_UINT8}, {at::kFloat8_e4m3fnuz, PG_UINT8},
    {at::kFloat8_e5m2fnuz, PG_UINT8}, {at::kFloat8_e8m0fnu, PG_UINT8}};

// PREMUL_SUM's factor: a number, or a one-element tensor (kept on its device).
at::Tensor premul_factor(const c10d::ReduceOp &op, const at::Tensor &like) {
  const auto *supplement = dynamic_cast<const c10d::PreMulSumSupplement *>(op.supplement_.get());
  if (!supplement) raise("pgstrategy: ReduceOp.PREMUL_SUM without its factor");
  if (supplement->tensor_factor.defined()) return supplement->tensor_factor.to(like.device(), like.scalar_type());
  return at::scalar_tensor(supplement->double_factor, like.options());
}

}  // namespace

pg_dtype dtype_of(const at::Tensor &t, const char *what) {
  for (const DtypeName &d : kDtypes)
    if (d.torch == t.scalar_type()) return d.pg;
  std::string supported;
  for (const DtypeName &d : kDtypes) supported += (supported.empty() ? "" : ", ") + std::string(c10::toString(d.torch));
  raise(c10::str("pgstrategy ", what, ": dtype ", t.scalar_type(), " is not supported; supported: ", supported));
}

pg_op op_of(const c10d::ReduceOp &op, const at::Tensor &t, const char *what) {
  const bool logical = t.scalar_type() == at::kBool;
  if (at::isFloat8Type(t.scalar_type()))
    raise(c10::str("pgstrategy ", what, ": ", t.scalar_type(),
                   " tensors move (broadcast, allgather, all_to_all, send, ...) but do not reduce"));
  if (op.op_ == c10d::ReduceOp::PREMUL_SUM && !at::isFloatingType(t.scalar_type()))
    raise(c10::str("pgstrategy ", what, ": ReduceOp.PREMUL_SUM multiplies by a factor: it needs a floating-point "
                   "tensor (float16, bfloat16, float32, float64); got ", t.scalar_type()));
  switch (op.op_) {
    case c10d::ReduceOp::PREMUL_SUM:  // the inputs are multiplied first (premultiply)
    case c10d::ReduceOp::SUM: return logical ? PG_MAX : PG_SUM;
    case c10d::ReduceOp::PRODUCT: return logical ? PG_MIN : PG_PROD;
    case c10d::ReduceOp::AVG: return PG_AVG;
    case c10d::ReduceOp::MIN: return PG_MIN;
    case c10d::ReduceOp::MAX: return PG_MAX;
    case c10d::ReduceOp::BAND: return PG_BAND;
    case c10d::ReduceOp::BOR: return PG_BOR;
    case c10d::ReduceOp::BXOR: return PG_BXOR;
    default: raise(c10::str("pgstrategy ", what, ": unknown ReduceOp ", static_cast<int>(op.op_)));
  }
}

bool is_premul(const c10d::ReduceOp &op) { return op.op_ == c10d::ReduceOp::PREMUL_SUM; }

void premultiply(const c10d::ReduceOp &op, const at::Tensor &buf) {
  if (is_premul(op)) buf.mul_(premul_factor(op, buf));
}

const at::Tensor &checked(const at::Tensor &t, const char *what) {
  if (!t.defined()) raise(c10::str("pgstrategy ", what, ": the tensor is undefined"));
  if (t.layout() != at::kStrided)
    raise(c10::str("pgstrategy ", what, ": only dense tensors are supported; got layout ", t.layout()));
  if (!t.is_cpu() && !t.is_cuda())
    raise(c10::str("pgstrategy ", what, ": tensors must be on cpu or cuda; got ", t.device()));
  dtype_of(t, what);
  return t;
}

void check_pair(const at::Tensor &output, const at::Tensor &input, const char *what) {
  checked(input, what);
  checked(output, what);
  if (output.scalar_type() != input.scalar_type() || output.device() != input.device())
    raise(c10::str("pgstrategy ", what, ": the output must be ", input.scalar_type(), " on ", input.device(),
                   " as the input; got ", output.scalar_type(), " on ", output.device()));
}

const at::Tensor &single(const std::vector<at::Tensor> &tensors, const char *what) {
  if (tensors.size() != 1)
    raise(c10::str("pgstrategy ", what, ": expected one tensor per rank; got ", tensors.size()));
  return checked(tensors[0], what);
}

void check_list(const std::vector<at::Tensor> &parts, std::size_t expected, const at::Tensor &like,
                const char *what, bool same_numel) {
  if (parts.size() != expected)
    raise(c10::str("pgstrategy ", what, ": expected a list of ", expected, " tensors; got ", parts.size()));
  const std::string elements = same_numel ? c10::str(" with ", like.numel(), " elements") : std::string();
  for (const at::Tensor &p : parts) {
    checked(p, what);
    if (p.scalar_type() != like.scalar_type() || p.device() != like.device() ||
        (same_numel && p.numel() != like.numel()))
      raise(c10::str("pgstrategy ", what, ": every tensor of the list must be ", like.scalar_type(), " on ",
                     like.device(), elements, "; got ", p.scalar_type(), " on ", p.device(),
                     same_numel ? c10::str(" with ", p.numel()) : std::string()));
  }
}

Layout layout_of(const std::vector<at::Tensor> &parts) {
  Layout l;
  std::size_t at = 0;
  for (const at::Tensor &p : parts) {
    l.counts.push_back(static_cast<std::size_t>(p.numel()));
    l.displs.push_back(at);
    at += l.counts.back();
    l.even = l.even && l.counts.back() == l.counts.front();
  }
  return l;
}

Layout split_rows(const at::Tensor &t, const std::vector<int64_t> &splits, int size, const char *side) {
  const char *what = "all_to_all_single";
  if (t.dim() == 0) raise(c10::str("pgstrategy ", what, ": the ", side, " must have a first dimension to split"));
  const int64_t rows = t.size(0), row = rows == 0 ? 0 : t.numel() / rows;
  Layout l;
  if (splits.empty()) {
    if (rows % size != 0)
      raise(c10::str("pgstrategy ", what, ": the ", side, " has ", rows, " rows, which do not split into ", size,
                     " equal parts; give ", side, "_split_sizes"));
    l.counts.assign(static_cast<std::size_t>(size), static_cast<std::size_t>(rows / size * row));
  } else {
    if (static_cast<int>(splits.size()) != size)
      raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes has ", splits.size(), " entries; expected one per rank (",
                     size, ")"));
    int64_t total = 0;
    for (std::size_t r = 0; r < splits.size(); ++r) {
      if (splits[r] < 0)
        raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes[", r, "] is ", splits[r], "; sizes are rows, >= 0"));
      total += splits[r];
      l.counts.push_back(static_cast<std::size_t>(splits[r] * row));
    }
    if (total != rows)
      raise(c10::str("pgstrategy ", what, ": ", side, "_split_sizes [", c10::Join(", ", splits), "] add up to ", total,
                     " rows; the ", side, " has ", rows));
  }
  std::size_t at = 0;
  for (std::size_t c : l.counts) {
    l.displs.push_back(at);
    at += c;
    l.even = l.even && c == l.counts.front();
  }
  return l;
}

at::Tensor readable(Operation &op, const at::Tensor &t) {
  at::Tensor c = t.contiguous();
  op.keep.push_back(c);
  return c;
}

at::Tensor writable(Operation &op, const at::Tensor &t) {
  at::Tensor c = t.contiguous();
  op.keep.push_back(c);
  if (!c.is_same(t)) op.finish.push_back([t, c] { t.copy_(c); });
  return c;
}

at::Tensor joined(Operation &op, const std::vector<at::Tensor> &parts, int64_t ranks) {
  std::vector<at::Tensor> blocks;  // part k as `ranks` rows: column k of the joined rows
  for (const at::Tensor &p : parts) blocks.push_back(p.reshape({ranks, p.numel() / ranks}));
  at::Tensor c = at::cat(blocks, 1).reshape({-1});
  op.keep.push_back(c);
  return c;
}

void copy_back(Operation &op, const at::Tensor &flat, const std::vector<at::Tensor> &parts, int64_t ranks) {
  op.finish.push_back([flat, parts, ranks] {
    const at::Tensor rows = flat.view({ranks, flat.numel() / ranks});
    int64_t offset = 0;
    for (const at::Tensor &p : parts) {
      const int64_t block = p.numel() / ranks;
      p.copy_(rows.narrow(1, offset, block).reshape(p.sizes()));
      offset += block;
    }
  });
}

at::Tensor split_back(Operation &op, const std::vector<at::Tensor> &parts, int64_t ranks) {
  int64_t total = 0;
  for (const at::Tensor &p : parts) total += p.numel();
  at::Tensor flat = at::empty({total}, parts.at(0).options());
  op.keep.push_back(flat);
  copy_back(op, flat, parts, ranks);
  return flat;
}

}  // namespace pgstrategy_torch
