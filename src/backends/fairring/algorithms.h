// fairring's algorithms in one table: what each is called, when the rule
// chooses it, what it does, and the predicates the code chooses with, so that
// pg_strategy_describe, docs/algorithms.md and the choice cannot drift apart.
// Each algorithm lives in its own file; docs/algorithms.md has their steps and
// bytes moved. PGS_FAIRRING_ALGO forces one by name.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"

namespace pg::fairring {

enum class Algorithm { fast, flat, hierarchical, leaders };

class FastPath;

// What the rule needs to know of a strategy, fixed at creation.
struct Situation {
  bool cuda = false;
  bool irregular = false;      // nodes hold different numbers of ranks
  bool transport = false;      // a node transport exists (what hierarchical runs on)
  int size = 1;                // ranks
  std::size_t min_bytes = 0;   // PGS_FAIRRING_MIN_BYTES in effect
  const FastPath *fast = nullptr;  // the small-message path, where the node has one
  int nodes = 1, local_size = 1;   // nodes, and ranks per node (regular layouts)
};

struct AlgorithmInfo {
  Algorithm algorithm;
  const char *name;
  const char *when;   // when the automatic rule chooses it
  const char *needs;  // what it needs to run at all (a forced algorithm is checked against it)
  const char *what;   // what it does
  // Whether it can run this call here.
  bool (*fits)(const Situation &, const CollArgs &);
  // Whether the automatic rule takes it (rows are tried in order; flat when none does).
  bool (*chosen)(const Situation &, const CollArgs &);
};

// The bytes a collective's size is measured in (as nccl-tests does): the
// buffer of allreduce, the whole (all ranks') buffer of reduce_scatter and
// allgather. The uneven collectives' sizes differ by rank, so no rule may
// choose by them (every rank must choose alike): the largest size_t.
std::size_t message_bytes(const CollArgs &a, int ranks);

const AlgorithmInfo &info(Algorithm algorithm);
// "auto" and every algorithm's name: what PGS_FAIRRING_ALGO takes.
std::vector<const char *> algorithm_choices();
// The algorithm named `name` ("fast", "flat", "hierarchical", "leaders"), if any.
std::optional<Algorithm> algorithm_named(const std::string &name);

// The algorithm for one call: `forced` when it fits the call (flat otherwise),
// else the first row whose rule takes it.
Algorithm choose(const Situation &s, const CollArgs &a, std::optional<Algorithm> forced);
// At creation: PG_ERR_INVALID_ARGUMENT naming PGS_FAIRRING_ALGO when the forced
// algorithm cannot run an allreduce here, with what it needs and what can.
pg_status check_forced(const Situation &s, std::optional<Algorithm> forced);
// The rule in words, for pg_strategy_describe ("allreduce: flat below 32 KiB,
// hierarchical from there").
std::string describe_rule(const Situation &s, std::optional<Algorithm> forced);

}  // namespace pg::fairring
