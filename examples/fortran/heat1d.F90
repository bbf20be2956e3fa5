!> 1-d heat equation u_t = u_xx on (0,1), u = 0 at both ends, u(x,0) = sin(pi x),
!> explicit finite differences on a grid split into blocks, one per rank.
!>
!> Each step every rank needs one value from each neighbour (a halo exchange,
!> pg_sendrecv); every `report` steps the ranks agree on a global residual
!> (pg_allreduce). The program checks its own answer: sin(pi x) is an
!> eigenvector of the discrete scheme, so after n steps the exact discrete
!> solution is lambda**n * sin(pi x_j) whatever the number of ranks, and it is
!> close to the continuous one, exp(-pi**2 t) sin(pi x). It exits non-zero on a
!> mismatch.
!>
!>   mpiexec -n 3 ./heat1d_fortran
!>
!> No MPI call is needed here: without one, pgstrategy initializes MPI and
!> finalizes it at exit.
program heat1d
  use, intrinsic :: iso_fortran_env, only: real64, output_unit
  use pgstrategy
  implicit none

  integer, parameter :: dp = real64
  integer, parameter :: n_global = 40, n_steps = 300, report = 100
  real(dp), parameter :: pi = acos(-1.0_dp)
  real(dp), parameter :: h = 1.0_dp/(n_global + 1), dt = 0.4_dp*h*h, r = dt/(h*h)

  type(pg_strategy) :: s
  real(dp), allocatable :: u(:), u_new(:), x(:)
  real(dp) :: local(2), global(2), lambda, t
  integer :: rank, nranks, n, first, step, j, ierr

  call pg_strategy_create(s, "cpu", ierr=ierr)
  if (ierr /= PG_OK) then
    print '(a)', "pg_strategy_create failed: "//pg_last_error()
    error stop 1
  end if
  rank = pg_strategy_rank(s)
  nranks = pg_strategy_size(s)

  ! This rank's block of grid points: n of them, starting at global index `first`.
  n = n_global/nranks
  first = rank*n + min(rank, mod(n_global, nranks)) + 1
  if (rank < mod(n_global, nranks)) n = n + 1

  ! u(0) and u(n+1) are ghost points: the neighbours' values, or the boundary's 0.
  allocate (u(0:n + 1), u_new(0:n + 1), x(n))
  x = [(real(first + j - 1, dp)*h, j=1, n)]
  u = 0
  u(1:n) = sin(pi*x)

  do step = 1, n_steps
    call exchange_halo(u)
    u_new(1:n) = u(1:n) + r*(u(0:n - 1) - 2*u(1:n) + u(2:n + 1))
    if (mod(step, report) == 0) then
      ! Global residual: the L2 norm of the update, summed over every rank.
      local(1) = sum((u_new(1:n) - u(1:n))**2)
      call pg_allreduce(s, local, global, 1, PG_FLOAT64, PG_SUM)
      if (rank == 0) print '("step ",i5,"  residual ",es10.3)', step, sqrt(global(1))
    end if
    u(1:n) = u_new(1:n)
  end do

  ! Errors against the exact discrete solution and the continuous one, the
  ! largest over every rank.
  t = n_steps*dt
  lambda = 1 - 4*r*sin(pi*h/2)**2
  local(1) = maxval(abs(u(1:n) - lambda**n_steps*sin(pi*x)))
  local(2) = maxval(abs(u(1:n) - exp(-pi**2*t)*sin(pi*x)))
  call pg_allreduce(s, local, global, 2, PG_FLOAT64, PG_MAX)

  if (rank == 0) then
    print '("heat1d on ",i0," ranks, t = ",f6.4,": max error ",es9.2," vs the discrete solution, ", &
          &es9.2," vs the continuous one")', nranks, t, global(1), global(2)
    flush (output_unit)
  end if
  call pg_strategy_destroy(s)
  deallocate (u, u_new, x)
  if (global(1) > 1e-12_dp .or. global(2) > 1e-3_dp) error stop "heat1d: wrong answer"
  if (rank == 0) print '(a)', "heat1d: OK"

contains

  !> Sends this block's end values to the neighbours and receives theirs into
  !> the ghost points. The first and last ranks have one neighbour each.
  subroutine exchange_halo(v)
    real(dp), intent(inout) :: v(0:)
    integer, parameter :: to_right = 1, to_left = 2
    integer :: left, right
    left = rank - 1
    right = rank + 1
    ! Last value to the right neighbour; the left one's into v(0).
    if (left >= 0 .and. right < nranks) then
      call pg_sendrecv(s, v(n), 1, right, v(0), 1, left, PG_FLOAT64, to_right)
    else if (right < nranks) then
      call pg_send(s, v(n), 1, PG_FLOAT64, right, to_right)
    else if (left >= 0) then
      call pg_recv(s, v(0), 1, PG_FLOAT64, left, to_right)
    end if
    ! First value to the left neighbour; the right one's into v(n+1).
    if (left >= 0 .and. right < nranks) then
      call pg_sendrecv(s, v(1), 1, left, v(n + 1), 1, right, PG_FLOAT64, to_left)
    else if (left >= 0) then
      call pg_send(s, v(1), 1, PG_FLOAT64, left, to_left)
    else if (right < nranks) then
      call pg_recv(s, v(n + 1), 1, PG_FLOAT64, right, to_left)
    end if
  end subroutine exchange_halo

end program heat1d
