// fairring's schedule (schedule.h) without MPI: a fake node transport whose
// peers lag behind, and a fake rail whose requests take several polls, run the
// real schedule over real plans. Every slice passes publish, reduce, the rail
// and gather in that order; each step takes the node's slices in order across
// operations; no more than PGS_FAIRRING_INFLIGHT slices are on the rails at
// once (and that many are, so it pipelines); a failure fails the operation,
// every later one, and tells the node.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/fairring/plan.h"
#include "backends/fairring/schedule.h"
#include "util/status.h"

namespace {

using pg::CollArgs;
using pg::Coll;
using pg::fairring::NodeTransport;
using pg::fairring::Plan;
using pg::fairring::Schedule;
using pg::fairring::Shape;

enum Step { kPublish, kReduce, kFinished, kGather, kSteps };

// The node's side: each step of slice t runs only after `lag` polls (peers
// that have not got there yet). Records the node's slices in the order each
// step ran them.
class FakeNode final : public NodeTransport {
 public:
  explicit FakeNode(int lag) : lag_(lag) {}

  std::size_t slot_bytes() const override { return 64; }
  pg_status publish(const Plan &plan, std::size_t k, bool *done) override {
    return poll(kPublish, plan.first_tick + k, done);
  }
  pg_status reduce(const Plan &plan, std::size_t k, char **shard, bool *done) override {
    *shard = shards_[(plan.first_tick + k) % 8];
    return poll(kReduce, plan.first_tick + k, done);
  }
  pg_status finished(const Plan &plan, std::size_t k) override {
    ran_[kFinished].push_back(plan.first_tick + k);
    return PG_OK;
  }
  pg_status gather(const Plan &plan, std::size_t k, bool *done) override {
    return poll(kGather, plan.first_tick + k, done);
  }
  pg_status released(const Plan &, bool *done) override {
    *done = true;
    return PG_OK;
  }
  void fail() override { told_failed = true; }
  bool failed() const override { return told_failed || peer_failed; }

  const std::vector<std::uint64_t> &ran(Step s) const { return ran_[s]; }
  bool told_failed = false, peer_failed = false;

 private:
  pg_status poll(Step s, std::uint64_t tick, bool *done) {
    *done = ++polls_[{s, tick}] > lag_;
    if (*done) ran_[s].push_back(tick);
    return PG_OK;
  }
  const int lag_;
  std::map<std::pair<int, std::uint64_t>, int> polls_;
  std::vector<std::uint64_t> ran_[kSteps];
  char shards_[8][64] = {};
};

// The rail: nonblocking allreduces that finish after `polls` tests; the
// `fail_at`-th request (from 1) fails. The requests the schedule leaves behind
// after a failure (to MPI, in real use) are freed with the rail.
class FakeRail final : public pg::Backend {
 public:
  FakeRail(int polls, int fail_at) : polls_(polls), fail_at_(fail_at) {}
  ~FakeRail() override {
    while (!alive_.empty()) delete *alive_.begin();
  }
  bool implements(Coll) const override { return true; }
  pg_status run(const CollArgs &) override { return PG_ERR_UNSUPPORTED; }
  pg_status start(const CollArgs &a, std::unique_ptr<pg::Request> *out) override {
    EXPECT_EQ(a.coll, Coll::allreduce);
    EXPECT_TRUE(a.in_place) << "the rail reduces the shard in place";
    *out = std::make_unique<Pending>(*this, ++started_ == fail_at_);
    most_on_rail = std::max(most_on_rail, ++on_rail_);
    return PG_OK;
  }
  int most_on_rail = 0;

 private:
  class Pending final : public pg::Request {
   public:
    Pending(FakeRail &rail, bool fails) : rail_(rail), fails_(fails) { rail_.alive_.insert(this); }
    ~Pending() override { rail_.alive_.erase(this); }
    pg_status test(bool *done) override {
      *done = ++tests_ >= rail_.polls_;
      if (*done) --rail_.on_rail_;
      if (*done && fails_) return pg::fail(PG_ERR_BACKEND, "the rail broke");
      return PG_OK;
    }

   private:
    FakeRail &rail_;
    const bool fails_;
    int tests_ = 0;
  };
  const int polls_, fail_at_;
  int started_ = 0, on_rail_ = 0;
  std::set<Pending *> alive_;
};

// An allreduce of `count` float32 on local rank 0 of a 2 x 2 layout: with
// 64-byte slots, slices of 16 elements, two parts each.
std::unique_ptr<Plan> plan_of(std::size_t count, const Shape &shape) {
  return pg::fairring::allreduce_plan(
      CollArgs::reduction(Coll::allreduce, nullptr, nullptr, count, PG_FLOAT32, PG_SUM).placed(0), shape, 64);
}

Shape two_by_two() {
  Shape s;
  s.local_size = 2;
  s.nodes = 2;
  s.size = 4;
  s.rank_of = {0, 1, 2, 3};
  return s;
}

// The real schedule over a fake node and a fake rail, on the 2 x 2 layout.
struct FakeRun {
  FakeRun(int lag, int polls, int fail_at, int inflight)
      : node(lag), rail(polls, fail_at), schedule(node, rail, inflight) {}
  // Starts an allreduce of `count` float32 (see plan_of).
  std::unique_ptr<pg::Request> start(std::size_t count) { return schedule.start(plan_of(count, shape)); }

  const Shape shape = two_by_two();  // the plans refer to it
  FakeNode node;
  FakeRail rail;
  Schedule schedule;
};

TEST(FairringSchedule, SlicesPassEveryStepInOrderWithinTheRailWindow) {
  FakeRun run(/*lag=*/3, /*polls=*/5, /*fail_at=*/0, /*inflight=*/2);
  auto first = run.start(100);   // 7 slices: the node's 0..6
  auto second = run.start(40);   // 3 slices: 7..9
  EXPECT_EQ(second->wait(), PG_OK);  // waiting for the later one moves the earlier one too
  bool done = false;
  EXPECT_EQ(first->test(&done), PG_OK);
  EXPECT_TRUE(done);

  const std::vector<std::uint64_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int s = 0; s < kSteps; ++s) EXPECT_EQ(run.node.ran(Step(s)), all) << "step " << s;
  EXPECT_EQ(run.rail.most_on_rail, 2) << "PGS_FAIRRING_INFLIGHT slices on the rails at once";
}

TEST(FairringSchedule, ARailFailureFailsThisAndEveryLaterOperationAndTellsTheNode) {
  FakeRun run(/*lag=*/1, /*polls=*/2, /*fail_at=*/3, /*inflight=*/2);
  auto op = run.start(100);
  EXPECT_EQ(op->wait(), PG_ERR_BACKEND);
  EXPECT_NE(pg::last_error().find("the rail broke"), std::string::npos) << pg::last_error();
  EXPECT_TRUE(run.node.told_failed);
  auto later = run.start(16);
  bool done = false;
  EXPECT_EQ(later->test(&done), PG_ERR_BACKEND);
  EXPECT_TRUE(done);
}

TEST(FairringSchedule, APeerFailureFailsTheOperationsOnThisRank) {
  FakeRun run(/*lag=*/1, /*polls=*/1, /*fail_at=*/0, /*inflight=*/4);
  auto op = run.start(100);
  run.node.peer_failed = true;
  EXPECT_EQ(op->wait(), PG_ERR_BACKEND);
  EXPECT_NE(pg::last_error().find("another rank of this node failed"), std::string::npos) << pg::last_error();
}

TEST(FairringSchedule, AnEmptyOperationIsDoneAtOnce) {
  FakeRun run(/*lag=*/0, /*polls=*/1, /*fail_at=*/0, /*inflight=*/1);
  auto op = run.start(0);
  bool done = false;
  EXPECT_EQ(op->test(&done), PG_OK);
  EXPECT_TRUE(done);
  EXPECT_TRUE(run.node.ran(kPublish).empty());
}

}  // namespace
