// A started operation (process_group.h): waited for by the caller, or polled
// by the completion thread once its future was asked for.
#include <exception>
#include <string>
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

}  // namespace

Work::Work(std::shared_ptr<Comm> comm, pg_work *pending, Operation op, int rank)
    : c10d::Work(rank, op.type), comm_(std::move(comm)), pending_(pending), op_(std::move(op)) {
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
  // A work dropped unfinished still owns the buffers the library uses. No
  // other thread holds this work any more, so pending_ is read unlocked.
  if (!pending_) return;
  std::lock_guard<std::mutex> lock(comm_->mutex);
  pg_work_wait(pending_, -1);
  pg_work_free(pending_);
}

Work::Released Work::settle(pg_status st, const std::string &error) {
  if (st == PG_OK) {
    try {
      for (auto &copy : op_.finish) copy();
    } catch (...) {
      error_ = std::current_exception();
    }
  } else {
    comm_->record_error(error);
    error_ = error_of(error);
  }
  pg_work_free(pending_);
  pending_ = nullptr;
  finished_ = true;
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
  if (published_) return true;
  Released released;  // dropped after the unlock
  {
    std::lock_guard<std::mutex> lock(comm_->mutex);
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

bool Work::isCompleted() { return poll(); }

bool Work::isSuccess() const { return published_ && !error_; }

std::exception_ptr Work::exception() const { return error_; }

std::vector<at::Tensor> Work::result() { return op_.outputs; }

bool Work::wait(std::chrono::milliseconds timeout) {
  const std::chrono::milliseconds limit = timeout == ::kNoTimeout ? op_.timeout : timeout;
  Released released;  // dropped after the unlock
  {
    std::unique_lock<std::mutex> lock(comm_->mutex);
    if (!finished_) {
      const double seconds = static_cast<double>(limit.count()) / 1000.0;
      const pg_status st = pg_work_wait(pending_, seconds);
      if (st == PG_ERR_TIMEOUT) {
        const std::string message =
            c10::str("pgstrategy ", op_.name, ": timed out after ", seconds, " s (", pg_last_error(),
                     "); the work stays valid: wait for it again");
        lock.unlock();
        raise(message);
      }
      released = settle(st, st == PG_OK ? std::string() : library_error(op_.name, st));
    }
  }
  publish();
  // Returns once the future is set (by this thread or the completion thread),
  // raises its error; on CUDA the caller's current stream waits for the
  // operation's stream.
  future_->waitAndThrow();
  return true;
}

// A CPU work's future is set only once someone waits for or polls the work.
void Work::synchronize() { wait(); }

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  if (!published_) complete_later(c10::intrusive_ptr<Work>::reclaim_copy(this));
  return future_;
}

}  // namespace pgstrategy_torch
