// The buffers behind allocateTensor (tensor_pool.h).
#include "tensor_pool.h"

namespace pgstrategy_torch {

void *TensorPool::take(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = free_.find(bytes);
  if (found == free_.end()) return nullptr;
  void *buffer = found->second;
  free_.erase(found);
  return buffer;
}

void TensorPool::put(void *buffer, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.emplace(bytes, buffer);
}

at::Tensor TensorPool::wrap(void *buffer, std::size_t bytes, int64_t elements, const at::TensorOptions &options) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_use_;
  }
  // The deleter keeps the pool alive: a tensor may outlive its group.
  auto give_back = [pool = shared_from_this(), bytes](void *data) { pool->returned(data, bytes); };
  return at::from_blob(buffer, {elements}, give_back, options.device(at::kCPU));
}

void TensorPool::returned(void *buffer, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  --in_use_;
  free_.emplace(bytes, buffer);
}

std::size_t TensorPool::in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

}  // namespace pgstrategy_torch
