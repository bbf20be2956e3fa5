#include "backends/fairring/schedule.h"

#include <algorithm>

#include "util/poll.h"
#include "util/status.h"

namespace pg::fairring {

// One started operation: how far each of its slices has got.
class Schedule::Operation final : public Request {
 public:
  Operation(Schedule &schedule, std::unique_ptr<Plan> plan) : schedule_(schedule), plan_(std::move(plan)) {}
  ~Operation() override {
    std::lock_guard<std::mutex> lock(schedule_.mutex_);
    auto &active = schedule_.active_;
    active.erase(std::remove(active.begin(), active.end(), this), active.end());
  }

  pg_status test(bool *done) override {
    bool moved = false;
    return step(done, &moved);
  }

  // Backs off only while nothing moves.
  pg_status wait() override {
    Interruption interruption;
    Backoff backoff;
    while (true) {
      bool done = false, moved = false;
      pg_status st = step(&done, &moved);
      if (done) return st;
      if (moved) {
        backoff.moved();
        continue;
      }
      PG_CHECK(interruption.check());
      backoff.idle();
    }
  }

 private:
  friend class Schedule;

  struct OnRail {
    std::size_t k;
    char *shard;
    std::unique_ptr<Request> request;  // empty when the rail step was done at once
  };

  pg_status step(bool *done, bool *moved) {
    std::lock_guard<std::mutex> lock(schedule_.mutex_);
    if (!finished_) schedule_.progress(moved);
    *done = finished_;
    return status_ == PG_OK ? PG_OK : fail_message(status_, message_);
  }

  bool complete() const { return gathered_ == plan_->slices; }

  Schedule &schedule_;
  std::unique_ptr<Plan> plan_;
  // Slices that have passed each step: published >= reduced >= on rails' end >= gathered.
  std::size_t published_ = 0, reduced_ = 0, finished_rails_ = 0, gathered_ = 0;
  std::deque<OnRail> rails_;
  bool finished_ = false;
  pg_status status_ = PG_OK;
  std::string message_;  // why it failed
};

Schedule::~Schedule() {
  for (auto &request : orphans_) static_cast<void>(request.release());
}

std::unique_ptr<Request> Schedule::start(std::unique_ptr<Plan> plan) {
  std::lock_guard<std::mutex> lock(mutex_);
  plan->first_tick = next_tick_;
  next_tick_ += plan->slices;
  auto op = std::make_unique<Operation>(*this, std::move(plan));
  if (failure_ == PG_OK && op->plan_->slices > 0) {
    // Its peers start it too and will wait for its slices: a failure here fails the node's schedule.
    const pg_status st = node_.begin(*op->plan_);
    if (st != PG_OK) fail_all(st, last_error());
  }
  if (failure_ != PG_OK) {
    op->status_ = failure_;
    op->message_ = failure_message_;
  }
  if (op->plan_->slices == 0 || failure_ != PG_OK) op->finished_ = true;
  else active_.push_back(op.get());
  return op;
}

void Schedule::fail_all(pg_status st, const std::string &message) {
  failure_ = st;
  failure_message_ = "fairring: " + message;
  node_.fail();
  for (Operation *op : active_) {
    op->status_ = failure_;
    op->message_ = failure_message_;
    op->finished_ = true;
    for (Operation::OnRail &r : op->rails_)
      if (r.request) orphans_.push_back(std::move(r.request));
    op->rails_.clear();
  }
  active_.clear();
}

void Schedule::progress(bool *moved) {
  if (failure_ == PG_OK && node_.failed())
    fail_all(PG_ERR_BACKEND, "another rank of this node failed in the schedule (its own message says why)");
  // first[s]: every older operation has taken all its slices through step s,
  // so this one may take its slices through it (the transport's counters
  // count slices in node order).
  bool first[4] = {true, true, true, true};
  for (Operation *op : active_) {
    advance(*op, first, moved);
    if (op->status_ != PG_OK) {
      *moved = true;
      return fail_all(op->status_, last_error());
    }
  }
  for (auto it = active_.begin(); it != active_.end();) {
    Operation *op = *it;
    bool released = false;
    if (op->complete()) {
      const pg_status st = node_.released(*op->plan_, &released);
      if (st != PG_OK) {
        *moved = true;
        return fail_all(st, last_error());
      }
    }
    if (released) {
      op->finished_ = true;
      it = active_.erase(it);
      *moved = true;
    } else {
      ++it;
    }
  }
}

namespace {

// Runs one transport step: whether it ran. A failure is left in *status.
template <typename Step>
bool ran(pg_status *status, Step step) {
  bool done = false;
  *status = step(&done);
  return *status == PG_OK && done;
}

}  // namespace

void Schedule::advance(Operation &op, bool first[4], bool *moved) {
  Plan &plan = *op.plan_;
  const std::size_t n = plan.slices;
  pg_status *status = &op.status_;
  if (op.status_ == PG_OK) {
    while (first[0] && op.published_ < n &&
           ran(status, [&](bool *done) { return node_.publish(plan, op.published_, done); })) {
      ++op.published_;
      *moved = true;
    }
    char *shard = nullptr;
    while (op.status_ == PG_OK && first[1] && op.reduced_ < op.published_ && on_rails_ < inflight_ &&
           ran(status, [&](bool *done) { return node_.reduce(plan, op.reduced_, &shard, done); })) {
      const std::size_t k = op.reduced_++;
      std::unique_ptr<Request> request;
      op.status_ = plan.rail_step(k, shard, rail_, &request);
      if (op.status_ != PG_OK) break;
      if (request) ++on_rails_;
      op.rails_.push_back({k, shard, std::move(request)});
      *moved = true;
    }
    while (first[2] && op.status_ == PG_OK && !op.rails_.empty()) {
      Operation::OnRail &front = op.rails_.front();
      if (front.request) {
        bool done = false;
        op.status_ = front.request->test(&done);
        if (op.status_ != PG_OK || !done) break;
        --on_rails_;
      }
      plan.finish(front.k, front.shard);
      op.status_ = node_.finished(plan, front.k);
      if (op.status_ != PG_OK) break;
      ++op.finished_rails_;
      op.rails_.pop_front();
      *moved = true;
    }
    while (op.status_ == PG_OK && first[3] && op.gathered_ < op.finished_rails_ &&
           ran(status, [&](bool *done) { return node_.gather(plan, op.gathered_, done); })) {
      ++op.gathered_;
      *moved = true;
    }
  }
  first[0] = first[0] && op.published_ == n;
  first[1] = first[1] && op.reduced_ == n;
  first[2] = first[2] && op.finished_rails_ == n;
  first[3] = first[3] && op.gathered_ == n;
}

}  // namespace pg::fairring
