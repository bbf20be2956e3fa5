#include "util/keep_alive.h"

#include <mutex>
#include <vector>

namespace pg {

void keep_until_exit(std::shared_ptr<void> thing) {
  if (!thing) return;
  static std::mutex mutex;
  static auto *kept = new std::vector<std::shared_ptr<void>>;  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  kept->push_back(std::move(thing));
}

}  // namespace pg
