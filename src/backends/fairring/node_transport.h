// The node-local steps of the hierarchical schedule, behind one interface so
// that the schedule (schedule.h) is written once: shared memory on CPU
// (shm_transport.h), NCCL and pinned host staging on CUDA (cuda_transport.h).
//
// Every step is nonblocking: it sets *done = false when it cannot run yet (a
// peer has not got that far, a slot is still in use, the GPU has not finished)
// and is tried again. A step of slice k runs only after the same step of slice
// k - 1 (in node order: slices are numbered across operations by
// Plan::first_tick). A step that fails returns its status (pg_last_error()
// says why); the schedule then fails every operation.
#pragma once

#include <cstddef>

#include "backends/fairring/plan.h"

namespace pg::fairring {

class NodeTransport {
 public:
  virtual ~NodeTransport() = default;
  // Bytes one slot holds: a slice's packed contribution, or a shard. Plans
  // cut their slices so that one fits.
  virtual std::size_t slot_bytes() const = 0;
  // The operation of `plan` starts, in the caller's thread, before any of its
  // steps (CUDA: where its inputs are ready on the stream).
  virtual pg_status begin(const Plan &) { return PG_OK; }
  // (1) Make this rank's contribution to slice k visible to the node.
  virtual pg_status publish(const Plan &plan, std::size_t k, bool *done) = 0;
  // (2) Sum this rank's shard of slice k over the node into *shard (host
  // memory, or device memory the rail's MPI can read), where step 3 runs on
  // it. For plans without (2): only the slot.
  virtual pg_status reduce(const Plan &plan, std::size_t k, char **shard, bool *done) = 0;
  // (3) done: this rank's final shard of slice k may be read by the node.
  virtual pg_status finished(const Plan &plan, std::size_t k) = 0;
  // (4) Every local rank's final shard of slice k into the receive buffer.
  // Plans without (4) are done at once.
  virtual pg_status gather(const Plan &plan, std::size_t k, bool *done) = 0;
  // Whether no peer reads this rank's buffers of `plan` any more and its
  // results are in place, so the operation may return to the user.
  virtual pg_status released(const Plan &plan, bool *done) = 0;
  // CUDA: the stream later operations' inputs are ready on (NULL: the legacy
  // default stream). CPU: nothing.
  virtual void set_stream(void *) {}
  // This rank's schedule failed (a rail's MPI call): its peers must not wait
  // for it any more. failed(): whether any rank of the node has said so.
  virtual void fail() = 0;
  virtual bool failed() const = 0;
  // The watchdog is about to end the job: stop this rank's device work.
  virtual void abort() {}
};

}  // namespace pg::fairring
