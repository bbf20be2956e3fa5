// alltoallv, "node_aware" (CPU, a regular layout of several nodes of several
// ranks): what a node sends to each other node crosses once, as one message per
// node pair along a rail, instead of one message per pair of ranks.
//
// Node pair {n, m} belongs to the rail of local rank (n + m) mod G on both
// nodes: that rank aggregates what its node sends to the other node.
//   1. counts: the node's ranks share what each sends to and expects from
//      every rank (two node allgathers), so every rank knows the layout of
//      every message below without further exchange;
//   2. blocks for ranks of the same node go straight between the user's
//      buffers (a node alltoallv);
//   3. gather: each rank hands each aggregator its blocks for the nodes that
//      aggregator serves (a node alltoallv; MPI's shared memory);
//   4. one exchange per node pair along the rails (a rail alltoallv): the
//      node's blocks for node m, ordered by source then destination;
//   5. scatter on arrival: each aggregator hands each rank of its node the
//      blocks from the nodes it serves (a node alltoallv), which land at their
//      displacements.
// Every rank takes part in every step (zero counts where it has nothing).
#include <cstring>
#include <memory>
#include <vector>

#include "backends/fairring/fairring_internal.h"
#include "util/dtype.h"
#include "util/status.h"

namespace pg::fairring {
namespace {

using Counts = std::vector<std::size_t>;

// A node or rail alltoallv of `dtype` elements between buffers that never overlap.
CollArgs exchange(const void *send, Counts sc, Counts sd, void *recv, Counts rc, Counts rd, pg_dtype dtype) {
  auto v = std::make_shared<VCounts>();
  for (std::size_t c : sc) v->send_total += c;
  for (std::size_t c : rc) v->recv_total += c;
  v->send_counts = std::move(sc), v->send_displs = std::move(sd);
  v->recv_counts = std::move(rc), v->recv_displs = std::move(rd);
  CollArgs a = CollArgs::movement(Coll::alltoallv, send, recv, v->send_total, dtype);
  a.v = std::move(v);
  a.in_place = false;
  return a;
}

// Displacements of blocks laid end to end.
Counts packed(const Counts &counts, std::size_t *total) {
  Counts d(counts.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) d[i] = at, at += counts[i];
  *total = at;
  return d;
}

}  // namespace

pg_status alltoallv_node_aware(const CollArgs &a, const Shape &shape, Backend &node, Backend &rail) {
  const std::size_t G = static_cast<std::size_t>(shape.local_size), M = static_cast<std::size_t>(shape.nodes);
  const std::size_t P = static_cast<std::size_t>(shape.size), n = static_cast<std::size_t>(shape.node);
  const std::size_t l = static_cast<std::size_t>(shape.local), es = dtype_size(a.dtype);
  const VCounts &v = *a.v;
  const char *send = static_cast<const char *>(a.send);
  char *recv = static_cast<char *>(a.recv);
  auto rank_at = [&](std::size_t m, std::size_t d) {
    return static_cast<std::size_t>(shape.rank_at(static_cast<int>(m), static_cast<int>(d)));
  };
  auto owner = [&](std::size_t x, std::size_t y) { return (x + y) % G; };  // the rail of node pair {x, y}

  // 1. What every rank of the node sends and expects: [s * P + R], [d * P + R].
  std::vector<std::uint64_t> mine(2 * P), node_counts(2 * P * G);
  for (std::size_t R = 0; R < P; ++R) mine[R] = v.send_counts[R], mine[P + R] = v.recv_counts[R];
  PG_CHECK(node.run(CollArgs::movement(Coll::allgather, mine.data(), node_counts.data(), 2 * P, PG_UINT64).placed(shape.local)));
  auto sent = [&](std::size_t s, std::size_t R) { return static_cast<std::size_t>(node_counts[s * 2 * P + R]); };
  auto expected = [&](std::size_t d, std::size_t R) { return static_cast<std::size_t>(node_counts[d * 2 * P + P + R]); };

  // 2. Within the node, straight between the user's buffers.
  {
    Counts sc(G), sd(G), rc(G), rd(G);
    for (std::size_t d = 0; d < G; ++d) {
      const std::size_t R = rank_at(n, d);
      sc[d] = v.send_counts[R], sd[d] = v.send_displs[R], rc[d] = v.recv_counts[R], rd[d] = v.recv_displs[R];
    }
    PG_CHECK(node.run(exchange(send, sc, sd, recv, rc, rd, a.dtype)));
  }

  // 3. Gather: to aggregator g, this rank's blocks for every node m it serves
  // (m in order, then the destination's local rank).
  std::vector<std::vector<std::size_t>> served(G);  // the nodes each local rank aggregates for
  for (std::size_t m = 0; m < M; ++m)
    if (m != n) served[owner(n, m)].push_back(m);
  Counts gather_sc(G, 0), gather_rc(G, 0);
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t m : served[g])
      for (std::size_t d = 0; d < G; ++d) {
        gather_sc[g] += v.send_counts[rank_at(m, d)];
        if (g == l)
          for (std::size_t s = 0; s < G; ++s) gather_rc[s] += sent(s, rank_at(m, d));
      }
  std::size_t gather_send_total = 0, gather_recv_total = 0;
  const Counts gather_sd = packed(gather_sc, &gather_send_total), gather_rd = packed(gather_rc, &gather_recv_total);
  std::vector<char> gathered_out(gather_send_total * es), gathered_in(gather_recv_total * es);
  {
    char *at = gathered_out.data();
    for (std::size_t g = 0; g < G; ++g)
      for (std::size_t m : served[g])
        for (std::size_t d = 0; d < G; ++d) {
          const std::size_t R = rank_at(m, d), bytes = v.send_counts[R] * es;
          if (bytes) std::memcpy(at, send + v.send_displs[R] * es, bytes);
          at += bytes;
        }
  }
  PG_CHECK(node.run(exchange(gathered_out.data(), gather_sc, gather_sd, gathered_in.data(), gather_rc, gather_rd,
                             a.dtype)));

  // 4. One exchange per node pair on this rank's rail: to node m (served by
  // this rank), the node's blocks for it by source s, then destination d; from
  // node m, its blocks for this node in the same order.
  Counts rail_sc(M, 0), rail_rc(M, 0);
  for (std::size_t m : served[l])
    for (std::size_t s = 0; s < G; ++s)
      for (std::size_t d = 0; d < G; ++d) {
        rail_sc[m] += sent(s, rank_at(m, d));
        rail_rc[m] += expected(d, rank_at(m, s));
      }
  std::size_t rail_send_total = 0, rail_recv_total = 0;
  const Counts rail_sd = packed(rail_sc, &rail_send_total), rail_rd = packed(rail_rc, &rail_recv_total);
  std::vector<char> rail_out(rail_send_total * es), rail_in(rail_recv_total * es);
  {
    // gathered_in holds, per source s, its blocks for the served nodes (in order) and destinations.
    std::vector<std::size_t> from(G);
    for (std::size_t s = 0; s < G; ++s) from[s] = gather_rd[s] * es;
    for (std::size_t m : served[l]) {
      char *at = rail_out.data() + rail_sd[m] * es;
      for (std::size_t s = 0; s < G; ++s)
        for (std::size_t d = 0; d < G; ++d) {
          const std::size_t bytes = sent(s, rank_at(m, d)) * es;
          if (bytes) std::memcpy(at, gathered_in.data() + from[s], bytes);
          at += bytes;
          from[s] += bytes;
        }
    }
  }
  PG_CHECK(rail.run(exchange(rail_out.data(), rail_sc, rail_sd, rail_in.data(), rail_rc, rail_rd, a.dtype)));

  // 5. Scatter: to each local rank d, the blocks for it from every node this
  // rank serves (nodes in order, then the source's local rank).
  Counts scatter_sc(G, 0), scatter_rc(G, 0);
  for (std::size_t d = 0; d < G; ++d)
    for (std::size_t m : served[l])
      for (std::size_t s = 0; s < G; ++s) scatter_sc[d] += expected(d, rank_at(m, s));
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t m : served[g])
      for (std::size_t s = 0; s < G; ++s) scatter_rc[g] += v.recv_counts[rank_at(m, s)];
  std::size_t scatter_send_total = 0, scatter_recv_total = 0;
  const Counts scatter_sd = packed(scatter_sc, &scatter_send_total);
  const Counts scatter_rd = packed(scatter_rc, &scatter_recv_total);
  std::vector<char> scatter_out(scatter_send_total * es), scatter_in(scatter_recv_total * es);
  {
    // rail_in holds, per served node m, its blocks by source s then destination d.
    std::vector<char *> to(G);
    for (std::size_t d = 0; d < G; ++d) to[d] = scatter_out.data() + scatter_sd[d] * es;
    for (std::size_t m : served[l]) {
      const char *at = rail_in.data() + rail_rd[m] * es;
      for (std::size_t s = 0; s < G; ++s)
        for (std::size_t d = 0; d < G; ++d) {
          const std::size_t bytes = expected(d, rank_at(m, s)) * es;
          if (bytes) std::memcpy(to[d], at, bytes);
          to[d] += bytes;
          at += bytes;
        }
    }
  }
  PG_CHECK(node.run(exchange(scatter_out.data(), scatter_sc, scatter_sd, scatter_in.data(), scatter_rc, scatter_rd,
                             a.dtype)));
  // On arrival: each block to its displacement.
  const char *at = scatter_in.data();
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t m : served[g])
      for (std::size_t s = 0; s < G; ++s) {
        const std::size_t R = rank_at(m, s), bytes = v.recv_counts[R] * es;
        if (bytes) std::memcpy(recv + v.recv_displs[R] * es, at, bytes);
        at += bytes;
      }
  return PG_OK;
}

}  // namespace pg::fairring
