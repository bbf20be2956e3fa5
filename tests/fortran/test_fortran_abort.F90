!> Without ierr, a failing call prints its message and aborts the job
!> (MPI_Abort), as MPI's default error handler does. CTest checks the output.
program test_fortran_abort
  use, intrinsic :: iso_fortran_env, only: real64, output_unit
  use pgstrategy
  use pgf_test
  implicit none

  type(pg_strategy) :: s
  real(real64) :: x(4)

  call test_start("fortran_abort")
  call pg_strategy_create(s, "cpu")
  x = 1
  call pg_broadcast(s, x, 4, PG_FLOAT64, pg_strategy_size(s))   ! root out of range, no ierr
  write (output_unit, '(a)') "pg_broadcast returned: the job was not aborted"
  error stop 1
end program test_fortran_abort
