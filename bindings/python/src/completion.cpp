#include "completion.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "process_group.h"

namespace pgstrategy_torch {
namespace {

using std::chrono::microseconds;

// Tests a dropped work once, without blocking: true once it finished and was freed.
bool finish(Leftover &left) {
  pg_status st = PG_OK;
  {
    std::unique_lock<std::mutex> lock(left.comm->mutex, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    int done = 0;
    st = pg_work_test(left.pending, &done);
    if (!done && st == PG_OK) return false;
    left.comm->settled(left.pending);
    pg_work_free(left.pending);
  }
  if (st == PG_OK) {
    try {
      for (auto &step : left.finish) step();
    } catch (...) {  // nobody is left to tell
    }
  }
  // Dropped outside the group's mutex (a tensor Python made takes the GIL).
  if (st != PG_OK) keep_until_exit(std::move(left.keep));
  left.keep.clear();
  left.finish.clear();
  return true;
}

class Completion {
 public:
  void watch(c10::intrusive_ptr<Work> work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {  // exit has begun: nothing may complete it any more, nor release it
      work.release();
      return;
    }
    works_.push_back(std::move(work));
    wake();
  }

  void adopt(Leftover left) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {  // as for watch: never finished, never released
      new Leftover(std::move(left));
      return;
    }
    leftovers_.push_back(std::move(left));
    wake();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
      wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    // Leaked on purpose: releasing them would release tensors after Python.
    new std::deque<c10::intrusive_ptr<Work>>(std::move(works_));
    new std::vector<Leftover>(std::move(leftovers_));
  }

 private:
  // Under mutex_.
  void wake() {
    fresh_ = true;
    if (!thread_.joinable()) thread_ = std::thread(&Completion::loop, this);
    wake_.notify_one();
  }

  // Rounds over the works, at once while they finish; while none does, the
  // pause between rounds doubles from 10 us to 50 us (a new work ends it).
  // MPI moves a nonblocking operation only while it is tested: a DDP step on
  // mpi took 8-10 % longer with pauses of up to 200 us (docs/performance.md).
  void loop() {
    microseconds pause{0};
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      const auto busy = [this] { return stopped_ || !works_.empty() || !leftovers_.empty(); };
      if (pause.count() == 0)
        wake_.wait(lock, busy);
      else
        wake_.wait_for(lock, pause, [this] { return stopped_ || fresh_; });
      if (stopped_) return;
      fresh_ = false;
      std::deque<c10::intrusive_ptr<Work>> round = works_;
      std::vector<Leftover> lefts = std::move(leftovers_);
      leftovers_.clear();
      lock.unlock();

      const auto now = std::chrono::steady_clock::now();
      std::vector<Work *> done;
      for (auto &work : round)
        if (work->poll() || work->expire_if_overdue(now)) done.push_back(work.get());
      std::vector<Leftover> unfinished;
      for (Leftover &left : lefts)
        if (!finish(left)) unfinished.push_back(std::move(left));
      const bool progressed = !done.empty() || unfinished.size() < lefts.size();

      lock.lock();
      for (Work *finished : done)
        works_.erase(std::find_if(works_.begin(), works_.end(), [&](const auto &w) { return w.get() == finished; }));
      for (Leftover &left : unfinished) leftovers_.push_back(std::move(left));
      // The last references may go here, with the interpreter still running.
      lock.unlock();
      round.clear();
      lock.lock();
      pause = progressed || !busy() ? microseconds(0) : std::clamp(pause * 2, microseconds(10), microseconds(50));
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<c10::intrusive_ptr<Work>> works_;
  std::vector<Leftover> leftovers_;
  std::thread thread_;
  bool fresh_ = false;  // a work arrived since the round began
  bool stopped_ = false;
};

Completion &completion() {
  static Completion *instance = new Completion;  // never destroyed: stopped at exit instead
  return *instance;
}

}  // namespace

void complete_later(c10::intrusive_ptr<Work> work) { completion().watch(std::move(work)); }

void finish_later(Leftover leftover) { completion().adopt(std::move(leftover)); }

void keep_until_exit(std::vector<at::Tensor> tensors) {
  static std::mutex mutex;
  static auto *kept = new std::vector<at::Tensor>;  // never destroyed, as the library's own
  std::lock_guard<std::mutex> lock(mutex);
  for (at::Tensor &t : tensors) kept->push_back(std::move(t));
}

void stop_completion() { completion().stop(); }

}  // namespace pgstrategy_torch
