// The library's operations, listed once. The enum, the names, the kinds and
// the table backend's entries come from PG_COLLECTIVES; what an operation's
// arguments mean and how each backend runs it are written where they are
// checked (validate.cpp) and run (each backend's run).
#pragma once

#include <cstdint>

namespace pg {

// What kind of operation it is: the flags of an entry of PG_COLLECTIVES.
namespace kind {
constexpr unsigned kReduction = 1u << 0;     // combines values with an op
constexpr unsigned kRooted = 1u << 1;        // has a root
constexpr unsigned kBlocks = 1u << 2;        // count is one rank's block of a size*count buffer
constexpr unsigned kUneven = 1u << 3;        // counts and displacements per rank (CollArgs::v)
constexpr unsigned kPointToPoint = 1u << 4;  // between two ranks, not collective
}  // namespace kind

// X(name, kinds): an operation a backend table (pg_backend_ops) has an entry
// of the same name for. COMPOSED(name, kinds): one it has none for; the
// library composes it where a backend lacks it (sendrecv from send and recv).
// The order is the enum's.
#define PG_COLLECTIVES(X, COMPOSED)                       \
  X(allreduce, kind::kReduction)                          \
  X(broadcast, kind::kRooted)                             \
  X(reduce, kind::kReduction | kind::kRooted)             \
  X(allgather, kind::kBlocks)                             \
  X(reduce_scatter, kind::kReduction | kind::kBlocks)     \
  X(alltoall, kind::kBlocks)                              \
  X(gather, kind::kRooted | kind::kBlocks)                \
  X(scatter, kind::kRooted | kind::kBlocks)               \
  X(barrier, 0u)                                          \
  X(send, kind::kPointToPoint)                            \
  X(recv, kind::kPointToPoint)                            \
  COMPOSED(sendrecv, kind::kPointToPoint)                 \
  X(allgatherv, kind::kUneven)                            \
  X(reduce_scatterv, kind::kReduction | kind::kUneven)    \
  X(alltoallv, kind::kUneven)                             \
  X(gatherv, kind::kRooted | kind::kUneven)               \
  X(scatterv, kind::kRooted | kind::kUneven)

#define PG_COLL_ENUM(name, kinds) name,
enum class Coll : std::uint8_t { PG_COLLECTIVES(PG_COLL_ENUM, PG_COLL_ENUM) };
#undef PG_COLL_ENUM

#define PG_COLL_ONE(name, kinds) +1
constexpr int kCollCount = 0 PG_COLLECTIVES(PG_COLL_ONE, PG_COLL_ONE);
#undef PG_COLL_ONE

const char *coll_name(Coll coll);

constexpr unsigned coll_kinds(Coll coll) {
#define PG_COLL_KINDS(name, kinds) kinds,
  constexpr unsigned table[] = {PG_COLLECTIVES(PG_COLL_KINDS, PG_COLL_KINDS)};
#undef PG_COLL_KINDS
  return table[static_cast<int>(coll)];
}
constexpr bool is_reduction(Coll c) { return coll_kinds(c) & kind::kReduction; }
constexpr bool is_rooted(Coll c) { return coll_kinds(c) & kind::kRooted; }
constexpr bool has_blocks(Coll c) { return coll_kinds(c) & kind::kBlocks; }
constexpr bool is_uneven(Coll c) { return coll_kinds(c) & kind::kUneven; }
constexpr bool is_point_to_point(Coll c) { return coll_kinds(c) & kind::kPointToPoint; }

}  // namespace pg
