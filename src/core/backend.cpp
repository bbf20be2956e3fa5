#include "core/backend.h"

#include "util/dtype.h"
#include "util/in_place.h"
#include "util/poll.h"

namespace pg {

const char *coll_name(Coll coll) {
#define PG_COLL_NAME(name, kinds) #name,
  static const char *const names[kCollCount] = {PG_COLLECTIVES(PG_COLL_NAME, PG_COLL_NAME)};
#undef PG_COLL_NAME
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
    case Coll::allgatherv: return pg_in_place_allgatherv(rank, a.v && !a.v->recv_displs.empty() ? a.v->recv_displs.data() : nullptr);
    case Coll::reduce_scatterv:
      return pg_in_place_reduce_scatterv(rank, a.v && !a.v->recv_counts.empty() ? a.v->recv_counts.data() : nullptr);
    case Coll::alltoallv: return pg_in_place_alltoallv();
    case Coll::gatherv:
      return pg_in_place_gatherv(rank, a.root, a.v && !a.v->recv_displs.empty() ? a.v->recv_displs.data() : nullptr);
    case Coll::scatterv:
      return pg_in_place_scatterv(rank, a.root, a.v && !a.v->send_displs.empty() ? a.v->send_displs.data() : nullptr);
    case Coll::broadcast: case Coll::barrier: case Coll::send: case Coll::recv: case Coll::sendrecv:
      return pg_in_place_make(PG_IN_PLACE_NONE, 0, "nothing: it has no in-place form");
  }
  return pg_in_place_make(PG_IN_PLACE_NONE, 0, "nothing: it has no in-place form");
}

std::uint64_t buffer_bytes(const CollArgs &a, int size) {
  const std::uint64_t one = a.count * dtype_size(a.dtype);
  if (has_blocks(a.coll)) return one * static_cast<std::uint64_t>(size);
  switch (a.coll) {
    case Coll::allgather: case Coll::reduce_scatter: case Coll::alltoall: case Coll::gather: case Coll::scatter:
      break;  // has_blocks, above
    case Coll::allreduce: case Coll::broadcast: case Coll::reduce: case Coll::send: case Coll::recv:
    case Coll::sendrecv:
      return one;
    case Coll::barrier: return 0;
    // The uneven collectives: what this rank's buffers hold (the whole
    // receive buffer of allgatherv, the root's of gatherv and scatterv,
    // reduce_scatterv's send buffer, alltoallv's send blocks).
    case Coll::allgatherv:
    case Coll::reduce_scatterv: return a.v ? a.v->recv_total * dtype_size(a.dtype) : 0;
    case Coll::alltoallv: return a.v ? a.v->send_total * dtype_size(a.dtype) : 0;
    case Coll::gatherv: return a.v && !a.v->recv_counts.empty() ? a.v->recv_total * dtype_size(a.dtype) : one;
    case Coll::scatterv: return a.v && !a.v->send_counts.empty() ? a.v->send_total * dtype_size(a.dtype) : one;
  }
  return one;
}

CollArgs CollArgs::placed(int rank) const {
  CollArgs a = *this;
  a.in_place = pg_in_place_holds(in_place_layout(a, rank), a.send, a.recv, dtype_size(a.dtype));
  return a;
}

std::size_t VCounts::extent(const std::vector<std::size_t> &counts, const std::vector<std::size_t> &displs) {
  std::size_t end = 0;
  for (std::size_t r = 0; r < counts.size() && r < displs.size(); ++r)
    if (counts[r] > 0 && displs[r] + counts[r] > end) end = displs[r] + counts[r];
  return end;
}

pg_status Request::wait() {
  bool done = false;
  return poll([this](bool *d) { return test(d); }, Until{}, &done);
}

pg_status Backend::start(const CollArgs &, std::unique_ptr<Request> *) { return PG_ERR_UNSUPPORTED; }

pg_status Backend::set_stream(void *) { return PG_ERR_UNSUPPORTED; }

}  // namespace pg
