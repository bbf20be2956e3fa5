#include "completion.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "process_group.h"

namespace pgstrategy_torch {
namespace {

class Completion {
 public:
  void watch(c10::intrusive_ptr<Work> work) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {  // exit has begun: nothing may complete it any more, nor release it
      work.release();
      return;
    }
    works_.push_back(std::move(work));
    if (!thread_.joinable()) thread_ = std::thread(&Completion::loop, this);
    wake_.notify_one();
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
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopped_ || !works_.empty(); });
      if (stopped_) return;
      std::deque<c10::intrusive_ptr<Work>> round = works_;
      lock.unlock();
      std::vector<Work *> done;
      for (auto &work : round)
        if (work->poll()) done.push_back(work.get());
      lock.lock();
      for (Work *finished : done)
        for (auto it = works_.begin(); it != works_.end(); ++it)
          if (it->get() == finished) {
            works_.erase(it);
            break;
          }
      // The last references may go here, with the interpreter still running.
      lock.unlock();
      round.clear();
      std::this_thread::yield();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<c10::intrusive_ptr<Work>> works_;
  std::thread thread_;
  bool stopped_ = false;
};

Completion &completion() {
  static Completion *instance = new Completion;  // never destroyed: stopped at exit instead
  return *instance;
}

}  // namespace

void complete_later(c10::intrusive_ptr<Work> work) { completion().watch(std::move(work)); }

void stop_completion() { completion().stop(); }

}  // namespace pgstrategy_torch
