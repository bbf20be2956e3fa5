// The node-local steps of the hierarchical schedule, behind one interface so
// that the schedule (schedule.h) is written once: shared memory on CPU
// (shm_transport.h); NCCL on the node's GPUs would be another implementation.
//
// Every step is nonblocking: it returns false when it cannot run yet (a peer
// has not got that far, or a slot is still in use) and is tried again. A step
// of slice k runs only after the same step of slice k - 1 (in node order:
// slices are numbered across operations by Plan::first_tick).
#pragma once

#include <cstddef>

#include "backends/fairring/plan.h"

namespace pg::fairring {

class NodeTransport {
 public:
  virtual ~NodeTransport() = default;
  // Bytes one slot holds: a slice's packed contribution, or a shard.
  virtual std::size_t slot_bytes() const = 0;
  // (1) Make this rank's contribution to slice k visible to the node.
  virtual bool publish(const Plan &plan, std::size_t k) = 0;
  // (2) Sum this rank's shard of slice k over the node into *shard (the plan's
  // result_in_place, else a slot). For plans without (2): only the slot.
  virtual bool reduce(const Plan &plan, std::size_t k, char **shard) = 0;
  // (3) done: this rank's final shard of slice k may be read by the node.
  virtual void finished(const Plan &plan, std::size_t k) = 0;
  // (4) Every local rank's final shard of slice k into the receive buffer.
  // Plans without (4) return true at once.
  virtual bool gather(const Plan &plan, std::size_t k) = 0;
  // Whether no peer reads this rank's buffers of `plan` any more, so the
  // operation may return to the user.
  virtual bool released(const Plan &plan) = 0;
  // This rank's schedule failed (a rail's MPI call): its peers must not wait
  // for it any more. failed(): whether any rank of the node has said so.
  virtual void fail() = 0;
  virtual bool failed() const = 0;
};

}  // namespace pg::fairring
