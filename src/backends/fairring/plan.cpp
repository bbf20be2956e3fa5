#include "backends/fairring/plan.h"

#include "util/dtype.h"

namespace pg::fairring {

Plan::Plan(const CollArgs &a, const Shape &s) : args(a), shape(s), esize(dtype_size(a.dtype)) {}

std::size_t Plan::slice_count(std::size_t k) const {
  const std::size_t begin = slice_begin(k);
  return args.count - begin < slice_len ? args.count - begin : slice_len;
}

void Plan::cut(std::size_t per_slice) {
  slice_len = per_slice > 0 ? per_slice : 1;
  slices = (args.count + slice_len - 1) / slice_len;
}

}  // namespace pg::fairring
