#include "core/memory.h"

#include <sys/statvfs.h>

#include "core/cuda_runtime.h"
#include "core/status.h"

namespace pg {
namespace {

// Bytes free where MPI places shared windows on Linux (/dev/shm). A node's
// windows beyond it would be created (files are sparse) and then fail with
// SIGBUS on first touch, so they are refused up front.
unsigned long long shm_free_bytes() {
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) != 0) return ~0ull;  // not Linux-like: let MPI decide
  return static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
}

}  // namespace

pg_status Memory::allocate_shared(MPI_Comm node_comm, std::size_t bytes, void **ptr) {
  *ptr = nullptr;
  // The node's total, checked by every rank alike, so all fail together.
  unsigned long long mine = bytes, total = 0;
  PG_MPI_CHECK(MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, node_comm));
  const unsigned long long available = shm_free_bytes();
  if (total > available)
    return fail(PG_ERR_NO_MEMORY,
                "pg_mem_alloc: the ranks of this node asked for %llu bytes together (this rank %zu); "
                "only %llu bytes of shared memory (/dev/shm) are free",
                total, bytes, available);
  MPI_Info info;
  PG_MPI_CHECK(MPI_Info_create(&info));
  // Each rank's part on its own pages, placed near the rank that first touches it.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  Block b;
  int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes ? bytes : 1), 1, info, node_comm, &b.base, &b.win);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) return mpi_failure(rc, "MPI_Win_allocate_shared", __FILE__, __LINE__);
  int local_size = 0;
  MPI_Comm_size(node_comm, &local_size);
  b.peers.resize(static_cast<std::size_t>(local_size));
  for (int r = 0; r < local_size; ++r) {
    MPI_Aint size = 0;
    int disp = 0;
    PG_MPI_CHECK(MPI_Win_shared_query(b.win, r, &size, &disp, &b.peers[static_cast<std::size_t>(r)]));
  }
  b.bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  b.id = next_id_++;
  by_id_.push_back(b.base);
  *ptr = b.base;
  blocks_[b.base] = std::move(b);
  return PG_OK;
}

pg_status Memory::allocate_device(int device, std::size_t bytes, void **ptr) {
  *ptr = nullptr;
  void *p = nullptr;
  PG_CHECK(cuda::mem_alloc(device, bytes, &p));
  Block b;
  b.device = true;
  b.device_index = device;
  b.base = static_cast<char *>(p);
  b.bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[b.base] = std::move(b);
  *ptr = p;
  return PG_OK;
}

pg_status Memory::release(void *ptr) {
  Block b;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(static_cast<const char *>(ptr));
    if (it == blocks_.end())
      return fail(PG_ERR_INVALID_ARGUMENT, "pg_mem_free: %p was not allocated by pg_mem_alloc on this strategy",
                  ptr);
    b = std::move(it->second);
    blocks_.erase(it);
    if (!b.device) by_id_[static_cast<std::size_t>(b.id)] = nullptr;
  }
  if (b.device) return cuda::mem_free(b.device_index, b.base);
  PG_MPI_CHECK(MPI_Win_free(&b.win));
  return PG_OK;
}

void Memory::release_all(bool mpi_alive) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (mpi_alive)
    for (auto &kv : blocks_) {
      if (kv.second.device) cuda::mem_free(kv.second.device_index, kv.second.base);
      else MPI_Win_free(&kv.second.win);
    }
  blocks_.clear();
  by_id_.clear();
}

SharedSpot Memory::find(const void *p, std::size_t bytes) const {
  const char *c = static_cast<const char *>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(c);
  if (it == blocks_.begin()) return {};
  --it;
  const Block &b = it->second;
  if (b.device || c < b.base || static_cast<std::size_t>(c - b.base) + bytes > b.bytes) return {};
  return {b.id, static_cast<std::size_t>(c - b.base)};
}

char *Memory::address(const SharedSpot &spot, int local) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Block &b = blocks_.at(by_id_.at(static_cast<std::size_t>(spot.id)));
  return b.peers.at(static_cast<std::size_t>(local)) + spot.offset;
}

}  // namespace pg
