// The buffers behind the backend's allocateTensor (FSDP2's staging buffers
// with set_allocate_memory_from_process_group): pg_mem_alloc memory of the
// group's CPU strategy, which fairring's node ranks read in place. A buffer
// whose tensor is freed comes back here and serves a later tensor of the same
// size: FSDP2 asks for the same sizes every step, and pg_mem_alloc, which is
// collective, is called only while the pool grows (Comm::allocate_tensor).
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace pgstrategy_torch {

class TensorPool : public std::enable_shared_from_this<TensorPool> {
 public:
  // A free buffer of exactly `bytes`, or nullptr.
  void *take(std::size_t bytes);
  // A buffer of `bytes` that no tensor uses (new, or not needed after all).
  void put(void *buffer, std::size_t bytes);
  // A CPU tensor of `elements` over `buffer` (of `bytes`); when torch frees
  // it, the buffer comes back here, from whichever thread drops it.
  at::Tensor wrap(void *buffer, std::size_t bytes, int64_t elements, const at::TensorOptions &options);
  // The buffers tensors still hold.
  std::size_t in_use() const;

 private:
  void returned(void *buffer, std::size_t bytes);  // a wrapped tensor's deleter

  mutable std::mutex mutex_;
  std::multimap<std::size_t, void *> free_;  // by size
  std::size_t in_use_ = 0;
};

}  // namespace pgstrategy_torch
