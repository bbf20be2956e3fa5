! The MPI layer under a Fortran 2008 program (the mpi_f08 module): the routed
! collectives against their answers, out of place and in place. The verdict
! travels by MPI_LOR on MPI_LOGICAL, which the layer leaves to MPI.
program test_layer_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 6
  integer :: rank, size, i, r, failures
  double precision :: x(n), y(n)
  integer :: gathered(n * 16)
  type(MPI_Comm) :: dup
  logical :: failed, any_failed

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  failures = 0
  call MPI_Comm_dup(MPI_COMM_WORLD, dup)

  x = [(dble(rank * i), i = 1, n)]
  call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, dup)
  call expect(all(y == [(dble(size * (size - 1) / 2 * i), i = 1, n)]), 'allreduce')
  call MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_SUM, dup)
  call expect(all(x == y), 'allreduce in place')

  gathered = -1
  gathered(rank * n + 1:rank * n + n) = rank
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, n, MPI_INTEGER, dup)
  do r = 0, size - 1
    call expect(all(gathered(r * n + 1:r * n + n) == r), 'allgather in place')
  end do
  gathered(1:n) = rank
  call MPI_Bcast(gathered, n, MPI_INTEGER, size - 1, dup)
  call expect(all(gathered(1:n) == size - 1), 'bcast')
  call MPI_Barrier(dup)
  call MPI_Comm_free(dup)

  failed = failures > 0
  call MPI_Allreduce(failed, any_failed, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a, l1)', 'test_layer_f08: ', size, ' ranks, failed: ', any_failed
  call MPI_Finalize()
  if (any_failed) stop 1

contains

#include "expect.inc"
end program
