#include "core/backend.h"

#include <sched.h>

namespace pg {

const char *coll_name(Coll coll) {
  static const char *const names[kCollCount] = {
      "allreduce", "broadcast", "reduce",  "allgather", "reduce_scatter", "alltoall",
      "gather",    "scatter",   "barrier", "send",      "recv",           "sendrecv"};
  return names[static_cast<int>(coll)];
}

pg_status Request::wait() {
  bool done = false;
  while (true) {
    pg_status st = test(&done);
    if (done || st != PG_OK) return st;
    sched_yield();
  }
}

pg_status Backend::start(const CollArgs &, std::unique_ptr<Request> *) { return PG_ERR_UNSUPPORTED; }

pg_status Backend::set_stream(void *) { return PG_ERR_UNSUPPORTED; }

}  // namespace pg
