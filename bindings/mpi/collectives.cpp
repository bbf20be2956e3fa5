// MPI's collective entry points, routed through the communicator's strategy
// when the library has what the call needs, else MPI's own (PMPI_*). Every
// check that decides the way depends only on what MPI requires every rank to
// pass alike (the communicator; the datatype and operation of a reduction;
// the size of the data), so all ranks of a call go the same way.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "layer.h"

using namespace pgs_mpi;

namespace {

char *at(void *p, std::size_t offset) { return static_cast<char *>(p) + offset; }
const char *at(const void *p, std::size_t offset) { return static_cast<const char *>(p) + offset; }

// MPI's counts and displacements (in elements of `element` bytes) as the
// library's, in bytes. Displacements may be negative in MPI: the base moves
// down to the lowest block, so every displacement is >= 0 from it.
struct Blocks {
  std::vector<std::size_t> counts, displs;
  std::ptrdiff_t base = 0;  // bytes from the caller's buffer to the library's

  bool set(int n, const int *mpi_counts, const int *mpi_displs, std::size_t element) {
    counts.resize(static_cast<std::size_t>(n));
    displs.resize(static_cast<std::size_t>(n));
    int lowest = 0;
    for (int r = 0; r < n; ++r) {
      if (mpi_counts[r] < 0) return false;
      lowest = std::min(lowest, mpi_displs[r]);
    }
    base = static_cast<std::ptrdiff_t>(lowest) * static_cast<std::ptrdiff_t>(element);
    for (int r = 0; r < n; ++r) {
      counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(mpi_counts[r]) * element;
      displs[static_cast<std::size_t>(r)] = static_cast<std::size_t>(mpi_displs[r] - lowest) * element;
    }
    return true;
  }
  template <typename T> T *from(T *p) const { return p ? at(p, 0) + base : nullptr; }
};

// Sums of counts before `rank`, in elements.
std::size_t before(const int *counts, int rank) {
  std::size_t n = 0;
  for (int r = 0; r < rank; ++r) n += static_cast<std::size_t>(counts[r]);
  return n;
}

// The size of one element of a contiguous datatype, or false.
bool element(Call &c, MPI_Datatype type, std::size_t *bytes) { return c.moves(type, 1, bytes); }

}  // namespace

extern "C" {

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Call c(Kind::allreduce, comm);
  pg_dtype d;
  pg_op o;
  std::size_t bytes;
  if (!c.reduces(datatype, op, count, &d, &o, &bytes) || !c.strategy())
    return c.pass(PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm));
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return c.finish(pg_allreduce(c.strategy(), in, recvbuf, static_cast<std::size_t>(count), d, o), bytes);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  Call c(Kind::reduce, comm);
  pg_dtype d;
  pg_op o;
  std::size_t bytes;
  if (!c.reduces(datatype, op, count, &d, &o, &bytes) || !c.strategy())
    return c.pass(PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm));
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return c.finish(pg_reduce(s, in, is_root ? recvbuf : nullptr, static_cast<std::size_t>(count), d, o, root), bytes);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Call c(Kind::bcast, comm);
  std::size_t bytes;
  if (!c.moves(datatype, count, &bytes) || !c.strategy())
    return c.pass(PMPI_Bcast(buffer, count, datatype, root, comm));
  return c.finish(pg_broadcast(c.strategy(), buffer, bytes, PG_UINT8, root), bytes);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  Call c(Kind::allgather, comm);
  std::size_t block, sent;
  if (!c.moves(recvtype, recvcount, &block) || (sendbuf != MPI_IN_PLACE && !c.moves(sendtype, sendcount, &sent)) ||
      !c.strategy())
    return c.pass(PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
  pg_strategy *s = c.strategy();
  const std::size_t mine = static_cast<std::size_t>(pg_strategy_rank(s)) * block;
  const void *in = sendbuf == MPI_IN_PLACE ? at(recvbuf, mine) : sendbuf;
  return c.finish(pg_allgather(s, in, recvbuf, block, PG_UINT8),
                  block * static_cast<std::size_t>(pg_strategy_size(s)));
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  Call c(Kind::allgatherv, comm);
  std::size_t elem, sent = 0;
  Blocks b;
  if (!element(c, recvtype, &elem) || (sendbuf != MPI_IN_PLACE && !c.moves(sendtype, sendcount, &sent)) ||
      !c.strategy() || !b.set(pg_strategy_size(c.strategy()), recvcounts, displs, elem))
    return c.pass(PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm));
  pg_strategy *s = c.strategy();
  const int rank = pg_strategy_rank(s);
  const void *in = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    in = at(b.from(recvbuf), b.displs[static_cast<std::size_t>(rank)]);
    sent = b.counts[static_cast<std::size_t>(rank)];
  }
  std::size_t total = 0;
  for (std::size_t n : b.counts) total += n;
  return c.finish(pg_allgatherv(s, in, sent, b.from(recvbuf), b.counts.data(), b.displs.data(), PG_UINT8), total);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Call c(Kind::gather, comm);
  auto mpi = [&] { return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); };
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  std::size_t block, sent;
  if (is_root ? !c.moves(recvtype, recvcount, &block) || (sendbuf != MPI_IN_PLACE && !c.moves(sendtype, sendcount, &sent))
              : !c.moves(sendtype, sendcount, &block))
    return c.pass(mpi());
  const void *in = sendbuf == MPI_IN_PLACE ? at(recvbuf, static_cast<std::size_t>(root) * block) : sendbuf;
  return c.finish(pg_gather(s, in, is_root ? recvbuf : nullptr, block, PG_UINT8, root), block);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Call c(Kind::gatherv, comm);
  auto mpi = [&] {
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  };
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  std::size_t elem, sent = 0;
  Blocks b;
  if (is_root ? !element(c, recvtype, &elem) || (sendbuf != MPI_IN_PLACE && !c.moves(sendtype, sendcount, &sent)) ||
                    !b.set(pg_strategy_size(s), recvcounts, displs, elem)
              : !c.moves(sendtype, sendcount, &sent))
    return c.pass(mpi());
  const void *in = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    in = at(b.from(recvbuf), b.displs[static_cast<std::size_t>(root)]);
    sent = b.counts[static_cast<std::size_t>(root)];
  }
  return c.finish(pg_gatherv(s, in, sent, is_root ? b.from(recvbuf) : nullptr, is_root ? b.counts.data() : nullptr,
                             is_root ? b.displs.data() : nullptr, PG_UINT8, root),
                  sent);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Call c(Kind::scatter, comm);
  auto mpi = [&] { return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); };
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  std::size_t block, received;
  if (is_root ? !c.moves(sendtype, sendcount, &block) || (recvbuf != MPI_IN_PLACE && !c.moves(recvtype, recvcount, &received))
              : !c.moves(recvtype, recvcount, &block))
    return c.pass(mpi());
  void *out = recvbuf == MPI_IN_PLACE ? at(const_cast<void *>(sendbuf), static_cast<std::size_t>(root) * block) : recvbuf;
  return c.finish(pg_scatter(s, is_root ? sendbuf : nullptr, out, block, PG_UINT8, root), block);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Call c(Kind::scatterv, comm);
  auto mpi = [&] {
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  };
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  std::size_t elem, received = 0;
  Blocks b;
  if (is_root ? !element(c, sendtype, &elem) || (recvbuf != MPI_IN_PLACE && !c.moves(recvtype, recvcount, &received)) ||
                    !b.set(pg_strategy_size(s), sendcounts, displs, elem)
              : !c.moves(recvtype, recvcount, &received))
    return c.pass(mpi());
  void *out = recvbuf;
  if (recvbuf == MPI_IN_PLACE) {
    out = at(b.from(const_cast<void *>(sendbuf)), b.displs[static_cast<std::size_t>(root)]);
    received = b.counts[static_cast<std::size_t>(root)];
  }
  return c.finish(pg_scatterv(s, is_root ? b.from(sendbuf) : nullptr, is_root ? b.counts.data() : nullptr,
                              is_root ? b.displs.data() : nullptr, out, received, PG_UINT8, root),
                  received);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  Call c(Kind::alltoall, comm);
  std::size_t block, sent;
  if (!c.moves(recvtype, recvcount, &block) || (sendbuf != MPI_IN_PLACE && !c.moves(sendtype, sendcount, &sent)) ||
      !c.strategy())
    return c.pass(PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
  pg_strategy *s = c.strategy();
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return c.finish(pg_alltoall(s, in, recvbuf, block, PG_UINT8), block * static_cast<std::size_t>(pg_strategy_size(s)));
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  Call c(Kind::alltoallv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  std::size_t relem, selem;
  Blocks sb, rb;
  if (!element(c, recvtype, &relem) || (!in_place && !element(c, sendtype, &selem)) || !c.strategy() ||
      !rb.set(pg_strategy_size(c.strategy()), recvcounts, rdispls, relem) ||
      (!in_place && !sb.set(pg_strategy_size(c.strategy()), sendcounts, sdispls, selem)))
    return c.pass(
        PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm));
  // In place, what goes to each rank is where its block arrives.
  if (in_place) sb = rb;
  const void *in = in_place ? static_cast<const void *>(rb.from(recvbuf)) : sb.from(sendbuf);
  std::size_t total = 0;
  for (std::size_t n : rb.counts) total += n;
  return c.finish(pg_alltoallv(c.strategy(), in, sb.counts.data(), sb.displs.data(), rb.from(recvbuf),
                               rb.counts.data(), rb.displs.data(), PG_UINT8),
                  total);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  Call c(Kind::reduce_scatter_block, comm);
  pg_dtype d;
  pg_op o;
  std::size_t block;
  if (!c.reduces(datatype, op, recvcount, &d, &o, &block) || !c.strategy())
    return c.pass(PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm));
  pg_strategy *s = c.strategy();
  const std::size_t mine = static_cast<std::size_t>(pg_strategy_rank(s)) * block;
  const std::size_t total = block * static_cast<std::size_t>(pg_strategy_size(s));
  if (sendbuf != MPI_IN_PLACE)
    return c.finish(pg_reduce_scatter(s, sendbuf, recvbuf, static_cast<std::size_t>(recvcount), d, o), total);
  // In place MPI's result lands at the start of recvbuf, the library's in the
  // rank's block of it.
  const pg_status st = pg_reduce_scatter(s, recvbuf, at(recvbuf, mine), static_cast<std::size_t>(recvcount), d, o);
  if (st == PG_OK && mine) std::memmove(recvbuf, at(recvbuf, mine), block);
  return c.finish(st, total);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  Call c(Kind::reduce_scatter, comm);
  pg_dtype d;
  pg_op o;
  std::size_t elem;
  if (!c.reduces(datatype, op, 1, &d, &o, &elem) || !c.strategy())
    return c.pass(PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm));
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    if (recvcounts[r] < 0) return c.pass(Why::datatype, PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm));
    counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(recvcounts[r]);
  }
  const std::size_t total = before(recvcounts, size) * elem;
  if (sendbuf != MPI_IN_PLACE) return c.finish(pg_reduce_scatterv(s, sendbuf, recvbuf, counts.data(), d, o), total);
  const std::size_t mine = before(recvcounts, rank) * elem;
  const pg_status st = pg_reduce_scatterv(s, recvbuf, at(recvbuf, mine), counts.data(), d, o);
  if (st == PG_OK && mine) std::memmove(recvbuf, at(recvbuf, mine), counts[static_cast<std::size_t>(rank)] * elem);
  return c.finish(st, total);
}

int MPI_Barrier(MPI_Comm comm) {
  Call c(Kind::barrier, comm);
  if (!c.strategy()) return c.pass(PMPI_Barrier(comm));
  return c.finish(pg_barrier(c.strategy()), 0);
}

// The nonblocking collectives stay MPI's (a library work cannot complete an
// MPI request that MPI_Wait and MPI_Test would see); they are counted.
#define PGS_NONBLOCKING(kind, call) \
  Call c(Kind::kind, comm);         \
  return c.pass(Why::nonblocking, call)

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
  PGS_NONBLOCKING(iallreduce, PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request));
}
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(ireduce, PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request));
}
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(ibcast, PMPI_Ibcast(buffer, count, datatype, root, comm, request));
}
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(iallgather, PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request));
}
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(iallgatherv, PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                                comm, request));
}
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(igather,
                  PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request));
}
int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(igatherv, PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                                          comm, request));
}
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(iscatter,
                  PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, request));
}
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(iscatterv, PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                                            comm, request));
}
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(ialltoall, PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request));
}
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                   MPI_Request *request) {
  PGS_NONBLOCKING(ialltoallv, PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                              recvtype, comm, request));
}
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(ireduce_scatter, PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request));
}
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request) {
  PGS_NONBLOCKING(ireduce_scatter_block,
                  PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request));
}
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) { PGS_NONBLOCKING(ibarrier, PMPI_Ibarrier(comm, request)); }

// The summary, then every strategy left, before MPI finalizes.
int MPI_Finalize(void) {
  print_summary();
  destroy_all();
  return PMPI_Finalize();
}

}  // extern "C"
