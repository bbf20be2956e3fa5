// A started operation (process_group.h): waited for by the caller, or polled
// by the completion thread once its future was asked for.
#include <algorithm>
#include <exception>
#include <string>
#include <thread>
#include <utility>

#include "completion.h"
#include "errors.h"
#include "process_group.h"

namespace pgstrategy_torch {
namespace {

std::exception_ptr error_of(const std::string &message) {
  try {
    raise(message);
  } catch (...) {
    return std::current_exception();
  }
}

std::string timed_out(const char *name, std::chrono::milliseconds timeout) {
  return c10::str("pgstrategy ", name, ": timed out after ", static_cast<double>(timeout.count()) / 1000.0,
                  " s; the work stays valid: wait for it again");
}

}  // namespace

std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  const auto now = std::chrono::steady_clock::now();
  const std::chrono::milliseconds most = std::chrono::hours(24 * 365 * 100);
  return now + std::min(timeout, most);
}

Work::Work(std::shared_ptr<Comm> comm, pg_work *pending, Operation op, int rank)
    : c10d::Work(rank, op.type),
      comm_(std::move(comm)),
      pending_(pending),
      op_(std::move(op)),
      deadline_(deadline_after(op_.timeout)) {
  std::vector<c10::Device> devices;
  if (op_.device.is_cuda()) devices.push_back(op_.device);
  static const c10::TypePtr kTensors = c10::ListType::create(c10::TensorType::get());  // the future's type
  future_ = c10::make_intrusive<c10::ivalue::Future>(kTensors, devices);
  if (!pending_) {
    finished_ = true;
    publish();
  }
}

Work::~Work() {
  // A work dropped unfinished still owns the buffers the library uses: the
  // completion thread finishes it (torch's backends never wait here). No
  // other thread holds this work any more, so pending_ is read unlocked.
  if (!pending_) return;
  std::vector<at::Tensor> keep = std::move(op_.keep);
  keep.insert(keep.end(), op_.outputs.begin(), op_.outputs.end());
  finish_later(Leftover{comm_, pending_, std::move(keep), std::move(op_.finish)});
}

Work::Released Work::settle(pg_status st, const std::string &error) {
  if (st == PG_OK && (op_.type == c10d::OpType::RECV || op_.type == c10d::OpType::RECVANYSOURCE))
    pg_work_source(pending_, &source_);
  if (st == PG_OK) {
    try {
      for (auto &copy : op_.finish) copy();
    } catch (...) {
      error_ = std::current_exception();
    }
  } else {
    comm_->record_error(error);
    error_ = error_of(error);
    // MPI cannot cancel a collective (an abort, a failed peer): a late peer
    // may still write into these, so they stay allocated.
    keep_until_exit(op_.keep);
  }
  comm_->settled(pending_);
  pg_work_free(pending_);
  pending_ = nullptr;
  finished_ = true;  // last: error_ and source_ are read once it is set
  return Released{std::move(op_.keep), std::move(op_.finish)};
}

void Work::publish() {
  if (published_.exchange(true)) return;
  if (error_)
    future_->setError(error_);
  else
    future_->markCompleted(c10::IValue(op_.outputs));
}

bool Work::poll() {
  Released released;  // dropped after the unlock
  if (!finished_) {
    std::unique_lock<std::mutex> lock(comm_->mutex, std::try_to_lock);
    if (!lock.owns_lock()) return false;  // another thread calls the library: next time
    if (!finished_) {
      int done = 0;
      const pg_status st = pg_work_test(pending_, &done);
      if (!done && st == PG_OK) return false;
      released = settle(st, st == PG_OK ? std::string() : library_error(op_.name, st));
    }
  }
  publish();
  return true;
}

bool Work::claim_expiry(std::chrono::steady_clock::time_point now) {
  return watched_ && !finished_ && now >= deadline_ && !published_.exchange(true);
}

void Work::fail_future() {
  const std::string message = timed_out(op_.name, op_.timeout);
  comm_->record_error(message);
  future_->setError(error_of(message));
}

bool Work::expire_if_overdue(std::chrono::steady_clock::time_point now) {
  if (published_ || now < deadline_) return false;
  {
    // Under the mutex, so that no settle comes between: a work that finishes
    // later finds its future set and leaves it so.
    std::unique_lock<std::mutex> lock(comm_->mutex, std::try_to_lock);
    if (!lock.owns_lock() || !claim_expiry(now)) return false;
  }
  fail_future();  // outside the mutex: the future's callbacks may start operations
  return true;
}

bool Work::isCompleted() { return poll(); }

bool Work::isSuccess() const { return finished_ && !error_; }

std::exception_ptr Work::exception() const {
  // Unfinished: the timeout its future failed with, if it did.
  return finished_ ? error_ : future_->exception_ptr();
}

std::vector<at::Tensor> Work::result() { return op_.outputs; }

int Work::sourceRank() const {
  if (!finished_ || source_ < 0) raise("pgstrategy: sourceRank() is known once a receive has finished");
  return source_;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds limit = timeout == ::kNoTimeout ? op_.timeout : timeout;
  const auto deadline = deadline_after(limit);
  Released released;  // dropped after the unlock
  while (!finished_) {
    std::unique_lock<std::mutex> lock(comm_->mutex);
    if (finished_) break;
    // The completion thread rarely gets the mutex while this thread waits: a
    // watched future that falls due meanwhile is failed here.
    const auto now = std::chrono::steady_clock::now();
    if (claim_expiry(now)) {
      lock.unlock();
      fail_future();
      continue;
    }
    const double left_s = std::chrono::duration<double>(deadline - now).count();
    const pg_status st = pg_work_wait(pending_, std::clamp(left_s, 0.0, kWaitSlice_s));
    if (st != PG_ERR_TIMEOUT) {
      released = settle(st, st == PG_OK ? std::string() : library_error(op_.name, st));
      break;
    }
    if (left_s <= kWaitSlice_s) {
      const std::string message = timed_out(op_.name, limit);
      comm_->record_error(message);
      lock.unlock();
      raise(message);
    }
    lock.unlock();
    std::this_thread::yield();
  }
  publish();
  // The future is set by now: here, by the completion thread, or with the
  // timeout it failed with before the work finished (which the work's own
  // outcome overrides). On CUDA the caller's current stream waits for the
  // operation's stream.
  future_->wait();
  if (error_) std::rethrow_exception(error_);
  return true;
}

// A CPU work's future is set only once someone waits for or polls the work.
void Work::synchronize() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  if (!published_) {
    watched_ = true;
    complete_later(c10::intrusive_ptr<Work>::reclaim_copy(this));
  }
  return future_;
}

CoalescedWork::CoalescedWork(std::vector<c10::intrusive_ptr<pgstrategy_torch::Work>> works, int rank)
    : c10d::Work(rank, c10d::OpType::COALESCED), works_(std::move(works)) {}

bool CoalescedWork::isCompleted() {
  return std::all_of(works_.begin(), works_.end(), [](const auto &w) { return w->isCompleted(); });
}

bool CoalescedWork::isSuccess() const {
  return std::all_of(works_.begin(), works_.end(), [](const auto &w) { return w->isSuccess(); });
}

std::exception_ptr CoalescedWork::exception() const {
  for (const auto &w : works_)
    if (std::exception_ptr e = w->exception()) return e;
  return nullptr;
}

std::vector<at::Tensor> CoalescedWork::result() {
  std::vector<at::Tensor> outputs;
  for (const auto &w : works_)
    for (const at::Tensor &t : w->result()) outputs.push_back(t);
  return outputs;
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  for (const auto &w : works_) w->wait(timeout);
  return true;
}

void CoalescedWork::synchronize() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> CoalescedWork::getFuture() {
  static const c10::TypePtr kTensors = c10::ListType::create(c10::TensorType::get());
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(c10::FutureType::create(kTensors));
  for (const auto &w : works_) futures.push_back(w->getFuture());
  // An error of any of them is the whole one's (collectAll passes it on; then skips the callback).
  return c10::collectAll(futures)->then([outputs = result()](c10::ivalue::Future &) { return c10::IValue(outputs); },
                                        kTensors);
}

}  // namespace pgstrategy_torch
