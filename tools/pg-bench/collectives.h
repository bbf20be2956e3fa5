// The collectives pg-bench measures: names, bus-bandwidth factors and how a
// row's size maps to each call's counts and buffers (nccl-tests' conventions).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace pgbench {

enum class Collective { Allreduce, Allgather, ReduceScatter, Broadcast, Alltoall, Allgatherv, ReduceScatterv, Alltoallv };

// How the uneven collectives split a row's elements between ranks (--pattern):
//   skewed  allgatherv, reduce_scatterv: rank q's block is proportional to q+1
//           (the last rank's P times the first's); alltoallv: rank q sends
//           rank r a share proportional to 1 + (q+r) mod P, so every rank sends
//           the row's size and the pairs differ by up to P times
//   moe     expert dispatch: one expert per rank, every rank's tokens split
//           over the experts by the same Zipf law (expert r's share
//           proportional to 1/(r+1)): rank 0 receives the most; allgatherv and
//           reduce_scatterv: rank r's block proportional to 1/(r+1)
enum class Pattern { Skewed, Moe };
const char *pattern_name(Pattern p);
bool parse_pattern(const std::string &name, Pattern *out);
bool is_uneven(Collective c);

const char *collective_name(Collective c);
bool parse_collective(const std::string &name, Collective *out);
std::string collective_names();
const std::vector<Collective> &all_collectives();

// busbw = algbw * factor: the bytes each rank must move over its busiest link,
// relative to the row's size, for the optimal algorithm on n ranks:
//   allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall and their uneven
//   forms (n-1)/n; broadcast 1.
double busbw_factor(Collective c, int nranks);

// Whether the collective has a separate-buffer (out-of-place) form:
// pg_broadcast works on one buffer, so broadcast rows are in-place only.
bool has_out_of_place(Collective c);
// Whether the collective takes a reduction operator.
bool is_reduction(Collective c);

// One row's buffers. `bytes` is the size reported in the row: the largest
// buffer of the call (allreduce/broadcast: the buffer; allgather: the gathered
// result; reduce_scatter: the input; alltoall: one rank's whole send buffer).
struct Layout {
  Collective coll;
  int nranks;
  size_t elem_size;
  size_t count;       // elements in `bytes` (the row's "count")
  size_t bytes;       // count * elem_size
  size_t call_count;  // the count argument of the call
  size_t send_bytes;  // what the call reads from sendbuf (uneven: the most any rank reads)
  size_t recv_bytes;  // what the call writes to recvbuf (uneven: the most any rank writes)
  // The uneven collectives: the elements rank q sends rank r, at [q * nranks + r]
  // (allgatherv, reduce_scatterv: rank q's block at [q]); the same on every rank.
  std::shared_ptr<const std::vector<size_t>> split;
};

// One rank's arrays of an uneven row (elements; displacements: blocks packed
// in rank order): what it sends (sc, sd) and receives (rc, rd), and the
// elements of its send and receive buffers. allgatherv: rc/rd are the blocks
// of every rank, send its own; reduce_scatterv: rc the blocks (the call's
// recvcounts), sd where each starts in the send buffer.
struct UnevenCounts {
  std::vector<size_t> sc, sd, rc, rd;
  size_t send = 0, recv = 0;
};
UnevenCounts uneven_counts(const Layout &l, int rank);

// The layout nearest to `bytes` from below that the collective can use on
// nranks ranks: whole elements, and for allgather, reduce_scatter and alltoall
// a multiple of nranks elements; never less than one element per rank.
// Uneven collectives: the row's elements split by `pattern`.
Layout make_layout(Collective c, size_t bytes, size_t elem_size, int nranks, Pattern pattern = Pattern::Skewed);

}  // namespace pgbench
