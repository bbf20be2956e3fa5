// allreduce, "leaders" (irregular layouts, from PGS_FAIRRING_MIN_BYTES): the
// node reduces to its first rank, the first ranks of all nodes (rail 0)
// allreduce, and each node broadcasts the result. Three steps, each started
// as a request of the node's or the rail's instance once the one before it
// has finished: the whole operation is nonblocking. Several may be in
// flight: each starts once the one before it has started its broadcast
// (LeadersOrder), and waits for that without moving it (the library moves
// the works started before).
//
// A first rank whose step across nodes fails returns the failure and never
// broadcasts; its node's other ranks, waiting in the broadcast, learn of it
// from the strategy's alarm (docs/errors.md) and return PG_ERR_BACKEND
// naming it.
#include "backends/fairring/fairring_internal.h"
#include "util/reduce.h"
#include "util/status.h"

namespace pg::fairring {
namespace {

class Leaders final : public Request {
 public:
  Leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail, LeadersOrder &order, bool fail_across)
      : a_(a), local_(shape.local), node_index_(shape.node), rank_(shape.rank), size_(shape.size), node_(node),
        rail_(rail), order_(order), ticket_(order.issued++), fail_across_(fail_across) {}

  // Starts the first step now when the allreduce before it has started its
  // broadcast, else at a later test.
  pg_status start() { return checked(begin_if_first()); }

  pg_status test(bool *done) override {
    *done = false;
    return checked(advance(done));
  }

 private:
  enum class Stage { waiting, reduce, across, broadcast };

  pg_status begin_if_first() {
    if (order_.broken)
      return fail(PG_ERR_BACKEND,
                  "fairring: an earlier allreduce (leaders) of this strategy failed; this one cannot run");
    if (order_.broadcasting != ticket_) return PG_OK;
    stage_ = Stage::reduce;
    const CollArgs reduce = CollArgs::reduction(Coll::reduce, a_.send, a_.recv, a_.count, a_.dtype, combining_op(a_.op), 0);
    return node_.start(reduce.placed(local_), &step_);
  }

  pg_status advance(bool *done) {
    while (true) {
      if (stage_ == Stage::waiting) {
        PG_CHECK(begin_if_first());
        if (stage_ == Stage::waiting) return PG_OK;
      }
      bool finished = false;
      PG_CHECK(step_->test(&finished));
      if (!finished) return PG_OK;
      switch (stage_) {
        case Stage::waiting: break;
        case Stage::reduce:
          if (local_ == 0) {
            stage_ = Stage::across;
            const CollArgs across =
                CollArgs::reduction(Coll::allreduce, a_.recv, a_.recv, a_.count, a_.dtype, combining_op(a_.op));
            PG_CHECK(rail_.start(across.placed(node_index_), &step_));
            break;
          }
          PG_CHECK(broadcast());
          break;
        case Stage::across:
          if (fail_across_)  // after its MPI step, so that no other node waits for it
            return fail(PG_ERR_BACKEND,
                        "fairring: rank %d failed its step across nodes of this allreduce (leaders) on request "
                        "(PGS_FAIRRING_FAULT)",
                        rank_);
          reduce_finish(a_.dtype, a_.op, a_.recv, a_.count, size_);
          PG_CHECK(broadcast());
          break;
        case Stage::broadcast:
          *done = true;
          return PG_OK;
      }
    }
  }

  // Issued, then counted: the next allreduce may start, and its steps come
  // after this one's on both communicators (the library starts and tests a
  // strategy's collectives one thread at a time, core/engine.h). A broadcast
  // that fails to start breaks the order.
  pg_status broadcast() {
    PG_CHECK(node_.start(CollArgs::movement(Coll::broadcast, nullptr, a_.recv, a_.count, a_.dtype, 0), &step_));
    stage_ = Stage::broadcast;
    ++order_.broadcasting;
    return PG_OK;
  }

  // A failure before the broadcast leaves the later allreduces unable to start.
  pg_status checked(pg_status st) {
    if (st != PG_OK && stage_ != Stage::broadcast) order_.broken = true;
    return st;
  }

  const CollArgs a_;
  const int local_, node_index_, rank_, size_;  // this rank on its node, its node, in the strategy
  Backend &node_, &rail_;
  LeadersOrder &order_;
  const std::uint64_t ticket_;  // its place among the backend's leaders' allreduces
  const bool fail_across_;
  Stage stage_ = Stage::waiting;
  std::unique_ptr<Request> step_;  // the current step's request
};

}  // namespace

pg_status start_leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail, LeadersOrder &order,
                        bool fail_across, std::unique_ptr<Request> *out) {
  auto op = std::make_unique<Leaders>(a, shape, node, rail, order, fail_across);
  PG_CHECK(op->start());
  *out = std::move(op);
  return PG_OK;
}

}  // namespace pg::fairring
