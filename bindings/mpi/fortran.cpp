// Fortran's entry points, for Open MPI alone: its Fortran bindings (mpif.h,
// the mpi module, and through ompi_*_f the mpi_f08 module) call PMPI_*
// directly, so the C entry points never see a Fortran program's calls. MPICH's
// Fortran bindings call the C entry points, which route them already.
//
// Each entry point converts the handles and MPI_IN_PLACE and calls the
// layer's C entry point. It is defined once (ompi_<name>_f, which Open MPI's
// mpi_f08 calls) and aliased under the four names compilers give a Fortran
// external (mpi_<name>, mpi_<name>_, mpi_<name>__, MPI_<NAME>).
#include <mpi.h>

#if defined(OPEN_MPI)
#include <dlfcn.h>

namespace {

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran integers are C ints (counts and displacements)");

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are the addresses of variables of
// Open MPI's, under the name each compiler convention gives them.
struct Addresses {
  const void *in_place[4], *bottom[4];
};

Addresses fortran_addresses() {
  const char *const in_place[4] = {"mpi_fortran_in_place", "mpi_fortran_in_place_", "mpi_fortran_in_place__",
                                   "MPI_FORTRAN_IN_PLACE"};
  const char *const bottom[4] = {"mpi_fortran_bottom", "mpi_fortran_bottom_", "mpi_fortran_bottom__",
                                 "MPI_FORTRAN_BOTTOM"};
  Addresses a;
  for (int i = 0; i < 4; ++i) {
    a.in_place[i] = dlsym(RTLD_DEFAULT, in_place[i]);
    a.bottom[i] = dlsym(RTLD_DEFAULT, bottom[i]);
  }
  return a;
}

const void *c_buffer(const void *p) {
  static const Addresses f = fortran_addresses();
  for (int i = 0; i < 4; ++i) {
    if (p && p == f.in_place[i]) return MPI_IN_PLACE;
    if (p && p == f.bottom[i]) return MPI_BOTTOM;
  }
  return p;
}
void *c_buffer(void *p) { return const_cast<void *>(c_buffer(static_cast<const void *>(p))); }

MPI_Comm comm(const MPI_Fint *f) { return PMPI_Comm_f2c(*f); }
MPI_Datatype type(const MPI_Fint *f) { return PMPI_Type_f2c(*f); }
MPI_Op op(const MPI_Fint *f) { return PMPI_Op_f2c(*f); }

}  // namespace

#define PGS_FORTRAN_ALIASES(name, NAME, params)                               \
  void mpi_##name params __attribute__((alias("ompi_" #name "_f")));       \
  void mpi_##name##_ params __attribute__((alias("ompi_" #name "_f")));    \
  void mpi_##name##__ params __attribute__((alias("ompi_" #name "_f")));   \
  void MPI_##NAME params __attribute__((alias("ompi_" #name "_f")));

using F = MPI_Fint;

extern "C" {

void ompi_allreduce_f(void *sendbuf, void *recvbuf, F *count, F *datatype, F *o, F *c, F *ierr) {
  *ierr = MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type(datatype), op(o), comm(c));
}
PGS_FORTRAN_ALIASES(allreduce, ALLREDUCE, (void *, void *, F *, F *, F *, F *, F *))

void ompi_reduce_f(void *sendbuf, void *recvbuf, F *count, F *datatype, F *o, F *root, F *c, F *ierr) {
  *ierr = MPI_Reduce(c_buffer(sendbuf), c_buffer(recvbuf), *count, type(datatype), op(o), *root, comm(c));
}
PGS_FORTRAN_ALIASES(reduce, REDUCE, (void *, void *, F *, F *, F *, F *, F *, F *))

void ompi_bcast_f(void *buffer, F *count, F *datatype, F *root, F *c, F *ierr) {
  *ierr = MPI_Bcast(c_buffer(buffer), *count, type(datatype), *root, comm(c));
}
PGS_FORTRAN_ALIASES(bcast, BCAST, (void *, F *, F *, F *, F *, F *))

void ompi_allgather_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype, F *c,
                      F *ierr) {
  *ierr = MPI_Allgather(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                        comm(c));
}
PGS_FORTRAN_ALIASES(allgather, ALLGATHER, (void *, F *, F *, void *, F *, F *, F *, F *))

void ompi_allgatherv_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcounts, F *displs,
                       F *recvtype, F *c, F *ierr) {
  *ierr = MPI_Allgatherv(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), recvcounts, displs,
                         type(recvtype), comm(c));
}
PGS_FORTRAN_ALIASES(allgatherv, ALLGATHERV, (void *, F *, F *, void *, F *, F *, F *, F *, F *))

void ompi_gather_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype, F *root, F *c,
                   F *ierr) {
  *ierr = MPI_Gather(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                     *root, comm(c));
}
PGS_FORTRAN_ALIASES(gather, GATHER, (void *, F *, F *, void *, F *, F *, F *, F *, F *))

void ompi_gatherv_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcounts, F *displs, F *recvtype,
                    F *root, F *c, F *ierr) {
  *ierr = MPI_Gatherv(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), recvcounts, displs,
                      type(recvtype), *root, comm(c));
}
PGS_FORTRAN_ALIASES(gatherv, GATHERV, (void *, F *, F *, void *, F *, F *, F *, F *, F *, F *))

void ompi_scatter_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype, F *root, F *c,
                    F *ierr) {
  *ierr = MPI_Scatter(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                      *root, comm(c));
}
PGS_FORTRAN_ALIASES(scatter, SCATTER, (void *, F *, F *, void *, F *, F *, F *, F *, F *))

void ompi_scatterv_f(void *sendbuf, F *sendcounts, F *displs, F *sendtype, void *recvbuf, F *recvcount, F *recvtype,
                     F *root, F *c, F *ierr) {
  *ierr = MPI_Scatterv(c_buffer(sendbuf), sendcounts, displs, type(sendtype), c_buffer(recvbuf), *recvcount,
                       type(recvtype), *root, comm(c));
}
PGS_FORTRAN_ALIASES(scatterv, SCATTERV, (void *, F *, F *, F *, void *, F *, F *, F *, F *, F *))

void ompi_alltoall_f(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype, F *c,
                     F *ierr) {
  *ierr = MPI_Alltoall(c_buffer(sendbuf), *sendcount, type(sendtype), c_buffer(recvbuf), *recvcount, type(recvtype),
                       comm(c));
}
PGS_FORTRAN_ALIASES(alltoall, ALLTOALL, (void *, F *, F *, void *, F *, F *, F *, F *))

void ompi_alltoallv_f(void *sendbuf, F *sendcounts, F *sdispls, F *sendtype, void *recvbuf, F *recvcounts,
                      F *rdispls, F *recvtype, F *c, F *ierr) {
  *ierr = MPI_Alltoallv(c_buffer(sendbuf), sendcounts, sdispls, type(sendtype), c_buffer(recvbuf), recvcounts,
                        rdispls, type(recvtype), comm(c));
}
PGS_FORTRAN_ALIASES(alltoallv, ALLTOALLV, (void *, F *, F *, F *, void *, F *, F *, F *, F *, F *))

void ompi_reduce_scatter_f(void *sendbuf, void *recvbuf, F *recvcounts, F *datatype, F *o, F *c, F *ierr) {
  *ierr = MPI_Reduce_scatter(c_buffer(sendbuf), c_buffer(recvbuf), recvcounts, type(datatype), op(o), comm(c));
}
PGS_FORTRAN_ALIASES(reduce_scatter, REDUCE_SCATTER, (void *, void *, F *, F *, F *, F *, F *))

void ompi_reduce_scatter_block_f(void *sendbuf, void *recvbuf, F *recvcount, F *datatype, F *o, F *c, F *ierr) {
  *ierr = MPI_Reduce_scatter_block(c_buffer(sendbuf), c_buffer(recvbuf), *recvcount, type(datatype), op(o), comm(c));
}
PGS_FORTRAN_ALIASES(reduce_scatter_block, REDUCE_SCATTER_BLOCK, (void *, void *, F *, F *, F *, F *, F *))

void ompi_barrier_f(F *c, F *ierr) { *ierr = MPI_Barrier(comm(c)); }
PGS_FORTRAN_ALIASES(barrier, BARRIER, (F *, F *))

void ompi_finalize_f(F *ierr) { *ierr = MPI_Finalize(); }
PGS_FORTRAN_ALIASES(finalize, FINALIZE, (F *))

}  // extern "C"

#endif  // OPEN_MPI
