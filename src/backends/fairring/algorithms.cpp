#include "backends/fairring/algorithms.h"

#include <cstdint>

#include "backends/fairring/fast_path.h"

#include "util/dtype.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::fairring {
namespace {

bool bitwise(pg_op op) { return op == PG_BAND || op == PG_BOR || op == PG_BXOR; }

constexpr AlgorithmInfo kAlgorithms[] = {
    {Algorithm::fast, "fast",
     "inputs and outputs up to PGS_FAIRRING_FAST_BYTES: allreduce and barrier on any layout, reduce, broadcast, allgather "
     "and reduce_scatter on one node",
     "CPU nodes of several ranks",
     "every rank publishes its input in its shared slot (inline with a cache-line flag when small) and reads "
     "the others' straight into its buffer, reducing in local-rank order; from PGS_FAIRRING_SPLIT_BYTES each "
     "rank reduces one block and copies the others' blocks (across nodes, after allreducing its block over its "
     "rail); smaller ones go up a 4-ary tree on nodes of PGS_FAIRRING_TREE_RANKS ranks or more, or across "
     "nodes through the nodes' first ranks, which run MPI among themselves and hand the result back "
     "(fast_path.cpp)",
     [](const Situation &s, const CollArgs &a) { return s.fast && s.fast->fits(a); }, nullptr},
    {Algorithm::flat, "flat", "below PGS_FAIRRING_MIN_BYTES, and wherever no other algorithm applies",
     "any layout",
     "the device default's algorithm on every rank at once (MPI; NCCL on CUDA)",
     [](const Situation &, const CollArgs &) { return true; },
     [](const Situation &s, const CollArgs &a) { return message_bytes(a, s.size) < s.min_bytes; }},
    {Algorithm::hierarchical, "hierarchical",
     "from PGS_FAIRRING_MIN_BYTES wherever it can run",
     "a regular layout with several ranks per node (CPU: allreduce, reduce_scatter, allgather), or "
     "several nodes (CUDA: allreduce without bitwise operators, which NCCL lacks)",
     "reduce-scatter in the node (shared memory; NCCL on CUDA), the shard over its rail (MPI), "
     "all-gather in the node; sliced and pipelined (allreduce_hierarchical.cpp, "
     "reduce_scatter_hierarchical.cpp, allgather_hierarchical.cpp; cuda_transport.cpp)",
     [](const Situation &s, const CollArgs &a) {
       if (!s.transport) return false;
       if (s.cuda) return a.coll == Coll::allreduce && !bitwise(a.op);
       return a.coll == Coll::allreduce || a.coll == Coll::reduce_scatter || a.coll == Coll::allgather;
     },
     nullptr},
    {Algorithm::leaders, "leaders",
     "allreduce on irregular layouts (nodes with different numbers of ranks), from PGS_FAIRRING_MIN_BYTES",
     "CPU buffers (allreduce only)",
     "reduce to each node's first rank, allreduce among those, broadcast in the node (allreduce_leaders.cpp)",
     [](const Situation &s, const CollArgs &a) { return !s.cuda && a.coll == Coll::allreduce; },
     [](const Situation &s, const CollArgs &) { return s.irregular; }},
};

// A large allreduce: what the rule is described by.
CollArgs large_allreduce() {
  return CollArgs::reduction(Coll::allreduce, nullptr, nullptr, std::size_t(1) << 40, PG_FLOAT32, PG_SUM);
}

// Whether an algorithm can run an allreduce here, of some size.
bool can_run(const AlgorithmInfo &row, const Situation &s) {
  return row.fits(s, large_allreduce()) ||
         row.fits(s, CollArgs::reduction(Coll::allreduce, nullptr, nullptr, 1, PG_FLOAT32, PG_SUM));
}

std::string names_that_fit(const Situation &s) {
  std::vector<std::string> names = {"auto"};
  for (const AlgorithmInfo &row : kAlgorithms)
    if (can_run(row, s)) names.emplace_back(row.name);
  return text::join(names, ", ");
}

}  // namespace

std::size_t message_bytes(const CollArgs &a, int ranks) {
  if (is_uneven(a.coll)) return SIZE_MAX;
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  return a.coll == Coll::allreduce ? bytes : bytes * static_cast<std::size_t>(ranks);
}

const AlgorithmInfo &info(Algorithm algorithm) {
  for (const AlgorithmInfo &row : kAlgorithms)
    if (row.algorithm == algorithm) return row;
  return kAlgorithms[0];
}

std::vector<const char *> algorithm_choices() {
  std::vector<const char *> names = {"auto"};
  for (const AlgorithmInfo &row : kAlgorithms) names.push_back(row.name);
  return names;
}

std::optional<Algorithm> algorithm_named(const std::string &name) {
  for (const AlgorithmInfo &row : kAlgorithms)
    if (name == row.name) return row.algorithm;
  return std::nullopt;
}

Algorithm choose(const Situation &s, const CollArgs &a, std::optional<Algorithm> forced) {
  if (forced) return info(*forced).fits(s, a) ? *forced : Algorithm::flat;
  for (const AlgorithmInfo &row : kAlgorithms) {
    // A row the rule takes where the algorithm can run (rules of algorithms
    // that always fit need not repeat their conditions).
    const bool takes = row.chosen ? row.chosen(s, a) : true;
    if (takes && row.fits(s, a)) return row.algorithm;
  }
  return Algorithm::flat;
}

pg_status check_forced(const Situation &s, std::optional<Algorithm> forced) {
  if (!forced || can_run(info(*forced), s)) return PG_OK;
  const AlgorithmInfo &row = info(*forced);
  return fail(PG_ERR_INVALID_ARGUMENT,
              "PGS_FAIRRING_ALGO='%s' cannot run here: %s needs %s; this strategy (%s%s) can use: %s", row.name,
              row.name, row.needs, s.cuda ? "cuda" : "cpu", s.irregular ? ", irregular layout" : "",
              names_that_fit(s).c_str());
}

std::string describe_rule(const Situation &s, std::optional<Algorithm> forced) {
  const Algorithm big = choose(s, large_allreduce(), forced);
  if (forced) return std::string("allreduce: ") + info(big).name + " at every size (PGS_FAIRRING_ALGO)";
  const std::string small = s.fast ? "fast up to " + text::format_bytes(s.fast->limit()) + ", " : "";
  if (big == Algorithm::flat)
    return "allreduce: " + small + "flat " + (s.fast ? "above" : "at every size") + " (hierarchical needs " +
           info(Algorithm::hierarchical).needs + ")";
  // Every allreduce the fast path takes never reaches the flat threshold.
  if (s.fast && s.fast->limit() >= s.min_bytes) return "allreduce: " + small + info(big).name + " above";
  return "allreduce: " + small + "flat below " + text::format_bytes(s.min_bytes) + ", " + info(big).name +
         " from there";
}

}  // namespace pg::fairring
