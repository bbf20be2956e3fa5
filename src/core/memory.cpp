#include "core/memory.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdint>

#include "cuda/runtime.h"
#include "util/round_up.h"
#include "util/owned_comm.h"
#include "util/status.h"

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

pg_status allocate_node_window(MPI_Comm node_comm, std::size_t bytes, const char *what, NodeWindow *out) {
  int size = 0, shared_size = 0;
  PG_MPI_CHECK(MPI_Comm_size(node_comm, &size));
  MPI_Comm shared = MPI_COMM_NULL;
  PG_MPI_CHECK(MPI_Comm_split_type(node_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  mark_owned(shared);
  MPI_Comm_size(shared, &shared_size);
  MPI_Comm_free(&shared);
  // The node's total, and whether every rank of it shares memory, known to every rank alike.
  unsigned long long mine[2] = {bytes, shared_size == size ? 0ull : 1ull}, node[2] = {0, 0};
  PG_MPI_CHECK(MPI_Allreduce(mine, node, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, node_comm));
  if (node[1] != 0)
    return fail(PG_ERR_UNSUPPORTED,
                "%s: the ranks of this node do not share memory (virtual nodes of PGS_RANKS_PER_NODE "
                "that span hosts?); node-shared memory needs every rank of a node on one host",
                what);
  const unsigned long long available = shm_free_bytes();
  if (node[0] > available)
    return fail(PG_ERR_NO_MEMORY,
                "%s: the ranks of this node asked for %llu bytes of shared memory together (this rank %zu); "
                "only %llu bytes are free (/dev/shm)",
                what, node[0], bytes, available);
  MPI_Info info;
  PG_MPI_CHECK(MPI_Info_create(&info));
  // Each rank's part on its own pages, placed near the rank that first touches it.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  // Open MPI may start a part a few bytes into a page (its own header first);
  // each part is over-allocated and its start rounded up to a cache line, so
  // atomics and vector loads on it are aligned. The shared segment is mapped
  // page-aligned in every process, so every process rounds a part alike.
  constexpr std::uintptr_t kAlign = 64;
  NodeWindow w;
  char *raw = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + kAlign), 1, info, node_comm, &raw, &w.win);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) return mpi_failure(rc, "MPI_Win_allocate_shared", __FILE__, __LINE__);
  const auto aligned = [](char *p) {
    return reinterpret_cast<char *>(round_up(reinterpret_cast<std::uintptr_t>(p), kAlign));
  };
  w.base = aligned(raw);
  w.parts.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    MPI_Aint part_size = 0;
    int disp = 0;
    char *part = nullptr;
    PG_MPI_CHECK(MPI_Win_shared_query(w.win, r, &part_size, &disp, &part));
    w.parts[static_cast<std::size_t>(r)] = aligned(part);
  }
  *out = std::move(w);
  return PG_OK;
}

pg_status touch_node_window(MPI_Comm node_comm, const NodeWindow &window, std::size_t bytes) {
  const long page_size = sysconf(_SC_PAGESIZE);
  const std::size_t page = page_size > 0 ? static_cast<std::size_t>(page_size) : 4096;
  // A write that keeps what is there: the fault, not the value, is the point.
  for (std::size_t at = 0; at < bytes; at += page) {
    volatile char *c = window.base + at;
    *c = *c;
  }
  PG_MPI_CHECK(MPI_Barrier(node_comm));
  for (char *part : window.parts) {
    if (part == window.base) continue;
    for (std::size_t at = 0; at < bytes; at += page) static_cast<void>(*static_cast<volatile char *>(part + at));
  }
  return PG_OK;
}

pg_status Memory::allocate_shared(MPI_Comm node_comm, std::size_t bytes, void **ptr) {
  *ptr = nullptr;
  Block b;
  PG_CHECK(allocate_node_window(node_comm, bytes, "pg_mem_alloc", &b.window));
  b.bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  b.id = next_id_++;
  by_id_.push_back(b.window.base);
  *ptr = b.window.base;
  blocks_[b.window.base] = std::move(b);
  return PG_OK;
}

pg_status Memory::allocate_device(int device, std::size_t bytes, void **ptr) {
  *ptr = nullptr;
  void *p = nullptr;
  PG_CHECK(cuda::mem_alloc(device, bytes, &p));
  Block b;
  b.device = true;
  b.device_index = device;
  b.window.base = static_cast<char *>(p);
  b.bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  blocks_[b.window.base] = std::move(b);
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
  if (b.device) return cuda::mem_free(b.device_index, b.window.base);
  PG_MPI_CHECK(MPI_Win_free(&b.window.win));
  return PG_OK;
}

void Memory::release_all(bool mpi_alive) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (mpi_alive) {
    // In allocation order, the same on every rank (MPI_Win_free is collective);
    // addresses may be ordered differently in each process.
    for (const char *base : by_id_)
      if (base) MPI_Win_free(&blocks_.at(base).window.win);
    for (auto &kv : blocks_)
      if (kv.second.device) cuda::mem_free(kv.second.device_index, kv.second.window.base);
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
  if (b.device || c < b.window.base || static_cast<std::size_t>(c - b.window.base) + bytes > b.bytes) return {};
  return {b.id, static_cast<std::size_t>(c - b.window.base)};
}

char *Memory::address(const SharedSpot &spot, int local) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Block &b = blocks_.at(by_id_.at(static_cast<std::size_t>(spot.id)));
  return b.window.parts.at(static_cast<std::size_t>(local)) + spot.offset;
}

}  // namespace pg
