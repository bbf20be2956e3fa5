!> The nonblocking calls through the Fortran module: results after pg_work_wait
!> and pg_work_test, packed sections unpacked when the work finishes, in place,
!> several works in flight, point-to-point, and the states of a work (timeout,
!> freeing unfinished work, null handles).
program test_fortran_nonblocking
  use, intrinsic :: iso_c_binding, only: c_size_t, c_associated
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use mpi, only: MPI_Barrier, MPI_COMM_WORLD
  use pgstrategy
  use pgf_test
  implicit none

  type(pg_strategy) :: s
  integer :: ierr, r, p

  call test_start_strategy("fortran_nonblocking", s)
  r = pg_strategy_rank(s)
  p = pg_strategy_size(s)

  call reductions()
  call sections_and_test()
  call block_layouts()
  call point_to_point()
  call work_states()

  call test_finish_strategy("fortran_nonblocking", s)

contains

  !> Waits for and frees a work, recording failures.
  subroutine complete(work, what)
    type(pg_work), intent(inout) :: work
    character(len=*), intent(in) :: what
    call pg_work_wait(work, -1.0_real64, ierr)
    call test_status(ierr, PG_OK, "pg_work_wait for "//what)
    call pg_work_free(work, ierr)
    call test_status(ierr, PG_OK, "pg_work_free for "//what)
    call expect(.not. c_associated(work%handle), "the work's handle is null after free")
  end subroutine complete

  subroutine reductions()
    real(real64), asynchronous :: x(6), y(6), z(6)
    integer(int64), asynchronous :: m(5), mr(5)
    type(pg_work) :: w1, w2, w3
    integer :: i
    call test_step("iallreduce, three works in flight")
    x = [(real(r + i, real64), i=1, 6)]
    z = x
    m = [(int(r, int64)*2_int64**33 + i, i=1, 5)]
    call pg_iallreduce(s, x, y, 6, PG_FLOAT64, PG_SUM, w1, ierr)
    call test_status(ierr, PG_OK, "pg_iallreduce")
    call pg_iallreduce(s, m, mr, 5_c_size_t, PG_INT64, PG_MAX, w2, ierr)
    call test_status(ierr, PG_OK, "pg_iallreduce int64")
    call pg_iallreduce(s, z, z, 6, PG_FLOAT64, PG_SUM, w3, ierr)
    call test_status(ierr, PG_OK, "pg_iallreduce in place")
    call complete(w1, "iallreduce")
    call complete(w2, "iallreduce int64")
    call complete(w3, "iallreduce in place")
    call expect(all(y == [(real(p*i + p*(p - 1)/2, real64), i=1, 6)]), "iallreduce sum")
    call expect(all(mr == [(int(p - 1, int64)*2_int64**33 + i, i=1, 5)]), "iallreduce int64 max")
    call expect(all(z == y), "iallreduce in place")

    call test_step("ireduce")
    x = [(real(r + i, real64), i=1, 6)]
    y = -1
    call pg_ireduce(s, x, y, 6, PG_FLOAT64, PG_SUM, 0, w1, ierr)
    call test_status(ierr, PG_OK, "pg_ireduce")
    call complete(w1, "ireduce")
    if (r == 0) call expect(all(y == [(real(p*i + p*(p - 1)/2, real64), i=1, 6)]), "ireduce at root")
  end subroutine reductions

  !> Packed sections are unpacked when pg_work_test finds the work finished.
  subroutine sections_and_test()
    real(real32), asynchronous :: a(4, 6), b(4, 6), want(4, 6)
    type(pg_work) :: w
    logical :: done
    integer :: i, j
    call test_step("iallreduce of sections, pg_work_test")
    do j = 1, 6
      do i = 1, 4
        a(i, j) = r + i + 10*j
      end do
    end do
    b = -1
    want = -1
    want(3, :) = [(real(p*(1 + 10*j) + p*(p - 1)/2, real32), j=1, 6)]
    call pg_iallreduce(s, a(1, :), b(3, :), 6, PG_FLOAT32, PG_SUM, w, ierr)
    call test_status(ierr, PG_OK, "pg_iallreduce of sections")
    done = .false.
    do while (.not. done .and. ierr == PG_OK)
      call pg_work_test(w, done, ierr)
    end do
    call test_status(ierr, PG_OK, "pg_work_test")
    call expect(all(b == want), "iallreduce into a row: unpacked, other rows untouched")
    call pg_work_test(w, done, ierr)
    call expect(done .and. ierr == PG_OK, "pg_work_test on a finished work")
    call pg_work_free(w, ierr)
    call test_status(ierr, PG_OK, "pg_work_free")

    call test_step("ibroadcast into a row")
    b = 0
    want = 0
    if (r == p - 1) b(2, :) = [(real(j, real32), j=1, 6)]
    want(2, :) = [(real(j, real32), j=1, 6)]
    call pg_ibroadcast(s, b(2, :), 6, PG_FLOAT32, p - 1, w, ierr)
    call test_status(ierr, PG_OK, "pg_ibroadcast")
    call complete(w, "ibroadcast")
    call expect(all(b == want), "ibroadcast into a row")
  end subroutine sections_and_test

  subroutine block_layouts()
    integer, parameter :: n = 2
    integer(int32), asynchronous :: g(n*p), rs(n*p), sa(n*p), ra(n*p), mine(n), empty(0)
    type(pg_work) :: w
    integer :: i, q
    call test_step("iallgather in place")
    g = -1
    g(r*n + 1:(r + 1)*n) = [(10*r + i, i=1, n)]
    call pg_iallgather(s, g, g, n, PG_INT32, w, ierr)
    call test_status(ierr, PG_OK, "pg_iallgather")
    call complete(w, "iallgather")
    call expect(all(g == [((10*q + i, i=1, n), q=0, p - 1)]), "iallgather in place")

    call test_step("ireduce_scatter")
    rs = [((r + 10*(q*n + i), i=1, n), q=0, p - 1)]
    call pg_ireduce_scatter(s, rs, mine, n, PG_INT32, PG_SUM, w, ierr)
    call test_status(ierr, PG_OK, "pg_ireduce_scatter")
    call complete(w, "ireduce_scatter")
    call expect(all(mine == [(p*(p - 1)/2 + 10*p*(r*n + i), i=1, n)]), "ireduce_scatter")

    call test_step("ialltoall")
    sa = [((100*r + 10*q + i, i=1, n), q=0, p - 1)]
    call pg_ialltoall(s, sa, ra, n, PG_INT32, w, ierr)
    call test_status(ierr, PG_OK, "pg_ialltoall")
    call complete(w, "ialltoall")
    call expect(all(ra == [((100*q + 10*r + i, i=1, n), q=0, p - 1)]), "ialltoall")

    call test_step("igather and iscatter")
    mine = [(10*r + i, i=1, n)]
    g = -1
    if (r == 0) then
      call pg_igather(s, mine, g, n, PG_INT32, 0, w, ierr)
    else
      call pg_igather(s, mine, empty, n, PG_INT32, 0, w, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_igather")
    call complete(w, "igather")
    if (r == 0) call expect(all(g == [((10*q + i, i=1, n), q=0, p - 1)]), "igather at root")
    mine = -1
    call pg_iscatter(s, g, mine, n, PG_INT32, 0, w, ierr)   ! g used at the root only
    call test_status(ierr, PG_OK, "pg_iscatter")
    call complete(w, "iscatter")
    call expect(all(mine == [(10*r + i, i=1, n)]), "iscatter")

    call test_step("ibarrier")
    call pg_ibarrier(s, w, ierr)
    call test_status(ierr, PG_OK, "pg_ibarrier")
    call complete(w, "ibarrier")
  end subroutine block_layouts

  subroutine point_to_point()
    real(real64), asynchronous :: out(3), in(3)
    type(pg_work) :: ws, wr
    integer :: i, left, right
    call test_step("irecv and isend on a ring")
    right = mod(r + 1, p)
    left = mod(r - 1 + p, p)
    out = [(real(100*r + i, real64), i=1, 3)]
    in = -1
    call pg_irecv(s, in, 3, PG_FLOAT64, left, 3, wr, ierr)
    call test_status(ierr, PG_OK, "pg_irecv")
    call pg_isend(s, out, 3, PG_FLOAT64, right, 3, ws, ierr)
    call test_status(ierr, PG_OK, "pg_isend")
    call complete(wr, "irecv")
    call complete(ws, "isend")
    call expect(all(in == [(real(100*left + i, real64), i=1, 3)]), "ring through isend/irecv")
  end subroutine point_to_point

  subroutine work_states()
    real(real64), asynchronous :: x(4), y(4)
    type(pg_work) :: w, never
    integer :: mpi_ierr
    call test_step("errors at start")
    x = 1
    call pg_iallreduce(s, x, y, 5, PG_FLOAT64, PG_SUM, w, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_iallreduce with count 5 on 4 elements")
    call expect(.not. c_associated(w%handle), "a refused start leaves a null work")
    call pg_ibroadcast(s, x, 4, PG_FLOAT64, p, w, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_ibroadcast with root = size")
    call expect(.not. c_associated(w%handle), "a refused start leaves a null work")

    call test_step("null work")
    call pg_work_wait(never, -1.0, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_work_wait on a null work")
    call pg_work_free(never, ierr)
    call test_status(ierr, PG_OK, "pg_work_free on a null work")

    if (p < 2) return
    call test_step("unfinished work: timeout, not freed")
    if (r == 1) then
      y = -1
      call pg_irecv(s, y, 4, PG_FLOAT64, 0, 77, w, ierr)
      call test_status(ierr, PG_OK, "pg_irecv")
      call pg_work_wait(w, 0.0, ierr)
      call test_status(ierr, PG_ERR_TIMEOUT, "pg_work_wait(0) before the send")
      call pg_work_free(w, ierr)
      call test_status(ierr, PG_ERR_STATE, "pg_work_free of unfinished work")
      call expect(c_associated(w%handle), "unfinished work keeps its handle")
    end if
    call MPI_Barrier(MPI_COMM_WORLD, mpi_ierr)   ! rank 0 sends only now
    if (r == 0) then
      x = 7
      call pg_send(s, x, 4, PG_FLOAT64, 1, 77, ierr)
      call test_status(ierr, PG_OK, "pg_send")
    else if (r == 1) then
      call complete(w, "irecv after the timeout")
      call expect(all(y == 7), "irecv after the timeout")
    end if
  end subroutine work_states

end program test_fortran_nonblocking
