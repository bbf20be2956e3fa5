// Where each rank places its point-to-point calls among the collectives of
// the program (which every rank draws alike: program.h): each rank draws its
// own placement, within what MPI allows and never so that the program could
// deadlock (the rule: schedule.cpp).
#ifndef PG_RANDOM_SCHEDULE_H
#define PG_RANDOM_SCHEDULE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "program.h"

namespace pgr {

// Every world rank's place in each strategy, gathered at the start: its group
// (the split's color, 0 on the others) and its rank there.
struct Layout {
  std::vector<std::vector<int>> group, rank;  // [strategy][world rank]
  int ranks() const { return group.empty() ? 0 : static_cast<int>(group[0].size()); }
  // The world ranks of `world_rank`'s group of `strategy`, by rank there.
  std::vector<int> members(int strategy, int world_rank) const;
};

// One step of a rank: an operation started (a blocking one runs), or the
// works of some operations waited for.
struct Step {
  bool start = true;
  Op op;                           // start: the operation as this rank calls it
  std::size_t anchor = 0;          // settle: the operation it follows in the program (--wait-order same)
  std::vector<std::size_t> works;  // settle: the operations whose works are waited for
};

struct Reordering {
  bool on = true;
  bool any_source = false;  // the backend receives from PG_ANY_SOURCE
};

// Every world rank's steps through `ops` (the program of `seed`). Reordering
// off: the program's order on every rank, its waits where the program says.
// On: each rank's own placement of its point-to-point calls, blocking or not,
// from any source or not, and where it waits for them; the collectives'
// waits where the program says.
std::vector<std::vector<Step>> schedule(const std::vector<Op> &ops, const Limits &limits, const Layout &layout,
                                        std::uint64_t seed, const Reordering &how);

// --list: `world_rank`'s point-to-point calls as it places them
// ("#12 isend/irecv, from any source, before #10, waited after #14; ...").
std::string describe_placement(const std::vector<Step> &steps, const Layout &layout, int world_rank);

// The blocking point-to-point calls that a rank makes before a collective on
// their strategy which their peer starts before its side of the message:
// where a backend queues point-to-point behind collectives, each is a
// deadlock (--list counts them).
std::size_t crossings(const std::vector<std::vector<Step>> &steps, const Layout &layout);

}  // namespace pgr

#endif
