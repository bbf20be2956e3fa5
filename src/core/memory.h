// pg_mem_alloc's buffers. On CUDA: device memory. On CPU: each allocation is an
// MPI-3 shared window on the strategy's node communicator, so a backend that
// knows it (fairring) reads a peer's buffer in place instead of copying it in.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "pg_strategy.h"

namespace pg {

// One MPI-3 shared window on a node communicator: every rank's part, as seen
// in this process.
struct NodeWindow {
  MPI_Win win = MPI_WIN_NULL;
  char *base = nullptr;       // this rank's part
  std::vector<char *> parts;  // each local rank's part
};

// Allocates `bytes` for this rank (sizes may differ) in a window on
// node_comm, each rank's part on its own pages. Collective over node_comm, and
// fails on every rank of it together: PG_ERR_UNSUPPORTED when node_comm is not
// one shared-memory domain (virtual nodes that span hosts), PG_ERR_NO_MEMORY
// when the node's total exceeds the free shared memory. `what` names the
// caller in messages.
pg_status allocate_node_window(MPI_Comm node_comm, std::size_t bytes, const char *what, NodeWindow *out);

// Every page of a window whose parts are all `bytes`, faulted in now rather
// than by the operations that first use it: this rank writes its own part
// (so its pages lie near it), then, after a barrier, reads a byte of each
// page of every peer's part (each process maps the pages for itself), so
// that no operation pays for the first use of its place (fairring's fast path
// at 4 KiB, whose 24 places each faulted on first use: twenty calls after
// three took 4.96 µs each before, 1.64 with it, 1.2 warm). Collective over
// node_comm.
pg_status touch_node_window(MPI_Comm node_comm, const NodeWindow &window, std::size_t bytes);

// Where a buffer lies among the node-shared allocations.
struct SharedSpot {
  int id = -1;              // allocation number, the same on every rank of the node; -1: not shared
  std::size_t offset = 0;   // bytes from the start of this rank's part
};

class Memory {
 public:
  Memory() = default;
  Memory(const Memory &) = delete;
  Memory &operator=(const Memory &) = delete;

  // CPU: collective over node_comm (every rank of the node allocates at the same
  // time; sizes may differ). Fails on every rank of the node together.
  pg_status allocate_shared(MPI_Comm node_comm, std::size_t bytes, void **ptr);
  // CUDA: device memory on GPU `device`.
  pg_status allocate_device(int device, std::size_t bytes, void **ptr);
  // PG_ERR_INVALID_ARGUMENT when ptr is not one of ours. CPU: collective over
  // the node, like the allocation.
  pg_status release(void *ptr);
  // Frees everything left (at destroy; no MPI call when MPI is gone).
  void release_all(bool mpi_alive);

  // Where [p, p + bytes) lies; id -1 when not wholly inside one allocation.
  SharedSpot find(const void *p, std::size_t bytes) const;
  // The address of `spot` in local rank `local`'s part of its allocation.
  char *address(const SharedSpot &spot, int local) const;

 private:
  struct Block {
    bool device = false;
    int device_index = -1;
    NodeWindow window;  // CPU; device memory: window.base only
    std::size_t bytes = 0;
    int id = -1;
  };
  mutable std::mutex mutex_;     // find() may run on a lane's worker thread
  std::map<const char *, Block> blocks_;  // by base address
  std::vector<char *> by_id_;    // id -> base (nullptr once freed)
  int next_id_ = 0;
};

}  // namespace pg
