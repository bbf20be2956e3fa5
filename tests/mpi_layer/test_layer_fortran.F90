! The MPI layer under a Fortran program (the mpi module): the routed
! collectives against their answers, out of place and in place
! (MPI_IN_PLACE, which Open MPI's Fortran binding hands over as a variable's
! address), on MPI_COMM_WORLD and on a duplicate. The verdict travels by
! MPI_LOR on MPI_LOGICAL, which the layer leaves to MPI.
program test_layer_fortran
  use mpi
  implicit none
  integer :: ierr, rank, size, dup, failures
  logical :: failed, any_failed

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  failures = 0
  call check_all(MPI_COMM_WORLD)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call check_all(dup)
  call MPI_Comm_free(dup, ierr)

  failed = failures > 0
  call MPI_Allreduce(failed, any_failed, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, l1)', 'test_layer_fortran: ', size, ' ranks, failed: ', any_failed
  call MPI_Finalize(ierr)
  if (any_failed) stop 1

contains

#include "expect.inc"

  subroutine check_all(comm)
    integer, intent(in) :: comm
    integer, parameter :: n = 5
    double precision :: x(n), y(n)
    integer :: i, r, ivals(n), gathered(n * 16), block(n), ranks_sum
    integer :: me, np

    call MPI_Comm_rank(comm, me, ierr)
    call MPI_Comm_size(comm, np, ierr)
    ranks_sum = np * (np - 1) / 2

    x = [(dble(me + i), i = 1, n)]
    call MPI_Allreduce(x, y, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
    call expect(ierr == MPI_SUCCESS .and. all(y == [(dble(ranks_sum + np * i), i = 1, n)]), 'allreduce')
    call MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
    call expect(all(x == y), 'allreduce in place')

    ivals = me + 1
    if (me == 0) then
      call MPI_Reduce(MPI_IN_PLACE, ivals, n, MPI_INTEGER, MPI_MAX, 0, comm, ierr)
      call expect(all(ivals == np), 'reduce in place')
    else
      call MPI_Reduce(ivals, ivals, n, MPI_INTEGER, MPI_MAX, 0, comm, ierr)
    end if

    ivals = -1
    if (me == np - 1) ivals = [(i * 10, i = 1, n)]
    call MPI_Bcast(ivals, n, MPI_INTEGER, np - 1, comm, ierr)
    call expect(all(ivals == [(i * 10, i = 1, n)]), 'bcast')

    gathered = -1
    gathered(me * n + 1:me * n + n) = me
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, n, MPI_INTEGER, comm, ierr)
    do r = 0, np - 1
      call expect(all(gathered(r * n + 1:r * n + n) == r), 'allgather in place')
    end do

    gathered(1:n * np) = [(me + i, i = 1, n * np)]
    call MPI_Reduce_scatter_block(gathered, block, n, MPI_INTEGER, MPI_SUM, comm, ierr)
    call expect(all(block == [(ranks_sum + np * (me * n + i), i = 1, n)]), 'reduce_scatter_block')

    gathered(1:n * np) = [(me * 1000 + i, i = 1, n * np)]
    call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, n, MPI_INTEGER, comm, ierr)
    do r = 0, np - 1
      call expect(all(gathered(r * n + 1:r * n + n) == [(r * 1000 + me * n + i, i = 1, n)]), 'alltoall in place')
    end do

    call MPI_Barrier(comm, ierr)
    call expect(ierr == MPI_SUCCESS, 'barrier')
  end subroutine
end program
