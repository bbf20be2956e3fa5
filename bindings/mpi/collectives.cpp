// MPI's collective entry points, routed through the communicator's strategy
// when the library has what the call needs, else MPI's own (PMPI_*). Every
// check that decides the way depends only on what MPI requires every rank to
// pass alike (the communicator; the datatype and operation of a reduction;
// the size of the data), so all ranks of a call go the same way.
#include <mpi.h>

#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

#include "layer.h"

using namespace pgs_mpi;

namespace {

char *at(void *p, std::size_t offset) { return static_cast<char *>(p) + offset; }

// The name of the first null array among those this rank reads, or null.
const char *null_of(std::initializer_list<std::pair<const void *, const char *>> arrays) {
  for (const auto &a : arrays)
    if (!a.first) return a.second;
  return nullptr;
}

// Each collective once, for MPI's int counts and (MPI 4) the _c forms'
// MPI_Count ones; `mpi` is the call to MPI's own entry point.

template <typename Count, typename Mpi>
int allreduce(const void *sendbuf, void *recvbuf, Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              Mpi mpi) {
  Call c(Kind::allreduce, comm);
  pg_dtype d;
  pg_op o;
  std::size_t bytes;
  if (!c.reduces(datatype, op, count, &d, &o, &bytes) || !c.strategy()) return c.pass(mpi());
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return c.finish(pg_allreduce(c.strategy(), in, recvbuf, static_cast<std::size_t>(count), d, o), bytes);
}

template <typename Count, typename Mpi>
int reduce(const void *sendbuf, void *recvbuf, Count count, MPI_Datatype datatype, MPI_Op op, int root,
           MPI_Comm comm, Mpi mpi) {
  Call c(Kind::reduce, comm);
  pg_dtype d;
  pg_op o;
  std::size_t bytes;
  if (!c.reduces(datatype, op, count, &d, &o, &bytes) || !c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return c.finish(pg_reduce(s, in, is_root ? recvbuf : nullptr, static_cast<std::size_t>(count), d, o, root), bytes);
}

template <typename Count, typename Mpi>
int bcast(void *buffer, Count count, MPI_Datatype datatype, int root, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::bcast, comm);
  Buffer b;
  if (!c.strategy() || !b.one(c, buffer, count, datatype)) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  if (is_root) b.pack();
  const pg_status st = pg_broadcast(s, b.data(), b.total(), PG_UINT8, root);
  if (st == PG_OK && !is_root) b.unpack();
  return c.finish(st, b.total());
}

template <typename Count, typename Mpi>
int allgather(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, Count recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::allgather, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  if (!recv.one(c, recvbuf, static_cast<MPI_Count>(recvcount) * size, recvtype) ||
      (!in_place && !send.one(c, sendbuf, sendcount, sendtype)))
    return c.pass(mpi());
  const std::size_t block = recv.total() / static_cast<std::size_t>(size);
  in_place ? recv.pack() : send.pack();
  const void *in = in_place ? recv.data() + static_cast<std::size_t>(rank) * block : send.data();
  const pg_status st = pg_allgather(s, in, recv.data(), block, PG_UINT8);
  if (st == PG_OK) recv.unpack();
  return c.finish(st, recv.total());
}

template <typename Count, typename Displ, typename Mpi>
int allgatherv(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, const Count recvcounts[],
               const Displ displs[], MPI_Datatype recvtype, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::allgatherv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  if (const char *array = null_of({{recvcounts, "recvcounts"}, {displs, "displs"}}))
    return c.refuse_null("MPI_Allgatherv", array);
  pg_strategy *s = c.strategy();
  const std::size_t rank = static_cast<std::size_t>(pg_strategy_rank(s));
  if (!recv.runs(c, recvbuf, pg_strategy_size(s), recvcounts, displs, recvtype) ||
      (!in_place && !send.one(c, sendbuf, sendcount, sendtype)))
    return c.pass(mpi());
  in_place ? recv.pack() : send.pack();
  const void *in = in_place ? recv.data() + recv.displs()[rank] : send.data();
  const std::size_t sent = in_place ? recv.counts()[rank] : send.total();
  const pg_status st = pg_allgatherv(s, in, sent, recv.data(), recv.counts(), recv.displs(), PG_UINT8);
  if (st == PG_OK) recv.unpack();
  return c.finish(st, recv.total());
}

template <typename Count, typename Mpi>
int gather(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, Count recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::gather, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s);
  const bool is_root = pg_strategy_rank(s) == root;
  if ((is_root && !recv.one(c, recvbuf, static_cast<MPI_Count>(recvcount) * size, recvtype)) ||
      (!(is_root && in_place) && !send.one(c, sendbuf, sendcount, sendtype)))
    return c.pass(mpi());
  const std::size_t block = is_root ? recv.total() / static_cast<std::size_t>(size) : send.total();
  is_root && in_place ? recv.pack() : send.pack();
  const void *in = is_root && in_place ? recv.data() + static_cast<std::size_t>(root) * block : send.data();
  const pg_status st = pg_gather(s, in, is_root ? recv.data() : nullptr, block, PG_UINT8, root);
  if (st == PG_OK && is_root) recv.unpack();
  return c.finish(st, block);
}

template <typename Count, typename Displ, typename Mpi>
int gatherv(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, const Count recvcounts[],
            const Displ displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::gatherv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  if (const char *array = is_root ? null_of({{recvcounts, "recvcounts"}, {displs, "displs"}}) : nullptr)
    return c.refuse_null("MPI_Gatherv", array);
  if ((is_root && !recv.runs(c, recvbuf, pg_strategy_size(s), recvcounts, displs, recvtype)) ||
      (!(is_root && in_place) && !send.one(c, sendbuf, sendcount, sendtype)))
    return c.pass(mpi());
  const std::size_t r = static_cast<std::size_t>(root);
  is_root && in_place ? recv.pack() : send.pack();
  const void *in = is_root && in_place ? recv.data() + recv.displs()[r] : send.data();
  const std::size_t sent = is_root && in_place ? recv.counts()[r] : send.total();
  const pg_status st = pg_gatherv(s, in, sent, is_root ? recv.data() : nullptr, is_root ? recv.counts() : nullptr,
                                  is_root ? recv.displs() : nullptr, PG_UINT8, root);
  if (st == PG_OK && is_root) recv.unpack();
  return c.finish(st, sent);
}

template <typename Count, typename Mpi>
int scatter(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, Count recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::scatter, comm);
  const bool in_place = recvbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s);
  const bool is_root = pg_strategy_rank(s) == root;
  if ((is_root && !send.one(c, sendbuf, static_cast<MPI_Count>(sendcount) * size, sendtype)) ||
      (!(is_root && in_place) && !recv.one(c, recvbuf, recvcount, recvtype)))
    return c.pass(mpi());
  const std::size_t block = is_root ? send.total() / static_cast<std::size_t>(size) : recv.total();
  send.pack();
  // In place the root's own block stays where it is: the library's copy of
  // it lands in the staged (or the caller's own) send buffer.
  void *out = is_root && in_place ? send.data() + static_cast<std::size_t>(root) * block : recv.data();
  const pg_status st = pg_scatter(s, is_root ? send.data() : nullptr, out, block, PG_UINT8, root);
  if (st == PG_OK && !(is_root && in_place)) recv.unpack();
  return c.finish(st, block);
}

template <typename Count, typename Displ, typename Mpi>
int scatterv(const void *sendbuf, const Count sendcounts[], const Displ displs[], MPI_Datatype sendtype,
             void *recvbuf, Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::scatterv, comm);
  const bool in_place = recvbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const bool is_root = pg_strategy_rank(s) == root;
  if (const char *array = is_root ? null_of({{sendcounts, "sendcounts"}, {displs, "displs"}}) : nullptr)
    return c.refuse_null("MPI_Scatterv", array);
  if ((is_root && !send.runs(c, sendbuf, pg_strategy_size(s), sendcounts, displs, sendtype)) ||
      (!(is_root && in_place) && !recv.one(c, recvbuf, recvcount, recvtype)))
    return c.pass(mpi());
  const std::size_t r = static_cast<std::size_t>(root);
  send.pack();
  void *out = is_root && in_place ? send.data() + send.displs()[r] : recv.data();
  const std::size_t received = is_root && in_place ? send.counts()[r] : recv.total();
  const pg_status st = pg_scatterv(s, is_root ? send.data() : nullptr, is_root ? send.counts() : nullptr,
                                   is_root ? send.displs() : nullptr, out, received, PG_UINT8, root);
  if (st == PG_OK && !(is_root && in_place)) recv.unpack();
  return c.finish(st, received);
}

template <typename Count, typename Mpi>
int alltoall(const void *sendbuf, Count sendcount, MPI_Datatype sendtype, void *recvbuf, Count recvcount,
             MPI_Datatype recvtype, MPI_Comm comm, Mpi mpi) {
  Call c(Kind::alltoall, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s);
  if (!recv.one(c, recvbuf, static_cast<MPI_Count>(recvcount) * size, recvtype) ||
      (!in_place && !send.one(c, sendbuf, static_cast<MPI_Count>(sendcount) * size, sendtype)))
    return c.pass(mpi());
  in_place ? recv.pack() : send.pack();
  const pg_status st = pg_alltoall(s, in_place ? recv.data() : send.data(), recv.data(),
                                   recv.total() / static_cast<std::size_t>(size), PG_UINT8);
  if (st == PG_OK) recv.unpack();
  return c.finish(st, recv.total());
}

template <typename Count, typename Displ, typename Mpi>
int alltoallv(const void *sendbuf, const Count sendcounts[], const Displ sdispls[], MPI_Datatype sendtype,
              void *recvbuf, const Count recvcounts[], const Displ rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
              Mpi mpi) {
  Call c(Kind::alltoallv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Buffer send, recv;
  if (!c.strategy()) return c.pass(mpi());
  if (const char *array = null_of({{recvcounts, "recvcounts"},
                                   {rdispls, "rdispls"},
                                   {in_place ? recvcounts : sendcounts, "sendcounts"},
                                   {in_place ? rdispls : sdispls, "sdispls"}}))
    return c.refuse_null("MPI_Alltoallv", array);
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s);
  if (!recv.runs(c, recvbuf, size, recvcounts, rdispls, recvtype) ||
      (!in_place && !send.runs(c, sendbuf, size, sendcounts, sdispls, sendtype)))
    return c.pass(mpi());
  // In place, what goes to each rank is where its block arrives.
  const Buffer &out = in_place ? recv : send;
  in_place ? recv.pack() : send.pack();
  const pg_status st = pg_alltoallv(s, out.data(), out.counts(), out.displs(), recv.data(), recv.counts(),
                                    recv.displs(), PG_UINT8);
  if (st == PG_OK) recv.unpack();
  return c.finish(st, recv.total());
}

template <typename Count, typename Mpi>
int reduce_scatter_block(const void *sendbuf, void *recvbuf, Count recvcount, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, Mpi mpi) {
  Call c(Kind::reduce_scatter_block, comm);
  pg_dtype d;
  pg_op o;
  std::size_t block;
  if (!c.reduces(datatype, op, recvcount, &d, &o, &block) || !c.strategy()) return c.pass(mpi());
  pg_strategy *s = c.strategy();
  const std::size_t mine = static_cast<std::size_t>(pg_strategy_rank(s)) * block;
  const std::size_t total = block * static_cast<std::size_t>(pg_strategy_size(s));
  const std::size_t n = static_cast<std::size_t>(recvcount);
  if (sendbuf != MPI_IN_PLACE) return c.finish(pg_reduce_scatter(s, sendbuf, recvbuf, n, d, o), total);
  // In place MPI's result lands at the start of recvbuf, the library's in the
  // rank's block of it.
  const pg_status st = pg_reduce_scatter(s, recvbuf, at(recvbuf, mine), n, d, o);
  if (st == PG_OK && mine) std::memmove(recvbuf, at(recvbuf, mine), block);
  return c.finish(st, total);
}

template <typename Count, typename Mpi>
int reduce_scatter(const void *sendbuf, void *recvbuf, const Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, Mpi mpi) {
  Call c(Kind::reduce_scatter, comm);
  pg_dtype d;
  pg_op o;
  std::size_t elem;
  if (!c.reduces(datatype, op, 1, &d, &o, &elem) || !c.strategy()) return c.pass(mpi());
  if (!recvcounts) return c.refuse_null("MPI_Reduce_scatter", "recvcounts");
  pg_strategy *s = c.strategy();
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  std::vector<std::size_t> counts(static_cast<std::size_t>(size));
  std::size_t before = 0, total = 0;
  for (int r = 0; r < size; ++r) {
    if (recvcounts[r] < 0) return c.pass(mpi());  // MPI says what is wrong
    counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>(recvcounts[r]);
    if (r < rank) before += counts[static_cast<std::size_t>(r)];
    total += counts[static_cast<std::size_t>(r)];
  }
  if (sendbuf != MPI_IN_PLACE) return c.finish(pg_reduce_scatterv(s, sendbuf, recvbuf, counts.data(), d, o), total * elem);
  const std::size_t mine = before * elem;
  const pg_status st = pg_reduce_scatterv(s, recvbuf, at(recvbuf, mine), counts.data(), d, o);
  if (st == PG_OK && mine) std::memmove(recvbuf, at(recvbuf, mine), counts[static_cast<std::size_t>(rank)] * elem);
  return c.finish(st, total * elem);
}

}  // namespace

extern "C" {

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return allreduce(sendbuf, recvbuf, count, datatype, op, comm,
                   [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  return reduce(sendbuf, recvbuf, count, datatype, op, root, comm,
                [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast(buffer, count, datatype, root, comm, [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, [&] {
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  });
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, [&] {
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  });
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, [&] {
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  });
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, [&] {
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  });
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, [&] {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  });
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, [&] {
    return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  });
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm,
                        [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm); });
}

int MPI_Barrier(MPI_Comm comm) {
  Call c(Kind::barrier, comm);
  if (!c.strategy()) return c.pass(PMPI_Barrier(comm));
  return c.finish(pg_barrier(c.strategy()), 0);
}

#if MPI_VERSION >= 4
// The large-count forms (MPI 4): the same collectives, counts above INT_MAX.
int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm) {
  return allreduce(sendbuf, recvbuf, count, datatype, op, comm,
                   [&] { return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                 MPI_Comm comm) {
  return reduce(sendbuf, recvbuf, count, datatype, op, root, comm,
                [&] { return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast(buffer, count, datatype, root, comm, [&] { return PMPI_Bcast_c(buffer, count, datatype, root, comm); });
}

int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, [&] {
    return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  });
}

int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, [&] {
    return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  });
}

int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm) {
  return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, [&] {
    return PMPI_Gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  });
}

int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[], MPI_Datatype sendtype,
                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, [&] {
    return PMPI_Scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  });
}

int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, [&] {
    return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  });
}

int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                    MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, [&] {
    return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  });
}

int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm) {
  return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, [&] {
    return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
  });
}

int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm) {
  return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm,
                        [&] { return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm); });
}
#endif  // MPI_VERSION >= 4

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
