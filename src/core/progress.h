// A per-strategy progress thread: runs queued operations in order (backends
// without native nonblocking entries, at MPI_THREAD_MULTIPLE).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace pg {

class Progress {
 public:
  Progress() = default;
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;
  ~Progress() { stop(); }

  // Queues a task; the thread starts with the first one. A point-to-point
  // task is one drain_point_to_point waits for.
  void submit(std::function<void()> task, bool point_to_point = false);
  // Waits until every queued task has run; `meanwhile`, when given, is called
  // every 200 us of the wait.
  void drain(void (*meanwhile)() = nullptr);
  // drain, for the point-to-point tasks only (those queued behind others
  // included).
  void drain_point_to_point(void (*meanwhile)());
  bool idle();
  // Whether the calling thread is this progress thread.
  bool on_thread() const { return std::this_thread::get_id() == thread_.get_id(); }
  // Drains and joins the thread.
  void stop();
  // Stops taking tasks and joins the thread if it finishes within `wait`;
  // else leaves it running (detached) and returns false.
  bool abandon(std::chrono::milliseconds wait);

 private:
  struct Task {
    std::function<void()> run;
    bool point_to_point;
  };
  void loop();
  template <class Done>
  void wait_for_tasks(void (*meanwhile)(), Done done);

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Task> queue_;
  bool busy_ = false, stopping_ = false;
  int point_to_point_ = 0;  // point-to-point tasks queued or running
  // Tasks submitted and not yet finished: blocking calls check it without the
  // lock, so a strategy that never queues pays nothing.
  std::atomic<int> outstanding_{0};
  std::thread thread_;
};

}  // namespace pg
