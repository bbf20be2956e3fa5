!> Uses the installed module: a strategy on MPI_COMM_WORLD, an allreduce
!> checked against its analytic answer.
program consumer
  use mpi
  use pgstrategy
  implicit none
  type(pg_strategy) :: s
  integer :: ierr, p, r
  character(len=:), allocatable :: backend
  double precision :: x(8), y(8)

  call MPI_Init(ierr)
  call pg_strategy_create(s, "cpu", comm=MPI_COMM_WORLD, ierr=ierr)
  if (ierr /= PG_OK) then
    print '(a)', "pg_strategy_create failed: "//pg_last_error()
    error stop 1
  end if
  r = pg_strategy_rank(s)
  p = pg_strategy_size(s)
  x = r + 1
  call pg_allreduce(s, x, y, size(x), PG_FLOAT64, PG_SUM, ierr)
  if (ierr /= PG_OK .or. any(y /= p*(p + 1)/2)) then
    print '(a)', "pg_allreduce gave a wrong answer: "//pg_last_error()
    error stop 1
  end if
  backend = pg_strategy_backend(s)
  call pg_strategy_destroy(s)
  call MPI_Finalize(ierr)
  if (r == 0) print '("consumer (fortran, ",i0," ranks): OK, backend ",a)', p, backend
end program consumer
