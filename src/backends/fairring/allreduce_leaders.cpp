// allreduce, "leaders" (irregular layouts, from PGS_FAIRRING_MIN_BYTES): the
// node reduces to its first rank, the first ranks of all nodes (rail 0)
// allreduce, and each node broadcasts the result. fairring's original
// implementation ended the job on such layouts.
#include "backends/fairring/fairring_internal.h"
#include "util/reduce.h"
#include "util/status.h"

namespace pg::fairring {

pg_status allreduce_leaders(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail) {
  const pg_op combine = combining_op(a.op);
  PG_CHECK(node.run(CollArgs::reduction(Coll::reduce, a.send, a.recv, a.count, a.dtype, combine, 0).placed(shape.local)));
  if (shape.local == 0) {
    PG_CHECK(rail.run(CollArgs::reduction(Coll::allreduce, a.recv, a.recv, a.count, a.dtype, combine).placed(shape.node)));
    reduce_finish(a.dtype, a.op, a.recv, a.count, shape.size);
  }
  return node.run(CollArgs::movement(Coll::broadcast, nullptr, a.recv, a.count, a.dtype, 0));
}

}  // namespace pg::fairring
