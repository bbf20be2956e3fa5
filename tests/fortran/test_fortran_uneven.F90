!> The uneven collectives through the Fortran module, against the analytic
!> answer: integer(c_size_t) count and displacement arrays (0-based
!> displacements), both kinds of scalar count, in place (the same array as both
!> buffers), a 2-d receive array, the root-only arrays of gatherv and scatterv
!> (zero-size elsewhere), the nonblocking twins with the arrays changed after
!> the start (the library copies them), and arrays that are too short.
program test_fortran_uneven
  use, intrinsic :: iso_c_binding, only: c_size_t
  use, intrinsic :: iso_fortran_env, only: int32, int64, real64
  use pgstrategy
  use pgf_test
  implicit none

  type(pg_strategy) :: s
  integer :: ierr, r, p

  call test_start_strategy("fortran_uneven", s)
  r = pg_strategy_rank(s)
  p = pg_strategy_size(s)

  call allgatherv()
  call reduce_scatterv()
  call alltoallv()
  call gatherv_scatterv()
  call nonblocking()
  call too_short()

  call test_finish_strategy("fortran_uneven", s)

contains

  !> Rank q's block: q+1 elements (rank 0: none when `skip0`).
  integer function block(q, skip0)
    integer, intent(in) :: q
    logical, intent(in) :: skip0
    block = q + 1
    if (skip0 .and. q == 0) block = 0
  end function block

  !> 0-based displacements: blocks in reverse rank order, one element apart.
  subroutine reverse_displs(counts, displs, extent)
    integer(c_size_t), intent(in) :: counts(:)
    integer(c_size_t), intent(out) :: displs(:)
    integer(c_size_t), intent(out) :: extent
    integer :: q
    extent = 1
    do q = size(counts), 1, -1
      displs(q) = extent
      extent = extent + counts(q) + 1
    end do
  end subroutine reverse_displs

  !> The blocks of a gather: block(q, skip0) elements from rank q, valued
  !> 100*q + 1, 100*q + 2, ..., at reverse_displs. mine: this rank's block;
  !> want: all the blocks in one array, -1 in the gaps.
  subroutine gathered_blocks(skip0, counts, displs, mine, want)
    logical, intent(in) :: skip0
    integer(c_size_t), intent(out) :: counts(p), displs(p)
    real(real64), allocatable, intent(out) :: mine(:), want(:)
    integer(c_size_t) :: extent
    integer :: q, i
    counts = [(int(block(q, skip0), c_size_t), q=0, p - 1)]
    call reverse_displs(counts, displs, extent)
    allocate (mine(counts(r + 1)), want(extent))
    mine = [(100.0_real64*r + i, i=1, int(counts(r + 1)))]
    want = -1
    do q = 0, p - 1
      want(displs(q + 1) + 1:displs(q + 1) + counts(q + 1)) = [(100.0_real64*q + i, i=1, int(counts(q + 1)))]
    end do
  end subroutine gathered_blocks

  subroutine allgatherv()
    integer(c_size_t) :: counts(p), displs(p)
    real(real64), allocatable :: mine(:), gathered(:), want(:)
    integer(int32), allocatable :: grid(:, :)
    integer :: q, i
    call test_step("allgatherv")
    call gathered_blocks(.true., counts, displs, mine, want)
    allocate (gathered(size(want)))
    gathered = -1
    call pg_allgatherv(s, mine, size(mine), gathered, counts, displs, PG_FLOAT64, ierr)
    call test_status(ierr, PG_OK, "pg_allgatherv")
    call expect(all(gathered == want), "allgatherv: blocks at their displacements, gaps untouched")
    ! In place: this rank's block already in the array.
    gathered = -1
    gathered(displs(r + 1) + 1:displs(r + 1) + counts(r + 1)) = mine
    call pg_allgatherv(s, gathered, counts(r + 1), gathered, counts, displs, PG_FLOAT64, ierr)
    call test_status(ierr, PG_OK, "pg_allgatherv in place (c_size_t count)")
    call expect(all(gathered == want), "allgatherv in place")
    ! A 2-d receive array, blocks in rank order from element 0.
    displs(1) = 0
    do q = 2, p
      displs(q) = displs(q - 1) + counts(q - 1)
    end do
    allocate (grid(2, (sum(counts) + 1)/2 + 1))
    grid = -1
    call pg_allgatherv(s, [(int(100*r + i, int32), i=1, int(counts(r + 1)))], int(counts(r + 1)), grid, counts, &
                       displs, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgatherv into a 2-d array")
    call expect(all(pack(grid, .true.) == [([(int(100*q + i, int32), i=1, int(counts(q + 1)))], q=0, p - 1), &
                                          (-1_int32, i=1, int(size(grid, kind=c_size_t) - sum(counts)))]), &
                "allgatherv into a 2-d array, element order")
  end subroutine allgatherv

  subroutine reduce_scatterv()
    integer(c_size_t) :: counts(p)
    integer(int64), allocatable :: send(:), out(:)
    integer :: q, i, before
    call test_step("reduce_scatterv")
    counts = [(int(q + 2, c_size_t), q=0, p - 1)]
    before = int(sum(counts(1:r)))
    allocate (send(sum(counts)), out(counts(r + 1)))
    send = [(int(r + 1, int64)*i, i=1, size(send))]
    call pg_reduce_scatterv(s, send, out, counts, PG_INT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_reduce_scatterv")
    call expect(all(out == [(int(p*(p + 1)/2, int64)*(before + i), i=1, int(counts(r + 1)))]), &
                "reduce_scatterv: this rank's block of the sum")
    ! In place: the result lands in this rank's block of the array.
    call pg_reduce_scatterv(s, send, send, counts, PG_INT64, PG_MAX, ierr)
    call test_status(ierr, PG_OK, "pg_reduce_scatterv in place")
    call expect(all(send(before + 1:before + counts(r + 1)) == [(int(p, int64)*(before + i), i=1, int(counts(r + 1)))]), &
                "reduce_scatterv in place: max in this rank's block")
  end subroutine reduce_scatterv

  !> Elements rank a sends to rank b.
  integer function pair(a, b)
    integer, intent(in) :: a, b
    pair = mod(a + 2*b, 3)
  end function pair

  subroutine alltoallv()
    integer(c_size_t) :: sc(p), sd(p), rc(p), rd(p), sx, rx
    integer(int32), allocatable :: send(:), recv(:), want(:), both(:)
    integer :: q, i
    call test_step("alltoallv")
    sc = [(int(pair(r, q), c_size_t), q=0, p - 1)]
    rc = [(int(pair(q, r), c_size_t), q=0, p - 1)]
    call reverse_displs(rc, rd, rx)
    sd(1) = 0
    do q = 2, p
      sd(q) = sd(q - 1) + sc(q - 1)
    end do
    sx = sum(sc)
    allocate (send(sx), recv(rx), want(rx))
    do q = 0, p - 1
      send(sd(q + 1) + 1:sd(q + 1) + sc(q + 1)) = [(1000*r + 10*q + i, i=1, int(sc(q + 1)))]
    end do
    want = -7
    do q = 0, p - 1
      want(rd(q + 1) + 1:rd(q + 1) + rc(q + 1)) = [(1000*q + 10*r + i, i=1, int(rc(q + 1)))]
    end do
    recv = -7
    call pg_alltoallv(s, send, sc, sd, recv, rc, rd, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_alltoallv")
    call expect(all(recv == want), "alltoallv: blocks from every rank at rdispls")
    ! In place: one array holds the blocks sent (at sdispls) and received (at rdispls).
    allocate (both(max(sx, rx)))
    both = -7
    both(1:sx) = send
    call pg_alltoallv(s, both, sc, sd, both, rc, rd, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_alltoallv in place")
    do q = 0, p - 1
      call expect(all(both(rd(q + 1) + 1:rd(q + 1) + rc(q + 1)) == want(rd(q + 1) + 1:rd(q + 1) + rc(q + 1))), &
                  "alltoallv in place: a received block")
    end do
  end subroutine alltoallv

  subroutine gatherv_scatterv()
    integer(c_size_t) :: counts(p), displs(p), none(0)
    real(real64), allocatable :: mine(:), gathered(:), want(:), back(:)
    integer :: root
    root = p - 1
    call test_step("gatherv / scatterv")
    call gathered_blocks(.false., counts, displs, mine, want)
    allocate (gathered(size(want)), back(size(mine)))
    gathered = -1
    if (r == root) then
      call pg_gatherv(s, mine, size(mine), gathered, counts, displs, PG_FLOAT64, root, ierr)
    else  ! the arrays and recvbuf are the root's only
      call pg_gatherv(s, mine, size(mine), gathered(1:0), none, none, PG_FLOAT64, root, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_gatherv")
    if (r == root) call expect(all(gathered == want), "gatherv at the root")
    ! scatterv back, in place at the root.
    back = -1
    if (r == root) then
      call pg_scatterv(s, gathered, counts, displs, gathered, counts(r + 1), PG_FLOAT64, root, ierr)
      back = gathered(displs(r + 1) + 1:displs(r + 1) + counts(r + 1))
    else
      call pg_scatterv(s, gathered(1:0), none, none, back, counts(r + 1), PG_FLOAT64, root, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_scatterv")
    call expect(all(back == mine), "scatterv: this rank's block back")
  end subroutine gatherv_scatterv

  subroutine nonblocking()
    integer(c_size_t) :: counts(p), displs(p), sc(p), sd(p), rc(p), rd(p), rx
    real(real64), allocatable, asynchronous :: mine(:), gathered(:)
    integer(int32), allocatable, asynchronous :: send(:), recv(:)
    real(real64), allocatable :: want(:)
    type(pg_work) :: w1, w2
    integer :: q, i
    call test_step("nonblocking")
    call gathered_blocks(.false., counts, displs, mine, want)
    allocate (gathered(size(want)))
    gathered = -1
    call pg_iallgatherv(s, mine, size(mine), gathered, counts, displs, PG_FLOAT64, w1, ierr)
    call test_status(ierr, PG_OK, "pg_iallgatherv")
    counts = 999  ! copied at the start: changing them now changes nothing
    displs = 999
    sc = [(int(pair(r, q), c_size_t), q=0, p - 1)]
    rc = [(int(pair(q, r), c_size_t), q=0, p - 1)]
    sd = [(int(3*q, c_size_t), q=0, p - 1)]
    call reverse_displs(rc, rd, rx)
    allocate (send(3*p), recv(rx))
    send = [(1000*r + i, i=1, 3*p)]
    recv = -7
    call pg_ialltoallv(s, send, sc, sd, recv, rc, rd, PG_INT32, w2, ierr)
    call test_status(ierr, PG_OK, "pg_ialltoallv")
    call pg_work_wait(w2, -1.0_real64, ierr)
    call test_status(ierr, PG_OK, "pg_work_wait (ialltoallv)")
    call pg_work_wait(w1, -1.0_real64, ierr)
    call test_status(ierr, PG_OK, "pg_work_wait (iallgatherv)")
    call pg_work_free(w1, ierr)
    call pg_work_free(w2, ierr)
    call expect(all(gathered == want), "iallgatherv")
    do q = 0, p - 1
      call expect(all(recv(rd(q + 1) + 1:rd(q + 1) + rc(q + 1)) == [(1000*q + 3*r + i, i=1, int(rc(q + 1)))]), &
                  "ialltoallv: a received block")
    end do
  end subroutine nonblocking

  subroutine too_short()
    integer(c_size_t) :: short(max(p - 1, 0)), displs(p)
    real(real64) :: x(4), y(4*p)
    integer :: q
    call test_step("arrays too short")
    displs = [(int(q, c_size_t), q=0, p - 1)]
    call pg_allgatherv(s, x, 1, y, short, displs, PG_FLOAT64, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allgatherv with a recvcounts array too short")
    call expect(index(pg_last_error(), "recvcounts") > 0 .and. index(pg_last_error(), "one per rank") > 0, &
                "the message names recvcounts and what is expected: "//pg_last_error())
    call pg_reduce_scatterv(s, y, x, short, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_reduce_scatterv with a recvcounts array too short")
  end subroutine too_short

end program test_fortran_uneven
