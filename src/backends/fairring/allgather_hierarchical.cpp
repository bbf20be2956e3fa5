// allgather, "hierarchical" (regular layouts, G > 1, from
// PGS_FAIRRING_MIN_BYTES): a slice is the same range of elements of every
// rank's block. Each rank allgathers its range over its rail (M blocks) into a
// shared slot; the node then copies every local rank's M ranges into place.
#include <cstring>

#include "backends/fairring/plan.h"

namespace pg::fairring {
namespace {

class AllgatherPlan final : public BlockPlan {
 public:
  using BlockPlan::BlockPlan;

  bool reduces() const override { return false; }
  bool gathers() const override { return true; }
  std::size_t shard_offset(std::size_t, int) const override { return 0; }
  char *result_in_place(std::size_t) const override { return nullptr; }

  pg_status rail_step(std::size_t k, char *shard, Backend &rail, std::unique_ptr<Request> *out) override {
    const char *mine = send() + slice_begin(k) * esize;
    if (shape.nodes == 1) {
      std::memcpy(shard, mine, slice_count(k) * esize);
      return PG_OK;
    }
    return rail.start(CollArgs::movement(Coll::allgather, mine, shard, slice_count(k), args.dtype), out);
  }

  void finish(std::size_t, char *) override {}
};

}  // namespace

std::unique_ptr<Plan> allgather_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes) {
  auto plan = std::make_unique<AllgatherPlan>(args, shape);
  // A rank's rail result (one range of each of M blocks) fills one slot.
  plan->cut(slot_bytes / (plan->esize * static_cast<std::size_t>(shape.nodes)));
  plan->gathered_bytes = args.count * plan->esize * static_cast<std::size_t>(shape.size);
  return plan;
}

}  // namespace pg::fairring
