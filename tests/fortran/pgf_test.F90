!> Support for the Fortran multi-rank tests: checks that record failures and go
!> on, the hang watchdog of tests/common (armed from PG_TEST_WATCHDOG), and a
!> verdict every rank agrees on (MPI_Allreduce with MPI_MIN): rank 0 prints
!> PASSED or FAILED, and a failed test ends with `error stop`.
module pgf_test
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit
  use mpi
  use pgstrategy
  implicit none
  private
  public :: test_start, test_step, check, expect, test_status, test_finish, world_rank, world_size
  public :: test_start_strategy, test_finish_strategy

  integer, save :: failures = 0
  !> This rank and the job size in MPI_COMM_WORLD, set by test_start.
  integer, save, protected :: world_rank = -1, world_size = 0
  character(len=256), save :: current_step = "start"

  interface
    subroutine c_watchdog(name) bind(C, name="pg_test_watchdog")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_watchdog
    subroutine c_step(text) bind(C, name="pgf_test_step")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: text
    end subroutine c_step
  end interface

contains

  !> MPI_Init (unless the program did it already) and the watchdog.
  subroutine test_start(name)
    character(len=*), intent(in) :: name
    integer :: ierr
    logical :: initialized
    call MPI_Initialized(initialized, ierr)
    if (.not. initialized) call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, world_rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, world_size, ierr)
    call c_watchdog(trim(name)//c_null_char)
  end subroutine test_start

  !> test_start, then a "cpu" strategy in s; a failed creation ends the test.
  subroutine test_start_strategy(name, s)
    character(len=*), intent(in) :: name
    type(pg_strategy), intent(out) :: s
    integer :: ierr
    call test_start(name)
    call test_step("create")
    call pg_strategy_create(s, "cpu", ierr=ierr)
    call test_status(ierr, PG_OK, "pg_strategy_create")
    if (ierr /= PG_OK) call test_finish(name)
  end subroutine test_start_strategy

  !> Destroys s, then test_finish.
  subroutine test_finish_strategy(name, s)
    character(len=*), intent(in) :: name
    type(pg_strategy), intent(inout) :: s
    integer :: ierr
    call pg_strategy_destroy(s, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_destroy")
    call test_finish(name)
  end subroutine test_finish_strategy

  !> Names the current step, for failure messages and the watchdog.
  subroutine test_step(text)
    character(len=*), intent(in) :: text
    current_step = text
    call c_step(trim(text)//c_null_char)
  end subroutine test_step

  !> Records a failure when cond is false; returns cond.
  logical function check(cond, message)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: message
    check = cond
    if (cond) return
    failures = failures + 1
    write (error_unit, '("[rank ",i0,"] FAIL (step: ",a,"): ",a)') world_rank, &
      trim(current_step), message
    flush (error_unit)
  end function check

  !> check() as a subroutine.
  subroutine expect(cond, message)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: message
    if (.not. check(cond, message)) continue
  end subroutine expect

  !> Records a failure when got /= expected, with the statuses' names and
  !> pg_last_error().
  subroutine test_status(got, expected, what)
    integer, intent(in) :: got, expected
    character(len=*), intent(in) :: what
    logical :: ok
    ok = check(got == expected, what//" returned "//pg_status_name(got)//", expected "// &
               pg_status_name(expected)//": "//pg_last_error())
  end subroutine test_status

  !> Every rank agrees on the verdict; finalizes MPI; a failure ends with error stop.
  subroutine test_finish(name)
    character(len=*), intent(in) :: name
    integer :: local, all, ierr
    local = merge(1, 0, failures == 0)
    call MPI_Allreduce(local, all, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
    if (world_rank == 0) then
      write (output_unit, '(a," on ",i0," ranks: ",a)') name, world_size, &
        merge("PASSED", "FAILED", all == 1)
      flush (output_unit)
    end if
    call MPI_Finalize(ierr)
    if (all /= 1) error stop 1
  end subroutine test_finish

end module pgf_test
