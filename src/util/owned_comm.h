// The library's own communicators carry a mark, so that a tool intercepting
// MPI's entry points (the MPI layer, a profiler) can tell the library's traffic
// from the program's, on whichever thread it comes (pg_mpi_comm_owned).
#pragma once

#include <mpi.h>

namespace pg {

// Marks `comm` (made by the library) as the library's. Every communicator the
// library splits or duplicates from one of the program's is marked where it is
// made; a duplicate of a marked communicator carries the mark already (MPI
// copies it with MPI_Comm_dup), as do a backend's duplicates of its own.
void mark_owned(MPI_Comm comm);
bool is_owned(MPI_Comm comm);

}  // namespace pg
