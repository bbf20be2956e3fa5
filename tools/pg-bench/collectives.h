// The collectives pg-bench measures: names, bus-bandwidth factors and how a
// row's size maps to each call's counts and buffers (nccl-tests' conventions).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pgbench {

enum class Collective { Allreduce, Allgather, ReduceScatter, Broadcast, Alltoall };

const char *collective_name(Collective c);
bool parse_collective(const std::string &name, Collective *out);
std::string collective_names();
const std::vector<Collective> &all_collectives();

// busbw = algbw * factor: the bytes each rank must move over its busiest link,
// relative to the row's size, for the optimal algorithm on n ranks:
//   allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; broadcast 1.
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
  size_t send_bytes;  // what the call reads from sendbuf
  size_t recv_bytes;  // what the call writes to recvbuf
};

// The layout nearest to `bytes` from below that the collective can use on
// nranks ranks: whole elements, and for allgather, reduce_scatter and alltoall
// a multiple of nranks elements; never less than one element per rank.
Layout make_layout(Collective c, size_t bytes, size_t elem_size, int nranks);

}  // namespace pgbench
