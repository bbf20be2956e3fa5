// reduce_scatter, "hierarchical" (regular layouts, G > 1, from
// PGS_FAIRRING_MIN_BYTES): a slice is the same range of elements of every
// rank's block. Inside the node, local rank l sums the blocks of its rail's
// ranks (M blocks) from every local rank; the rail then reduce-scatters them,
// so each rank gets its own block. Nothing is gathered.
#include "backends/fairring/plan.h"
#include "util/reduce.h"

namespace pg::fairring {
namespace {

class ReduceScatterPlan final : public BlockPlan {
 public:
  using BlockPlan::BlockPlan;

  bool reduces() const override { return true; }
  bool gathers() const override { return false; }
  std::size_t shard_offset(std::size_t k, int p) const override {
    return static_cast<std::size_t>(p) * shard_len(k, p);
  }

  // On one node the shard is this rank's own block: it is reduced into place.
  char *result_in_place(std::size_t k) const override {
    return shape.nodes == 1 ? recv() + slice_begin(k) * esize : nullptr;
  }

  pg_status rail_step(std::size_t k, char *shard, Backend &rail, std::unique_ptr<Request> *out) override {
    if (shape.nodes == 1) return PG_OK;
    return rail.start(CollArgs::reduction(Coll::reduce_scatter, shard, recv() + slice_begin(k) * esize,
                                          slice_count(k), args.dtype, combine_op()),
                      out);
  }

  void finish(std::size_t k, char *) override {
    reduce_finish(args.dtype, args.op, recv() + slice_begin(k) * esize, slice_count(k), shape.size);
  }
};

}  // namespace

std::unique_ptr<Plan> reduce_scatter_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes) {
  auto plan = std::make_unique<ReduceScatterPlan>(args, shape);
  // A rank's contribution to a slice (every block's range) fills one slot.
  plan->cut(slot_bytes / (plan->esize * static_cast<std::size_t>(shape.size)));
  return plan;
}

}  // namespace pg::fairring
