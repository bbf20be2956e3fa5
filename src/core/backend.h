// The library's internal view of a backend: one C++ interface that built-in
// backends implement directly and that wraps user tables (pg_backend_ops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/collectives.h"
#include "pg_backend.h"
#include "util/in_place.h"

namespace pg {

// The counts and displacements of an uneven collective (elements, one entry
// per rank), copied from the caller's arrays when the call is made: immutable,
// shared by every copy of the call's arguments (a started work never reads the
// caller's arrays again). An array the call does not read on this rank (the
// root's arrays elsewhere) is empty.
//   allgatherv       recv_counts, recv_displs
//   reduce_scatterv  recv_counts; send_displs: where block r starts in sendbuf
//                    (the sums of recv_counts before r)
//   alltoallv        all four
//   gatherv          recv_counts, recv_displs (the root)
//   scatterv         send_counts, send_displs (the root)
struct VCounts {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::size_t send_total = 0, recv_total = 0;  // sums of the counts present
  // Elements a buffer must hold for these blocks: the largest displacement +
  // count over the blocks that are not empty (0 when every block is).
  static std::size_t extent(const std::vector<std::size_t> &counts, const std::vector<std::size_t> &displs);
};

// The arguments of one operation, already validated (the meaning of each
// public argument is in include/pg_strategy.h).
struct CollArgs {
  Coll coll = Coll::barrier;
  const void *send = nullptr;
  void *recv = nullptr;
  // Elements: of the whole buffer (allreduce, reduce, broadcast), of one rank's
  // block (allgather, gather: sent; reduce_scatter, scatter: received;
  // alltoall: per peer), or sent (send, sendrecv) or received (recv). The
  // uneven collectives: this rank's share (allgatherv, gatherv: sent;
  // reduce_scatterv, scatterv: received; alltoallv: sent to all peers).
  std::size_t count = 0;
  pg_dtype dtype = PG_UINT8;
  pg_op op = PG_SUM;
  int root = 0;                // rooted collectives
  int peer = 0;                // send: destination; recv: source; sendrecv: destination
  int tag = 0;                 // point-to-point
  std::size_t recv_count = 0;  // sendrecv: elements received
  int source = 0;              // sendrecv: the rank received from
  // Whether the call is in its in-place layout on this rank (the table in
  // util/in_place.h). Worked out once, when the call is validated; backends
  // read it and never compare the buffers themselves.
  bool in_place = false;
  // The uneven collectives' counts and displacements; null for the others
  // (copying the arguments of those allocates nothing).
  std::shared_ptr<const VCounts> v;

  // This call with `in_place` worked out for rank `rank` of its communicator:
  // validation does it for the user's calls, a backend for the calls it
  // issues on its sub-communicators.
  CollArgs placed(int rank) const;

  static CollArgs reduction(Coll coll, const void *send, void *recv, std::size_t count,
                            pg_dtype dtype, pg_op op, int root = 0) {
    CollArgs a;
    a.coll = coll, a.send = send, a.recv = recv, a.count = count, a.dtype = dtype, a.op = op, a.root = root;
    return a;
  }
  static CollArgs movement(Coll coll, const void *send, void *recv, std::size_t count,
                           pg_dtype dtype, int root = 0) {
    return reduction(coll, send, recv, count, dtype, PG_SUM, root);
  }
  static CollArgs point_to_point(Coll coll, const void *send, void *recv, std::size_t count,
                                 pg_dtype dtype, int peer, int tag) {
    CollArgs a = movement(coll, send, recv, count, dtype);
    a.peer = peer, a.tag = tag;
    return a;
  }
};

// The bytes an operation moves from this rank's buffers (nccl-tests' sizes),
// on a communicator of `size` ranks. Of the uneven collectives only
// allgatherv's and reduce_scatterv's are the same on every rank.
std::uint64_t buffer_bytes(const CollArgs &a, int size);

// The in-place layout of `a` on rank `rank` (util/in_place.h).
pg_in_place in_place_layout(const CollArgs &a, int rank);

// A started nonblocking operation of a backend. It may be destroyed before it
// finished (a strategy torn down after a failure) and after MPI_Finalize, when
// its destructor must make no MPI call.
class Request {
 public:
  virtual ~Request() = default;
  // *done = true once finished; the return value is then the operation's status.
  virtual pg_status test(bool *done) = 0;
  // Blocks until finished; the operation's status.
  virtual pg_status wait();
  // A finished receive: the rank its message came from; -1 when not known.
  virtual int source() const { return -1; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Whether `run` may be called for this operation at all.
  virtual bool implements(Coll coll) const = 0;
  // Blocking. PG_ERR_UNSUPPORTED, returned before communicating, sends the
  // operation to the device's default backend.
  virtual pg_status run(const CollArgs &args) = 0;
  // Whether `run` waits in the library's polls (util/poll.h), which move the
  // calling thread's other works: the built-in backends do, a table's call
  // does not return to the library until it ends.
  virtual bool polls() const { return true; }
  // Whether a receive may name PG_ANY_SOURCE (its requests then report the sender).
  virtual bool receives_from_any() const { return false; }
  // Native nonblocking start. PG_ERR_UNSUPPORTED: the library runs `run`
  // asynchronously itself (progress thread), or inline below MPI_THREAD_MULTIPLE.
  virtual pg_status start(const CollArgs &args, std::unique_ptr<Request> *out);
  virtual pg_status set_stream(void *stream);
  // What pg_strategy_describe adds for this backend (a hierarchical plan); "" for nothing.
  virtual std::string describe() const { return {}; }
  // Stop in-flight device work (NCCL's ncclCommAbort): pg_strategy_abort
  // (from any thread, while the instance's calls may be in flight), or the
  // watchdog about to end the job. Its waits end at their next poll; later
  // calls are refused by the strategy (poisoned) and destroy runs alone.
  virtual void abort() {}
  // This rank made the instance but another rank's create failed: the
  // destructor that follows must make no collective call (what it would free
  // collectively is left).
  virtual void abandon() {}
};

}  // namespace pg
