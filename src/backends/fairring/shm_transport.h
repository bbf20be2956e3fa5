// The CPU node transport: one MPI-3 shared window on the node communicator.
// Each rank's part holds its counters, slot descriptions and 2 x W slots (W =
// PGS_FAIRRING_INFLIGHT): W for packed contributions, W for final shards. Peers
// read each other's slots, and pg_mem_alloc buffers, in place.
//
// Synchronisation is by four counters per rank, each on its own cache line and
// written only by its rank (release) and read by its peers (acquire); counter c
// of rank p > t means p has passed step c of the node's slice t:
//   ready     its contribution to t is visible (its slot, or its own buffer)
//   reduced   it has read every peer's contribution to t
//   done      its final shard of t is visible
//   gathered  it has read every peer's final shard of t
// Slot t % W is reused for slice t only once every rank that reads it has passed t - W.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/fairring/handoff.h"
#include "backends/fairring/node_transport.h"

namespace pg::fairring {

class ShmTransport final : public NodeTransport {
 public:
  // Collective over node_comm. `handoff`: where a shard is reduced and how
  // the peers' shards are pulled; `memory`: the strategy's pg_mem_alloc buffers.
  static pg_status create(MPI_Comm node_comm, std::size_t slot_bytes, int slots, const Handoff &handoff,
                          const Memory *memory, std::unique_ptr<ShmTransport> *out);
  ~ShmTransport() override;  // collective over the node, like create

  std::size_t slot_bytes() const override { return slot_bytes_; }
  pg_status publish(const Plan &plan, std::size_t k, bool *done) override;
  pg_status reduce(const Plan &plan, std::size_t k, char **shard, bool *done) override;
  pg_status finished(const Plan &plan, std::size_t k) override;
  pg_status gather(const Plan &plan, std::size_t k, bool *done) override;
  pg_status released(const Plan &plan, bool *done) override;
  void fail() override;
  bool failed() const override;

 private:
  struct alignas(64) Counter {
    std::atomic<std::uint64_t> value{0};
  };
  struct Counters {
    Counter ready, reduced, done, gathered;
    Counter failed;  // 1 once this rank's schedule failed
  };
  // Where the data of one slot's slice is: in the rank's slot (id -1), or in a
  // pg_mem_alloc buffer of the rank (its allocation id and the buffer's offset).
  struct Source {
    std::int64_t id;
    std::uint64_t offset;
  };
  // One rank's part of the window, in this process's address space.
  struct Part {
    Counters *counters = nullptr;
    Source *inputs = nullptr;   // [W]: where the contributions of the slot's slice are
    Source *results = nullptr;  // [W]: where the final shards of the slot's slice are
    char *input_slots = nullptr;
    char *result_slots = nullptr;
  };

  ShmTransport() = default;
  // The steps; each returns whether it ran (nothing here can fail).
  bool try_publish(const Plan &plan, std::size_t k);
  bool try_reduce(const Plan &plan, std::size_t k, char **shard);
  bool try_gather(const Plan &plan, std::size_t k);
  bool peers_done_with(const Plan &plan) const;
  // Whether every other rank (and this one, with `self`) has passed `which` of slice `tick`.
  bool all_past(Counter Counters::*which, std::uint64_t tick, bool self) const;
  char *input_slot(int p, std::uint64_t tick) const;
  char *result_slot(int p, std::uint64_t tick) const;
  // How a shard goes into the receive buffer: memcpy, pulled by pages
  // (pull_pages), or streamed past the cache with non-temporal stores.
  enum class Copy { plain, pages, stream };
  Copy copy_for(const Plan &plan) const;
  char *reduce_home(const Plan &plan, std::size_t k) const;
  static void copy_out(char *to, const char *from, std::size_t bytes, Copy how);
  // Local rank p's final shard of slice k into this rank's receive buffer.
  void copy_shard(const Plan &plan, std::size_t k, int p, Copy how) const;
  // Where local rank p's data described by `source` is: element `in_slot` of
  // `slot`, or element `in_buffer` of p's own (pg_mem_alloc) buffer.
  const char *locate(int p, const Source &source, const char *slot, std::size_t in_slot, std::size_t in_buffer,
                     std::size_t esize) const;

  MPI_Win win_ = MPI_WIN_NULL;
  int local_ = 0, local_size_ = 1;
  int slots_ = 1;
  std::size_t slot_bytes_ = 0;
  Handoff handoff_;
  std::vector<Part> parts_;
  const Memory *memory_ = nullptr;
  // Each peer's part of the pg_mem_alloc buffer it published last (ids are never reused).
  struct Resolved {
    std::int64_t id = -1;
    char *base = nullptr;
  };
  mutable std::vector<Resolved> resolved_;
};

}  // namespace pg::fairring
