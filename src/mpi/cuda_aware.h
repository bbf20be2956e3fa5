// Whether the MPI library this process runs takes device pointers.
#pragma once

namespace pg::mpi {

// MPIX_Query_cuda_support() of the MPI library MPI_Init comes from (MPICH and
// Open MPI both have it), looked up at run time, so the answer is the
// library's that runs, not the one built against; false where it has none.
// Asked once per process, after MPI_Init.
bool cuda_aware();

}  // namespace pg::mpi
