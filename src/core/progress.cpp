#include "core/progress.h"

namespace pg {

void Progress::submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  outstanding_.fetch_add(1);
  queue_.push_back(std::move(task));
  if (!thread_.joinable()) {
    stopping_ = false;
    thread_ = std::thread(&Progress::loop, this);
  }
  wake_.notify_one();
}

void Progress::drain(void (*meanwhile)()) {
  if (outstanding_.load() == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  const auto empty = [this] { return queue_.empty() && !busy_; };
  if (!meanwhile) return idle_.wait(lock, empty);
  while (!idle_.wait_for(lock, std::chrono::microseconds(200), empty)) {
    lock.unlock();
    meanwhile();
    lock.lock();
  }
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
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    outstanding_.fetch_sub(1);
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace pg
