// What the collectives do with torch's tensors before the library sees them:
// the checks (dtype, layout, device, list lengths and sizes), the mapping of
// dtypes and reduce ops, and the staging buffers the library reads and writes
// (with the copies back once an operation finished).
#pragma once

#include <pg_strategy.h>

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "process_group.h"

namespace pgstrategy_torch {

// --- dtypes and reduce ops ---------------------------------------------------

// The library's dtype of `t`; raises for one it does not have.
pg_dtype dtype_of(const at::Tensor &t, const char *what);
// The library's op for torch's `op` on `t` (bool: the logical reductions;
// PREMUL_SUM: the sum, of inputs premultiplied first).
pg_op op_of(const c10d::ReduceOp &op, const at::Tensor &t, const char *what);
// PREMUL_SUM multiplies each rank's input by a factor before the sum (FSDP2's
// gradient divide factor): premultiply scales `buf` in place, a buffer the
// operation owns or overwrites anyway; an input the caller keeps is copied
// first (is_premul). Other ops leave `buf` as it is.
bool is_premul(const c10d::ReduceOp &op);
void premultiply(const c10d::ReduceOp &op, const at::Tensor &buf);

// --- checks ------------------------------------------------------------------

// Checks a tensor the library will see: dense, on a CPU or CUDA device, of a
// dtype it has.
const at::Tensor &checked(const at::Tensor &t, const char *what);
// The output of a single-tensor form (allgather_into_tensor, ...) on the
// input's device, of its dtype: the strategy is chosen by the input's device.
void check_pair(const at::Tensor &output, const at::Tensor &input, const char *what);
// The one tensor of a list torch passes per rank.
const at::Tensor &single(const std::vector<at::Tensor> &tensors, const char *what);
// A list of `expected` tensors of like's dtype and device, and, where
// `same_numel`, of its element count (the uneven forms take any sizes).
void check_list(const std::vector<at::Tensor> &parts, std::size_t expected, const at::Tensor &like,
                const char *what, bool same_numel = true);

inline std::size_t count_of(const at::Tensor &t) { return static_cast<std::size_t>(t.numel()); }

// --- layouts -----------------------------------------------------------------

// The element counts of `parts` and where each starts once they are joined.
struct Layout {
  std::vector<std::size_t> counts, displs;
  bool even = true;  // every count the same
};

Layout layout_of(const std::vector<at::Tensor> &parts);
// all_to_all_single's blocks of `t`, cut along its first dimension by
// `splits` (rows per rank; empty: equal parts).
Layout split_rows(const at::Tensor &t, const std::vector<int64_t> &splits, int size, const char *side);

// --- staging: what the library reads and writes for a tensor ---------------
//
// Each keeps what it makes in `op` until the operation has finished. A joined
// buffer has `ranks` rows: row r holds block r of every part, one after the
// other (FSDP2's coalesced forms, whose tensors hold one block per rank);
// with one row, the parts one after the other.

// The tensor itself when contiguous, else a contiguous copy.
at::Tensor readable(Operation &op, const at::Tensor &t);
// The tensor itself when contiguous, else a contiguous copy (with its values,
// for in-place operations) that is copied back once the operation finished.
at::Tensor writable(Operation &op, const at::Tensor &t);
// One contiguous buffer holding `parts`, joined by rank.
at::Tensor joined(Operation &op, const std::vector<at::Tensor> &parts, int64_t ranks = 1);
// Once the operation finished, `flat` (as `joined` makes it) is copied into `parts`.
void copy_back(Operation &op, const at::Tensor &flat, const std::vector<at::Tensor> &parts, int64_t ranks = 1);
// A buffer for `parts` joined by rank, copied into them once the operation finished.
at::Tensor split_back(Operation &op, const std::vector<at::Tensor> &parts, int64_t ranks = 1);

}  // namespace pgstrategy_torch
