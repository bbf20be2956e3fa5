// fairring's plan arithmetic without MPI: how the three hierarchical
// algorithms cut a call into slices, parts and pieces (plan.h). For odd counts,
// every dtype size and several node shapes, every element of every buffer is
// covered exactly once, every slice fits a slot, and each local rank's shard is
// where the node transport expects it.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "backends/fairring/plan.h"

namespace {

using pg::CollArgs;
using pg::Coll;
using pg::fairring::Plan;
using pg::fairring::Shape;

const pg_dtype kOneOfEachSize[] = {PG_INT8, PG_FLOAT16, PG_FLOAT32, PG_FLOAT64};

// G ranks on each of M nodes. Ranks are interleaved across nodes (rank r on
// node r % M), as a round-robin launcher places them, so that "the rank of
// local rank l on node m" is not simply m * G + l.
Shape shape_of(int g, int m, int rank) {
  Shape s;
  s.local_size = g;
  s.nodes = m;
  s.size = g * m;
  s.rank = rank;
  s.node = rank % m;
  s.local = rank / m;
  s.rank_of.resize(static_cast<std::size_t>(g * m));
  for (int r = 0; r < g * m; ++r) s.rank_of[static_cast<std::size_t>((r % m) * g + r / m)] = r;
  return s;
}

// The slices cover [0, count) in order, each at most `most` elements.
void expect_slices(const Plan &p, std::size_t count, std::size_t most) {
  std::size_t next = 0;
  for (std::size_t k = 0; k < p.slices; ++k) {
    EXPECT_EQ(p.slice_begin(k), next);
    EXPECT_GT(p.slice_count(k), 0u);
    EXPECT_LE(p.slice_count(k), most) << "slice " << k;
    next += p.slice_count(k);
  }
  EXPECT_EQ(next, count);
}

struct Case {
  std::size_t count;
  std::size_t slot_bytes;
};

std::vector<Case> cases(const Shape &s) {
  const std::size_t g = static_cast<std::size_t>(s.local_size), p = static_cast<std::size_t>(s.size);
  return {{0, 64}, {1, 64}, {g - 1, 64}, {g, 64}, {3 * g + 1, 64}, {1001, 64}, {1001, 256 << 10},
          {p * 37 + 1, 8 * p}, {4099, 200}};
}

TEST(FairringPlan, AllreduceCutsSlicesIntoPartsOfTheNode) {
  for (int g : {1, 2, 3, 5})
    for (int m : {1, 2, 3})
      for (pg_dtype d : kOneOfEachSize)
        for (const Case &c : cases(shape_of(g, m, 0))) {
          const Shape s = shape_of(g, m, g * m - 1);
          const auto a = CollArgs::reduction(Coll::allreduce, nullptr, nullptr, c.count, d, PG_SUM);
          const auto p = pg::fairring::allreduce_plan(a, s, c.slot_bytes);
          SCOPED_TRACE(testing::Message() << "G=" << g << " M=" << m << " " << pg_dtype_name(d) << " count "
                                          << c.count << " slot " << c.slot_bytes);
          const std::size_t fits = std::max<std::size_t>(c.slot_bytes / pg_dtype_size(d), 1);
          expect_slices(*p, c.count, fits);
          EXPECT_TRUE(p->reduces() && p->gathers());
          EXPECT_EQ(p->pieces(), 1u);
          EXPECT_EQ(p->gathered_bytes, c.count * pg_dtype_size(d));
          std::vector<int> seen(c.count, 0);
          for (std::size_t k = 0; k < p->slices; ++k) {
            // Every slice but the last splits into G equal parts where a slot holds G elements.
            if (k + 1 < p->slices && fits >= static_cast<std::size_t>(g))
              EXPECT_EQ(p->slice_count(k) % static_cast<std::size_t>(g), 0u) << "slice " << k;
            std::size_t in_slice = 0, smallest = SIZE_MAX, largest = 0;
            for (int q = 0; q < g; ++q) {
              const std::size_t len = p->piece_len(k, q);
              EXPECT_EQ(p->shard_len(k, q), len);
              EXPECT_EQ(p->shard_offset(k, q), in_slice) << "part " << q;
              EXPECT_EQ(p->piece_offset(k, q, 0), p->slice_begin(k) + in_slice);
              for (std::size_t i = 0; i < len; ++i) ++seen[p->piece_offset(k, q, 0) + i];
              in_slice += len;
              smallest = std::min(smallest, len);
              largest = std::max(largest, len);
            }
            EXPECT_EQ(in_slice, p->slice_count(k));
            EXPECT_LE(largest - smallest, 1u) << "parts differ by one element at most";
          }
          EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
        }
}

// reduce_scatter and allgather: a slice is one range of every rank's block;
// local rank q's shard holds that range of the blocks of the M ranks of its
// rail, node by node.
void expect_block_pieces(const Plan &p, const Shape &s, std::size_t count) {
  const std::size_t m = static_cast<std::size_t>(s.nodes);
  EXPECT_EQ(p.pieces(), m);
  std::vector<int> seen(count * static_cast<std::size_t>(s.size), 0);
  for (std::size_t k = 0; k < p.slices; ++k)
    for (int q = 0; q < s.local_size; ++q) {
      EXPECT_EQ(p.piece_len(k, q), p.slice_count(k));
      EXPECT_EQ(p.shard_len(k, q), m * p.slice_count(k));
      for (std::size_t j = 0; j < m; ++j) {
        const int owner = s.rank_at(static_cast<int>(j), q);
        EXPECT_EQ(p.piece_offset(k, q, j), static_cast<std::size_t>(owner) * count + p.slice_begin(k));
        for (std::size_t i = 0; i < p.piece_len(k, q); ++i) ++seen[p.piece_offset(k, q, j) + i];
      }
    }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

TEST(FairringPlan, ReduceScatterPacksEveryBlocksRangeIntoOneSlot) {
  for (int g : {2, 3})
    for (int m : {1, 2, 3})
      for (pg_dtype d : kOneOfEachSize)
        for (const Case &c : cases(shape_of(g, m, 0))) {
          const Shape s = shape_of(g, m, 1);
          const auto a = CollArgs::reduction(Coll::reduce_scatter, nullptr, nullptr, c.count, d, PG_SUM);
          const auto p = pg::fairring::reduce_scatter_plan(a, s, c.slot_bytes);
          SCOPED_TRACE(testing::Message() << "G=" << g << " M=" << m << " " << pg_dtype_name(d) << " count "
                                          << c.count << " slot " << c.slot_bytes);
          const std::size_t ranks = static_cast<std::size_t>(s.size), es = pg_dtype_size(d);
          expect_slices(*p, c.count, std::max<std::size_t>(c.slot_bytes / (es * ranks), 1));
          EXPECT_TRUE(p->reduces());
          EXPECT_FALSE(p->gathers());
          for (std::size_t k = 0; k < p->slices; ++k) {
            // A rank's contribution to a slice, shard after shard, fills at most one slot.
            const int last = s.local_size - 1;
            EXPECT_LE((p->shard_offset(k, last) + p->shard_len(k, last)) * es,
                      std::max(c.slot_bytes, ranks * es));
            for (int q = 0; q < s.local_size; ++q)
              EXPECT_EQ(p->shard_offset(k, q), static_cast<std::size_t>(q) * p->shard_len(k, q));
          }
          expect_block_pieces(*p, s, c.count);
        }
}

TEST(FairringPlan, AllgatherGathersTheRailsRangesIntoOneSlot) {
  for (int g : {2, 3})
    for (int m : {1, 2, 3})
      for (pg_dtype d : kOneOfEachSize)
        for (const Case &c : cases(shape_of(g, m, 0))) {
          const Shape s = shape_of(g, m, g * m - 1);
          const auto a = CollArgs::movement(Coll::allgather, nullptr, nullptr, c.count, d);
          const auto p = pg::fairring::allgather_plan(a, s, c.slot_bytes);
          SCOPED_TRACE(testing::Message() << "G=" << g << " M=" << m << " " << pg_dtype_name(d) << " count "
                                          << c.count << " slot " << c.slot_bytes);
          const std::size_t es = pg_dtype_size(d), nodes = static_cast<std::size_t>(m);
          expect_slices(*p, c.count, std::max<std::size_t>(c.slot_bytes / (es * nodes), 1));
          EXPECT_FALSE(p->reduces());
          EXPECT_TRUE(p->gathers());
          EXPECT_EQ(p->gathered_bytes, c.count * es * static_cast<std::size_t>(s.size));
          for (std::size_t k = 0; k < p->slices; ++k) EXPECT_LE(p->shard_len(k, s.local) * es, std::max(c.slot_bytes, nodes * es));
          expect_block_pieces(*p, s, c.count);
        }
}

// PG_AVG is summed across the node and the rails, and divided once at the end.
TEST(FairringPlan, AverageCombinesAsASum) {
  const Shape s = shape_of(2, 2, 0);
  const auto a = CollArgs::reduction(Coll::allreduce, nullptr, nullptr, 10, PG_FLOAT32, PG_AVG);
  EXPECT_EQ(pg::fairring::allreduce_plan(a, s, 64)->combine_op(), PG_SUM);
  const auto b = CollArgs::reduction(Coll::allreduce, nullptr, nullptr, 10, PG_FLOAT32, PG_MAX);
  EXPECT_EQ(pg::fairring::allreduce_plan(b, s, 64)->combine_op(), PG_MAX);
}

}  // namespace
