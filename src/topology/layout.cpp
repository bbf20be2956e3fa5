#include "topology/layout.h"

#include "util/owned_comm.h"
#include "util/status.h"

namespace pg::topology {

namespace {

// The virtual node of `rank`: nodes of node_sizes ranks in turn, the last size repeating.
int virtual_node(int rank, const std::vector<int> &node_sizes) {
  int node = 0, first = 0;
  for (std::size_t i = 0;; ++node) {
    first += node_sizes[i];
    if (rank < first) return node;
    if (i + 1 < node_sizes.size()) ++i;
  }
}

}  // namespace

std::string node_sizes_text(const std::vector<int> &node_sizes) {
  std::string text;
  for (int n : node_sizes) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

pg_status build_layout(MPI_Comm comm, const std::vector<int> &node_sizes, Layout *out) {
  Layout l;
  int rank = 0, size = 0;
  PG_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (!node_sizes.empty())
    PG_MPI_CHECK(MPI_Comm_split(comm, virtual_node(rank, node_sizes), rank, &l.node_comm));
  else
    PG_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &l.node_comm));
  mark_owned(l.node_comm);
  PG_MPI_CHECK(MPI_Comm_set_errhandler(l.node_comm, MPI_ERRORS_RETURN));
  PG_MPI_CHECK(MPI_Comm_rank(l.node_comm, &l.local_rank));
  PG_MPI_CHECK(MPI_Comm_size(l.node_comm, &l.local_size));

  // Nodes are numbered by their lowest rank: node leaders rank themselves.
  MPI_Comm leaders = MPI_COMM_NULL;
  PG_MPI_CHECK(MPI_Comm_split(comm, l.local_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders));
  int node[2] = {0, 0};  // node rank, node count
  if (leaders != MPI_COMM_NULL) {
    mark_owned(leaders);
    MPI_Comm_rank(leaders, &node[0]);
    MPI_Comm_size(leaders, &node[1]);
    MPI_Comm_free(&leaders);
  }
  PG_MPI_CHECK(MPI_Bcast(node, 2, MPI_INT, 0, l.node_comm));
  l.node_rank = node[0];
  l.node_count = node[1];

  PG_MPI_CHECK(MPI_Comm_split(comm, l.local_rank, l.node_rank, &l.rail_comm));
  mark_owned(l.rail_comm);
  PG_MPI_CHECK(MPI_Comm_set_errhandler(l.rail_comm, MPI_ERRORS_RETURN));

  // Every rank's place: whether the layout is regular, and who sits where.
  const int mine[3] = {l.node_rank, l.local_rank, l.local_size};
  std::vector<int> all(3 * static_cast<std::size_t>(size));
  PG_MPI_CHECK(MPI_Allgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, comm));
  for (int r = 0; r < size; ++r) l.irregular = l.irregular || all[3 * r + 2] != l.local_size;
  if (!l.irregular) {
    l.rank_of.assign(static_cast<std::size_t>(size), 0);
    for (int r = 0; r < size; ++r) l.rank_of[static_cast<std::size_t>(all[3 * r] * l.local_size + all[3 * r + 1])] = r;
  }
  *out = l;
  return PG_OK;
}

pg_status dup_layout(const Layout &in, Layout *out) {
  Layout l = in;
  l.node_comm = l.rail_comm = MPI_COMM_NULL;
  PG_MPI_CHECK(MPI_Comm_dup(in.node_comm, &l.node_comm));
  if (MPI_Comm_dup(in.rail_comm, &l.rail_comm) != MPI_SUCCESS) {
    MPI_Comm_free(&l.node_comm);
    return fail(PG_ERR_BACKEND, "MPI_Comm_dup of the rail communicator failed");
  }
  *out = l;
  return PG_OK;
}

namespace {

// The layout of a communicator that is one level only: one node, or one rank
// per node; the other level is this rank alone.
Layout one_level(MPI_Comm comm, bool node) {
  Layout l;
  l.node_comm = node ? comm : MPI_COMM_SELF;
  l.rail_comm = node ? MPI_COMM_SELF : comm;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  (node ? l.local_rank : l.node_rank) = rank;
  (node ? l.local_size : l.node_count) = size;
  for (int r = 0; r < size; ++r) l.rank_of.push_back(r);
  return l;
}

}  // namespace

Layout single_node_layout(MPI_Comm node) { return one_level(node, true); }

Layout one_rank_per_node_layout(MPI_Comm rail) { return one_level(rail, false); }

void free_layout(Layout *layout) {
  if (layout->node_comm != MPI_COMM_NULL) MPI_Comm_free(&layout->node_comm);
  if (layout->rail_comm != MPI_COMM_NULL) MPI_Comm_free(&layout->rail_comm);
}

}  // namespace pg::topology
