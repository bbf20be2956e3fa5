// allreduce, "hierarchical" (regular layouts, G > 1, from PGS_FAIRRING_MIN_BYTES):
// each slice is reduce-scattered inside the node (local rank l sums part l of
// the slice from every local rank), part l is allreduced over rail l, and the
// node all-gathers the parts.
#include <cstring>

#include "backends/fairring/plan.h"
#include "util/reduce.h"

namespace pg::fairring {
namespace {

class AllreducePlan final : public Plan {
 public:
  using Plan::Plan;

  bool reduces() const override { return true; }
  bool gathers() const override { return true; }
  std::size_t pieces() const override { return 1; }
  std::size_t piece_len(std::size_t k, int p) const override { return part(k, p + 1) - part(k, p); }
  std::size_t piece_offset(std::size_t k, int p, std::size_t) const override {
    return slice_begin(k) + part(k, p);
  }
  std::size_t shard_offset(std::size_t k, int p) const override { return part(k, p); }

  // This rank's part is reduced where it ends up: written there, private,
  // rather than into the slot its peers read a few slices ago, whose lines
  // each write must first take back from their caches (docs/algorithms.md).
  char *result_in_place(std::size_t k) const override { return recv() + piece_offset(k, shape.local, 0) * esize; }

  pg_status rail_step(std::size_t k, char *shard, Backend &rail, std::unique_ptr<Request> *out) override {
    const std::size_t n = piece_len(k, shape.local);
    if (shape.nodes == 1 || n == 0) return PG_OK;
    return rail.start(CollArgs::reduction(Coll::allreduce, shard, shard, n, args.dtype, combine_op()).placed(shape.node),
                      out);
  }

  void finish(std::size_t k, char *shard) override {
    reduce_finish(args.dtype, args.op, shard, piece_len(k, shape.local), shape.size);
  }

 private:
  // Part p of slice k starts at element part(k, p) of the slice (parts differ by one at most).
  std::size_t part(std::size_t k, int p) const {
    return slice_count(k) * static_cast<std::size_t>(p) / static_cast<std::size_t>(shape.local_size);
  }
};

}  // namespace

std::unique_ptr<Plan> allreduce_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes) {
  auto plan = std::make_unique<AllreducePlan>(args, shape);
  // Slices of a multiple of G elements where a slot holds that many, so that
  // every slice but the last splits into G equal parts (NCCL's reduce-scatter
  // needs them on CUDA).
  const std::size_t fits = slot_bytes / plan->esize, g = static_cast<std::size_t>(shape.local_size);
  plan->cut(fits >= g ? fits / g * g : fits);
  plan->gathered_bytes = args.count * plan->esize;
  return plan;
}

}  // namespace pg::fairring
