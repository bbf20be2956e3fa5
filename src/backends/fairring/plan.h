// One hierarchical collective cut into slices, as the schedule (schedule.h)
// and the node transport (node_transport.h) see it: which elements of the
// user's buffers each step of each slice touches. Each hierarchical algorithm
// is a subclass, in its own file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/memory.h"
#include "util/reduce.h"

namespace pg::fairring {

// Who is where: G ranks on each of M nodes (a regular layout), P = G * M.
struct Shape {
  int local = 0, local_size = 1;  // this rank on its node: l of G
  int node = 0, nodes = 1;        // this rank's node: m of M
  int rank = 0, size = 1;
  std::vector<int> rank_of;       // [m * G + l]: the rank of local rank l on node m
  int rank_at(int m, int l) const { return rank_of[static_cast<std::size_t>(m * local_size + l)]; }
};

class Plan {
 public:
  Plan(const CollArgs &args, const Shape &shape);
  virtual ~Plan() = default;

  // The steps of a slice: (1) publish this rank's contribution and (2) reduce
  // this rank's shard from every local rank's contribution, when the algorithm
  // reduces; (3) the rail step on the shard; (4) gather every local rank's final
  // shard, when the algorithm gathers.
  virtual bool reduces() const = 0;
  virtual bool gathers() const = 0;

  // A shard is `pieces()` runs of piece_len(k, p) elements, laid end to end;
  // run j comes from (or goes to) element piece_offset(k, p, j) of the user's buffer.
  virtual std::size_t pieces() const = 0;
  virtual std::size_t piece_len(std::size_t k, int p) const = 0;
  virtual std::size_t piece_offset(std::size_t k, int p, std::size_t j) const = 0;
  // Elements before local rank p's shard in a rank's packed contribution to slice k.
  virtual std::size_t shard_offset(std::size_t k, int p) const = 0;
  std::size_t shard_len(std::size_t k, int p) const { return pieces() * piece_len(k, p); }

  // Where this rank reduces its shard of slice k when not in a shared slot:
  // in the user's receive buffer, or nullptr (a slot). Where the shard is
  // gathered, peers read it there in a pg_mem_alloc buffer; from an ordinary
  // one the transport copies it to a slot once it is final.
  virtual char *result_in_place(std::size_t k) const = 0;
  // Step 3 on this rank's shard of slice k (`shard`, shard_len elements) over
  // `rail`: started nonblocking into *out, or done at once (*out stays empty).
  virtual pg_status rail_step(std::size_t k, char *shard, Backend &rail, std::unique_ptr<Request> *out) = 0;
  // After step 3: what is left to do on the final shard (PG_AVG's division).
  virtual void finish(std::size_t k, char *shard) = 0;

  const CollArgs args;
  const Shape &shape;
  const std::size_t esize;
  std::size_t slice_len = 1;   // elements per slice (of the buffer, or of each block)
  std::size_t slices = 0;
  std::uint64_t first_tick = 0;  // slice k is the node's slice first_tick + k
  SharedSpot send_spot, recv_spot;  // where the buffers lie in pg_mem_alloc's shared memory
  std::size_t gathered_bytes = 0;    // bytes step (4) writes into the receive buffer

  const char *send() const { return static_cast<const char *>(args.send); }
  char *recv() const { return static_cast<char *>(args.recv); }
  // Elements of slice k (of the buffer, or of each block).
  std::size_t slice_begin(std::size_t k) const { return k * slice_len; }
  std::size_t slice_count(std::size_t k) const;
  // The reduction the rail and the node combine with (PG_AVG sums, then divides).
  pg_op combine_op() const { return combining_op(args.op); }
  // Slices of `per_slice` elements (at least 1) over the count.
  void cut(std::size_t per_slice);
};

// reduce_scatter and allgather: a slice is the same range of elements of every
// rank's block, and local rank p's shard of it holds the blocks of the ranks
// on its rail, one piece per node.
class BlockPlan : public Plan {
 public:
  using Plan::Plan;
  std::size_t pieces() const override { return static_cast<std::size_t>(shape.nodes); }
  std::size_t piece_len(std::size_t k, int) const override { return slice_count(k); }
  // Piece m of shard p: the block of the rank at local rank p on node m.
  std::size_t piece_offset(std::size_t k, int p, std::size_t m) const override {
    return static_cast<std::size_t>(shape.rank_at(static_cast<int>(m), p)) * args.count + slice_begin(k);
  }
};

// The three hierarchical algorithms. `slot_bytes` bounds what one slice may
// put in one shared slot; slices are cut so that it fits.
std::unique_ptr<Plan> allreduce_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes);
std::unique_ptr<Plan> reduce_scatter_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes);
std::unique_ptr<Plan> allgather_plan(const CollArgs &args, const Shape &shape, std::size_t slot_bytes);

}  // namespace pg::fairring
