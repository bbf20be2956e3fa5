// The library's internal view of a backend: one C++ interface that built-in
// backends implement directly and that wraps user tables (pg_backend_ops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "pg_backend.h"

namespace pg {

enum class Coll {
  allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall, gather, scatter,
  barrier, send, recv, sendrecv,
};
constexpr int kCollCount = static_cast<int>(Coll::sendrecv) + 1;
const char *coll_name(Coll coll);

// The arguments of one operation, already validated. `count` is what the
// public call names count/sendcount/recvcount/per-peer count.
struct CollArgs {
  Coll coll = Coll::barrier;
  const void *send = nullptr;
  void *recv = nullptr;
  std::size_t count = 0;
  pg_dtype dtype = PG_UINT8;
  pg_op op = PG_SUM;
  int root = 0;  // root of rooted collectives; peer (dest) of send/recv/sendrecv
  int tag = 0;
  std::size_t recv_count = 0;  // sendrecv only
  int source = 0;              // sendrecv only
};

// A started nonblocking operation of a backend.
class Request {
 public:
  virtual ~Request() = default;
  // *done = true once finished; the return value is then the operation's status.
  virtual pg_status test(bool *done) = 0;
  // Blocks until finished; the operation's status.
  virtual pg_status wait();
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Whether `run` may be called for this operation at all.
  virtual bool implements(Coll coll) const = 0;
  // Blocking. PG_ERR_UNSUPPORTED, returned before communicating, sends the
  // operation to the device's default backend.
  virtual pg_status run(const CollArgs &args) = 0;
  // Native nonblocking start. PG_ERR_UNSUPPORTED: the library runs `run`
  // asynchronously itself (progress thread), or inline below MPI_THREAD_MULTIPLE.
  virtual pg_status start(const CollArgs &args, std::unique_ptr<Request> *out);
  virtual pg_status set_stream(void *stream);
  // The watchdog is about to end the job: stop in-flight device work (NCCL's
  // ncclCommAbort). Called from the watchdog's thread; nothing runs afterwards.
  virtual void abort() {}
};

}  // namespace pg
