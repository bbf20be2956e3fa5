!> A strategy on a communicator from mpi_f08: comm=c%MPI_VAL. The communicator
!> reverses the ranks of MPI_COMM_WORLD, so a strategy that fell back to
!> MPI_COMM_WORLD would get the ranks wrong; a second one splits by parity.
program test_fortran_f08
  use, intrinsic :: iso_fortran_env, only: real64
  use mpi_f08
  use pgstrategy
  use pgf_test
  implicit none

  type(MPI_Comm) :: reversed, parity
  type(pg_strategy) :: s, t
  integer :: ierr, r, p, rank_in, size_in, q, total
  real(real64) :: x(4), y(4)

  call MPI_Init()
  call test_start("fortran_f08")
  call MPI_Comm_rank(MPI_COMM_WORLD, r)
  call MPI_Comm_size(MPI_COMM_WORLD, p)

  call test_step("reversed communicator")
  call MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - r, reversed)
  call pg_strategy_create(s, "cpu", comm=reversed%MPI_VAL, ierr=ierr)
  call test_status(ierr, PG_OK, "pg_strategy_create on an mpi_f08 communicator")
  call MPI_Comm_rank(reversed, rank_in)
  call expect(pg_strategy_rank(s) == rank_in, "rank in the reversed communicator")
  call expect(pg_strategy_rank(s) == p - 1 - r, "reversed rank")
  ! Rank order matters here: gather the ranks of MPI_COMM_WORLD in the strategy's order.
  x = r
  call pg_allreduce(s, x, y, 4, PG_FLOAT64, PG_SUM, ierr)
  call test_status(ierr, PG_OK, "pg_allreduce")
  call expect(all(y == p*(p - 1)/2), "allreduce on the reversed communicator")
  block
    integer :: world(p)
    call pg_allgather(s, r, world, 1, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather")
    call expect(all(world == [(p - 1 - q, q=0, p - 1)]), "allgather follows the reversed order")
  end block

  call test_step("parity communicator, backend by keyword")
  call MPI_Comm_split(MPI_COMM_WORLD, mod(r, 2), r, parity)
  call MPI_Comm_size(parity, size_in)
  call pg_strategy_create(t, "cpu", backend="mpi", comm=parity%MPI_VAL, ierr=ierr)
  call test_status(ierr, PG_OK, "pg_strategy_create with backend and comm")
  call expect(pg_strategy_size(t) == size_in, "size of the parity communicator")
  total = sum([(q, q=mod(r, 2), p - 1, 2)])
  x = r
  call pg_allreduce(t, x, x, 4, PG_FLOAT64, PG_SUM, ierr)
  call test_status(ierr, PG_OK, "pg_allreduce on parity")
  call expect(all(x == total), "allreduce on the parity communicator")

  call pg_strategy_destroy(t, ierr)
  call test_status(ierr, PG_OK, "pg_strategy_destroy")
  call pg_strategy_destroy(s, ierr)
  call test_status(ierr, PG_OK, "pg_strategy_destroy")
  call MPI_Comm_free(parity)
  call MPI_Comm_free(reversed)
  call test_finish("fortran_f08")
end program test_fortran_f08
