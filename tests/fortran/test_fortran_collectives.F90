!> Every collective through the Fortran module, checked against the analytic
!> answer: 1-d and 2-d arrays of real32/real64/int32/int64, scalars, both count
!> kinds, in place (the same array as both buffers), non-contiguous sections
!> (packed), queries and split.
program test_fortran_collectives
  use, intrinsic :: iso_c_binding, only: c_size_t, c_associated, c_ptr, c_f_pointer
  use, intrinsic :: iso_fortran_env, only: int32, int64, real32, real64
  use pgstrategy
  use pgf_test
  implicit none

  type(pg_strategy) :: s
  integer :: ierr, r, p

  call test_start_strategy("fortran_collectives", s)
  r = pg_strategy_rank(s)
  p = pg_strategy_size(s)

  call queries()
  call allreduce_1d()
  call allreduce_2d()
  call allreduce_in_place_and_scalars()
  call broadcast_and_reduce()
  call allgather()
  call reduce_scatter()
  call gather_scatter_alltoall()
  call point_to_point()
  call sections()
  call split()
  call library_memory()

  call test_step("destroy")
  call pg_strategy_destroy(s, ierr)
  call test_status(ierr, PG_OK, "pg_strategy_destroy")
  call expect(.not. c_associated(s%handle), "the handle is null after destroy")
  call pg_strategy_destroy(s, ierr)
  call test_status(ierr, PG_OK, "pg_strategy_destroy of a null handle")
  call test_finish("fortran_collectives")

contains

  subroutine queries()
    character(len=:), allocatable :: text
    call test_step("queries")
    call expect(r == world_rank, "pg_strategy_rank is the rank in MPI_COMM_WORLD")
    call expect(p == world_size, "pg_strategy_size is the size of MPI_COMM_WORLD")
    call expect(pg_strategy_device(s) == "cpu", "device is 'cpu', got '"//pg_strategy_device(s)//"'")
    call expect(len(pg_strategy_backend(s)) > 0, "backend has a name")
    call expect(pg_strategy_local_rank(s) >= 0 .and. &
                pg_strategy_local_rank(s) < pg_strategy_local_size(s), "0 <= local_rank < local_size")
    call expect(pg_strategy_node_rank(s) >= 0 .and. &
                pg_strategy_node_rank(s) < pg_strategy_node_count(s), "0 <= node_rank < node_count")
    call pg_strategy_describe(s, text, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_describe")
    call expect(index(text, pg_strategy_backend(s)) > 0, "describe names the backend: "//text)
  end subroutine queries

  subroutine allreduce_1d()
    integer, parameter :: counts(4) = [0, 1, 7, 1000]
    real(real32), allocatable :: x32(:), y32(:)
    integer(int64), allocatable :: x64(:), y64(:)
    integer :: k, n, i
    do k = 1, size(counts)
      n = counts(k)
      call test_step("allreduce 1-d")
      allocate (x32(n), y32(n), x64(n), y64(n))
      x32 = [(real(r + i, real32), i=1, n)]
      call pg_allreduce(s, x32, y32, n, PG_FLOAT32, PG_SUM, ierr)
      call test_status(ierr, PG_OK, "pg_allreduce real32")
      call expect(all(y32 == [(real(p*i + p*(p - 1)/2, real32), i=1, n)]), "allreduce real32 1-d sum")
      ! Values above 2**31: int64 really is 64-bit.
      x64 = [(2_int64**40 + int(r, int64)*i, i=1, n)]
      call pg_allreduce(s, x64, y64, size(x64, kind=c_size_t), PG_INT64, PG_SUM, ierr)
      call test_status(ierr, PG_OK, "pg_allreduce int64 (c_size_t count)")
      call expect(all(y64 == [(p*2_int64**40 + int(i, int64)*(p*(p - 1)/2), i=1, n)]), &
                  "allreduce int64 1-d sum")
      call pg_allreduce(s, x64, y64, n, PG_INT64, PG_MAX, ierr)
      call test_status(ierr, PG_OK, "pg_allreduce int64 max")
      call expect(all(y64 == [(2_int64**40 + int(p - 1, int64)*i, i=1, n)]), "allreduce int64 max")
      deallocate (x32, y32, x64, y64)
    end do
  end subroutine allreduce_1d

  subroutine allreduce_2d()
    real(real64) :: a(3, 5), b(3, 5), want(3, 5)
    integer(int32) :: m(4, 3), q(4, 3), wmax(4, 3), wmin(4, 3), wsum(4, 3)
    real(real32) :: f(2, 3), g(2, 3)
    integer(int64) :: l(2, 2), lo(2, 2)
    integer :: i, j
    call test_step("allreduce 2-d")
    do j = 1, 5
      do i = 1, 3
        a(i, j) = 0.5_real64*r + i + 10*j
        want(i, j) = p*(i + 10*j) + 0.5_real64*(p*(p - 1)/2)
      end do
    end do
    call pg_allreduce(s, a, b, size(a), PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce real64 2-d")
    call expect(all(b == want), "allreduce real64 2-d sum")
    call pg_allreduce(s, a, b, size(a), PG_FLOAT64, PG_AVG, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce real64 avg")
    call expect(all(abs(b - want/p) < 1e-12_real64), "allreduce real64 2-d avg")

    do j = 1, 3
      do i = 1, 4
        m(i, j) = 1000*r + 10*i + j
        wsum(i, j) = 1000*(p*(p - 1)/2) + p*(10*i + j)
        wmax(i, j) = 1000*(p - 1) + 10*i + j
        wmin(i, j) = 10*i + j
      end do
    end do
    call pg_allreduce(s, m, q, size(m), PG_INT32, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce int32 sum")
    call expect(all(q == wsum), "allreduce int32 2-d sum")
    call pg_allreduce(s, m, q, size(m), PG_INT32, PG_MAX, ierr)
    call expect(ierr == PG_OK .and. all(q == wmax), "allreduce int32 2-d max")
    call pg_allreduce(s, m, q, size(m), PG_INT32, PG_MIN, ierr)
    call expect(ierr == PG_OK .and. all(q == wmin), "allreduce int32 2-d min")

    f = reshape([(real(r + i, real32), i=1, 6)], [2, 3])
    call pg_allreduce(s, f, g, 6_c_size_t, PG_FLOAT32, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce real32 2-d")
    call expect(all(g == reshape([(real(p*i + p*(p - 1)/2, real32), i=1, 6)], [2, 3])), &
                "allreduce real32 2-d sum")

    l = reshape([(2_int64**33*i + r, i=1, 4)], [2, 2])
    call pg_allreduce(s, l, lo, 4, PG_INT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce int64 2-d")
    call expect(all(lo == reshape([(p*2_int64**33*i + p*(p - 1)/2, i=1, 4)], [2, 2])), &
                "allreduce int64 2-d sum")
  end subroutine allreduce_2d

  subroutine allreduce_in_place_and_scalars()
    real(real64) :: y(4, 2), v, w
    integer(int32) :: k
    integer :: i
    call test_step("allreduce in place")
    y = reshape([(real(r*i, real64), i=1, 8)], [4, 2])
    call pg_allreduce(s, y, y, size(y), PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce in place")
    call expect(all(y == reshape([(real(i*(p*(p - 1)/2), real64), i=1, 8)], [4, 2])), &
                "allreduce in place sum")

    call test_step("allreduce scalars")
    v = r + 1
    call pg_allreduce(s, v, w, 1, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce scalar")
    call expect(w == p*(p + 1)/2, "allreduce scalar sum")
    k = int(r, int32)
    call pg_allreduce(s, k, k, 1, PG_INT32, PG_MAX, ierr)
    call expect(ierr == PG_OK .and. k == p - 1, "allreduce scalar in place max")
  end subroutine allreduce_in_place_and_scalars

  subroutine broadcast_and_reduce()
    integer(int32) :: b(5)
    real(real64) :: x(6), y(6), empty(0)
    integer :: i, root
    call test_step("broadcast")
    root = p - 1
    b = -1
    if (r == root) b = [(42 + i, i=1, 5)]
    call pg_broadcast(s, b, size(b), PG_INT32, root, ierr)
    call test_status(ierr, PG_OK, "pg_broadcast")
    call expect(all(b == [(42 + i, i=1, 5)]), "broadcast from the last rank")

    call test_step("reduce")
    do root = 0, p - 1, max(1, p - 1)
      x = [(real(r + i, real64), i=1, 6)]
      y = -1
      if (r == root) then
        call pg_reduce(s, x, y, 6, PG_FLOAT64, PG_SUM, root, ierr)
      else
        call pg_reduce(s, x, empty, 6, PG_FLOAT64, PG_SUM, root, ierr) ! recvbuf unused here
      end if
      call test_status(ierr, PG_OK, "pg_reduce")
      if (r == root) call expect(all(y == [(real(p*i + p*(p - 1)/2, real64), i=1, 6)]), "reduce at root")
      ! In place at the root.
      call pg_reduce(s, x, x, 6, PG_FLOAT64, PG_SUM, root, ierr)
      call test_status(ierr, PG_OK, "pg_reduce in place")
      if (r == root) then
        call expect(all(x == [(real(p*i + p*(p - 1)/2, real64), i=1, 6)]), "reduce in place at root")
      else
        call expect(all(x == [(real(r + i, real64), i=1, 6)]), "reduce leaves non-root sendbuf")
      end if
    end do
  end subroutine broadcast_and_reduce

  subroutine allgather()
    integer, parameter :: n = 3
    integer(int32) :: send(n), recv(n*p), x(n*p), want(n*p)
    integer :: i, q
    call test_step("allgather")
    want = [((100*q + i, i=1, n), q=0, p - 1)]
    send = [(100*r + i, i=1, n)]
    call pg_allgather(s, send, recv, n, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather")
    call expect(all(recv == want), "allgather")

    ! In place, the same array: block rank+1 holds this rank's contribution.
    x = -7
    x(r*n + 1:(r + 1)*n) = send
    call pg_allgather(s, x, x, n, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather in place (same array)")
    call expect(all(x == want), "allgather in place (same array)")

    ! In place, the C way: the block as a section.
    x = -7
    x(r*n + 1:(r + 1)*n) = send
    call pg_allgather(s, x(r*n + 1:(r + 1)*n), x, int(n, c_size_t), PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather in place (section)")
    call expect(all(x == want), "allgather in place (section)")
  end subroutine allgather

  subroutine reduce_scatter()
    integer, parameter :: n = 2
    real(real64) :: send(n*p), recv(n), w(n*p), want(n)
    integer :: i, q
    call test_step("reduce_scatter")
    send = [((real(r + 10*(q*n + i), real64), i=1, n), q=0, p - 1)]
    want = [(real(p*(p - 1)/2 + 10*p*(r*n + i), real64), i=1, n)]
    call pg_reduce_scatter(s, send, recv, n, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_reduce_scatter")
    call expect(all(recv == want), "reduce_scatter")

    ! In place: the result is in block rank+1 of the array.
    w = send
    call pg_reduce_scatter(s, w, w, n, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_reduce_scatter in place")
    call expect(all(w(r*n + 1:(r + 1)*n) == want), "reduce_scatter in place")
  end subroutine reduce_scatter

  subroutine gather_scatter_alltoall()
    integer, parameter :: n = 2
    integer(int64) :: send(n), all_(n*p), empty(0), recv(n), sa(n*p), ra(n*p), want(n*p)
    integer :: i, q, root
    call test_step("gather")
    root = p/2
    send = [(10*r + i, i=1, n)]
    all_ = -1
    if (r == root) then
      call pg_gather(s, send, all_, n, PG_INT64, root, ierr)
    else
      call pg_gather(s, send, empty, n, PG_INT64, root, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_gather")
    want = [((10*q + i, i=1, n), q=0, p - 1)]
    if (r == root) call expect(all(all_ == want), "gather at root")

    call test_step("gather in place")
    all_ = -1
    all_(root*n + 1:(root + 1)*n) = send
    if (r == root) then
      call pg_gather(s, all_, all_, n, PG_INT64, root, ierr)
    else
      call pg_gather(s, send, empty, n, PG_INT64, root, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_gather in place")
    if (r == root) call expect(all(all_ == want), "gather in place at root")

    call test_step("scatter")
    recv = -1
    if (r == root) then
      sa = [((1000 + 10*q + i, i=1, n), q=0, p - 1)]
      call pg_scatter(s, sa, recv, n, PG_INT64, root, ierr)
    else
      call pg_scatter(s, empty, recv, n, PG_INT64, root, ierr)
    end if
    call test_status(ierr, PG_OK, "pg_scatter")
    call expect(all(recv == [(1000 + 10*r + i, i=1, n)]), "scatter")

    call test_step("alltoall")
    sa = [((100*r + 10*q + i, i=1, n), q=0, p - 1)]
    want = [((100*q + 10*r + i, i=1, n), q=0, p - 1)]
    call pg_alltoall(s, sa, ra, n, PG_INT64, ierr)
    call test_status(ierr, PG_OK, "pg_alltoall")
    call expect(all(ra == want), "alltoall")
    call pg_alltoall(s, sa, sa, n, PG_INT64, ierr)
    call test_status(ierr, PG_OK, "pg_alltoall in place")
    call expect(all(sa == want), "alltoall in place")
  end subroutine gather_scatter_alltoall

  subroutine point_to_point()
    real(real32) :: out(3), in(3)
    integer :: i, dest, source
    call test_step("sendrecv ring")
    dest = mod(r + 1, p)
    source = mod(r - 1 + p, p)
    out = [(real(10*r + i, real32), i=1, 3)]
    in = -1
    call pg_sendrecv(s, out, 3, dest, in, 3, source, PG_FLOAT32, 5, ierr)
    call test_status(ierr, PG_OK, "pg_sendrecv")
    call expect(all(in == [(real(10*source + i, real32), i=1, 3)]), "sendrecv ring")

    call test_step("send/recv")
    if (p >= 2) then
      if (r == 0) then
        call pg_send(s, out, 3_c_size_t, PG_FLOAT32, 1, 9, ierr)
        call test_status(ierr, PG_OK, "pg_send")
      else if (r == 1) then
        in = -1
        call pg_recv(s, in, 3_c_size_t, PG_FLOAT32, 0, 9, ierr)
        call test_status(ierr, PG_OK, "pg_recv")
        call expect(all(in == [(real(i, real32), i=1, 3)]), "recv from rank 0")
      end if
    end if
    call pg_barrier(s, ierr)
    call test_status(ierr, PG_OK, "pg_barrier")
  end subroutine point_to_point

  !> Non-contiguous sections are packed: results land in the section's
  !> elements, and the elements between them are left alone.
  subroutine sections()
    real(real64) :: a(10, 4), v(4), b(8, 4), bwant(8, 4), c(6, 3), cwant(6, 3), d(5), e(5)
    real(real64) :: f(3, 4), fwant(3, 4)
    integer(int32) :: g(2, 3*p), h(3)
    integer :: i, j, k
    call test_step("sections: strided sendbuf")
    do j = 1, 4
      do i = 1, 10
        a(i, j) = r + i + 100*j
      end do
    end do
    v = -1
    call pg_allreduce(s, a(2, :), v, 4, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce of a row")
    call expect(all(v == [(real(p*(2 + 100*j) + p*(p - 1)/2, real64), j=1, 4)]), "allreduce of a row")

    call test_step("sections: count below the section size")
    v = -1
    call pg_allreduce(s, a(2, :), v, 2, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce of part of a row")
    call expect(all(v(1:2) == [(real(p*(2 + 100*j) + p*(p - 1)/2, real64), j=1, 2)]) .and. &
                all(v(3:4) == -1), "allreduce of part of a row")

    call test_step("sections: strided sendbuf and recvbuf")
    b = -1
    bwant = -1
    do k = 1, 4
      do j = 1, 2
        bwant(2*k, 2*j - 1) = p*(2*k - 1 + 100*(j + 1)) + p*(p - 1)/2
      end do
    end do
    call pg_allreduce(s, a(1:7:2, 2:3), b(2:8:2, 1:3:2), 8, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce section to section")
    call expect(all(b == bwant), "allreduce section to section, other elements untouched")

    call test_step("sections: in place")
    do j = 1, 3
      do i = 1, 6
        c(i, j) = r + i + 10*j
        cwant(i, j) = merge(p*(i + 10*j) + p*(p - 1)/2, r + i + 10*j, mod(i, 2) == 1)
      end do
    end do
    call pg_allreduce(s, c(1:5:2, :), c(1:5:2, :), 9, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce in place on a section")
    call expect(all(c == cwant), "allreduce in place on a section")

    call test_step("sections: negative stride")
    d = [(real(r + i, real64), i=1, 5)]
    call pg_allreduce(s, d(5:1:-1), e, 5, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce of a reversed section")
    call expect(all(e == [(real(p*(6 - k) + p*(p - 1)/2, real64), k=1, 5)]), "allreduce reversed")

    call test_step("sections: broadcast into a row")
    f = 0
    fwant = 0
    fwant(2, :) = [(real(2 + 10*j, real64), j=1, 4)]
    if (r == 0) then
      f = reshape([((real(i + 10*j, real64), i=1, 3), j=1, 4)], [3, 4])
      fwant = f
    end if
    call pg_broadcast(s, f(2, :), 4, PG_FLOAT64, 0, ierr)
    call test_status(ierr, PG_OK, "pg_broadcast into a row")
    call expect(all(f == fwant), "broadcast into a row")

    call test_step("sections: allgather into a row")
    g = -1
    h = [(10*r + i, i=1, 3)]
    call pg_allgather(s, h, g(2, :), 3, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather into a row")
    call expect(all(g(2, :) == [((10*k + i, i=1, 3), k=0, p - 1)]) .and. all(g(1, :) == -1), &
                "allgather into a row")

    call test_step("sections: allgather in place in a row")
    g = -1
    g(2, 3*r + 1:3*r + 3) = h
    call pg_allgather(s, g(2, :), g(2, :), 3, PG_INT32, ierr)
    call test_status(ierr, PG_OK, "pg_allgather in place in a row")
    call expect(all(g(2, :) == [((10*k + i, i=1, 3), k=0, p - 1)]) .and. all(g(1, :) == -1), &
                "allgather in place in a row")

    call test_step("sections: reduce_scatter in place in a row")
    g(1, :) = [((r + 10*(3*k + i), i=1, 3), k=0, p - 1)]
    g(2, :) = -1
    call pg_reduce_scatter(s, g(1, :), g(1, :), 3, PG_INT32, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_reduce_scatter in place in a row")
    call expect(all(g(1, 3*r + 1:3*r + 3) == [(p*(p - 1)/2 + 10*p*(3*r + i), i=1, 3)]) .and. &
                all(g(2, :) == -1), "reduce_scatter in place in a row")

    call test_step("sections: a component of an array of derived type")
    call components()
  end subroutine sections

  !> Particle-style data: one component of every element is a strided section.
  subroutine components()
    type particle
      real(real64) :: position(3)
      real(real64) :: mass
      integer(int32) :: id
    end type particle
    type(particle) :: parts(5)
    real(real64) :: total(5)
    integer :: i
    do i = 1, 5
      parts(i)%position = [i, 2*i, 3*i] + r
      parts(i)%mass = i + 0.25_real64*r
      parts(i)%id = 10*r + i
    end do
    call pg_allreduce(s, parts%mass, total, 5, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce of parts%mass")
    call expect(all(total == [(p*i + 0.25_real64*(p*(p - 1)/2), i=1, 5)]), "allreduce of parts%mass")
    call pg_allreduce(s, parts%position(2), parts%position(2), 5, PG_FLOAT64, PG_MAX, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce in place of parts%position(2)")
    call expect(all(parts%position(2) == [(2*i + p - 1, i=1, 5)]), "in place on parts%position(2)")
    call expect(all(parts%position(1) == [(i + r, i=1, 5)]) .and. &
                all(parts%position(3) == [(3*i + r, i=1, 5)]) .and. &
                all(parts%id == [(10*r + i, i=1, 5)]), "the other components are untouched")
  end subroutine components

  subroutine split()
    type(pg_strategy) :: sub, none
    integer :: color, mine, total, q, same
    call test_step("split")
    color = mod(r, 2)
    call pg_strategy_split(s, color, -r, sub, ierr)   ! key -r: reversed order
    call test_status(ierr, PG_OK, "pg_strategy_split")
    same = 0
    total = 0
    do q = 0, p - 1
      if (mod(q, 2) == color) then
        same = same + 1
        total = total + q
      end if
    end do
    call expect(pg_strategy_size(sub) == same, "split size")
    call expect(pg_strategy_rank(sub) == count([(mod(q, 2) == color .and. q > r, q=0, p - 1)]), &
                "split rank follows the reversed key")
    mine = r
    call pg_allreduce(s=sub, sendbuf=mine, recvbuf=mine, count=1, dtype=PG_INT32, op=PG_SUM, ierr=ierr)
    call test_status(ierr, PG_OK, "pg_allreduce on the split")
    call expect(mine == total, "allreduce on the split")
    call pg_strategy_destroy(sub, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_destroy of the split")

    ! Odd ranks join no group.
    call pg_strategy_split(s, merge(0, -1, mod(r, 2) == 0), 0, none, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_split with a negative color")
    call expect(c_associated(none%handle) .eqv. (mod(r, 2) == 0), "negative color gives a null handle")
    call pg_strategy_destroy(none, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_destroy after a split")
  end subroutine split

  !> Memory from pg_mem_alloc, seen through c_f_pointer, as buffers.
  subroutine library_memory()
    type(c_ptr) :: mem
    real(real64), pointer :: v(:)
    integer :: i
    call test_step("pg_mem_alloc")
    call pg_mem_alloc(s, 8*100, mem, ierr)
    call test_status(ierr, PG_OK, "pg_mem_alloc")
    if (ierr /= PG_OK) return
    call c_f_pointer(mem, v, [100])
    v = [(real(r*i, real64), i=1, 100)]
    call pg_allreduce(s, v, v, 100_c_size_t, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce in place on pg_mem_alloc memory")
    call expect(all(v == [(real(i*(p*(p - 1)/2), real64), i=1, 100)]), "allreduce on pg_mem_alloc memory")
    call pg_mem_free(s, mem, ierr)
    call test_status(ierr, PG_OK, "pg_mem_free")
    call expect(.not. c_associated(mem), "pg_mem_free nulls the pointer")
  end subroutine library_memory

end program test_fortran_collectives
