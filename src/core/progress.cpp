#include "core/progress.h"

namespace pg {

void Progress::submit(std::function<void()> task, bool point_to_point) {
  std::lock_guard<std::mutex> lock(mutex_);
  outstanding_.fetch_add(1);
  point_to_point_ += point_to_point;
  queue_.push_back({std::move(task), point_to_point});
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread(&Progress::loop, this);
  }
  wake_.notify_one();
}

template <class Done>
void Progress::wait_for_tasks(void (*meanwhile)(), Done done) {
  if (outstanding_.load() == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (!meanwhile) return idle_.wait(lock, done);
  while (!idle_.wait_for(lock, std::chrono::microseconds(200), done)) {
    lock.unlock();
    meanwhile();
    lock.lock();
  }
}

void Progress::drain(void (*meanwhile)()) {
  wait_for_tasks(meanwhile, [this] { return queue_.empty() && !busy_; });
}

void Progress::drain_point_to_point(void (*meanwhile)()) {
  wait_for_tasks(meanwhile, [this] { return point_to_point_ == 0; });
}

bool Progress::idle() { return outstanding_.load() == 0; }

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    wake_.notify_one();
  }
  thread_.join();
}

bool Progress::abandon(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!thread_.joinable()) return true;
  stopping_ = true;
  wake_.notify_one();
  // The queued tasks end at once: their strategy is aborted.
  if (!idle_.wait_for(lock, wait, [this] { return queue_.empty() && !busy_; })) {
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

void Progress::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    Task task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task.run();
    lock.lock();
    busy_ = false;
    outstanding_.fetch_sub(1);
    point_to_point_ -= task.point_to_point;
    if (queue_.empty() || task.point_to_point) idle_.notify_all();
  }
}

}  // namespace pg
