#include "core/backend.h"

#include "core/dtype.h"
#include "core/in_place.h"
#include "core/poll.h"

namespace pg {

const char *coll_name(Coll coll) {
  static const char *const names[kCollCount] = {
      "allreduce", "broadcast", "reduce",  "allgather", "reduce_scatter", "alltoall",
      "gather",    "scatter",   "barrier", "send",      "recv",           "sendrecv"};
  return names[static_cast<int>(coll)];
}

pg_in_place in_place_layout(const CollArgs &a, int rank) {
  switch (a.coll) {
    case Coll::allreduce: return pg_in_place_allreduce();
    case Coll::reduce: return pg_in_place_reduce(rank, a.root);
    case Coll::allgather: return pg_in_place_allgather(rank, a.count);
    case Coll::reduce_scatter: return pg_in_place_reduce_scatter(rank, a.count);
    case Coll::alltoall: return pg_in_place_alltoall();
    case Coll::gather: return pg_in_place_gather(rank, a.root, a.count);
    case Coll::scatter: return pg_in_place_scatter(rank, a.root, a.count);
    default: return pg_in_place_make(PG_IN_PLACE_NONE, 0, "nothing: it has no in-place form");
  }
}

CollArgs CollArgs::placed(int rank) const {
  CollArgs a = *this;
  a.in_place = pg_in_place_holds(in_place_layout(a, rank), a.send, a.recv, dtype_size(a.dtype));
  return a;
}

pg_status Request::wait() {
  bool done = false;
  return poll([this](bool *d) { return test(d); }, Until{}, &done);
}

pg_status Backend::start(const CollArgs &, std::unique_ptr<Request> *) { return PG_ERR_UNSUPPORTED; }

pg_status Backend::set_stream(void *) { return PG_ERR_UNSUPPORTED; }

}  // namespace pg
