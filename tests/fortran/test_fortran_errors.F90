!> Errors through the Fortran module come back in ierr with a message in
!> pg_last_error(): counts larger than the array (the legacy `a(1,1)` too),
!> negative counts, bad roots and peers, unknown backends and devices, a handle
!> that was never created. The strategy stays usable after argument errors.
program test_fortran_errors
  use, intrinsic :: iso_c_binding, only: c_size_t, c_associated, c_null_ptr
  use, intrinsic :: iso_fortran_env, only: int32, real64
  use pgstrategy
  use pgf_test
  implicit none

  type(pg_strategy) :: s
  integer :: ierr, r, p

  call test_start_strategy("fortran_errors", s)
  r = pg_strategy_rank(s)
  p = pg_strategy_size(s)

  call buffer_sizes()
  call counts_and_roots()
  call creation()
  call library_information()
  call refused_on_one_rank()
  call still_usable()

  call test_finish_strategy("fortran_errors", s)

contains

  !> True when pg_last_error() contains every one of the words.
  logical function message_has(words)
    character(len=*), intent(in) :: words(:)
    integer :: i
    message_has = .true.
    do i = 1, size(words)
      if (index(pg_last_error(), trim(words(i))) == 0) message_has = .false.
    end do
    if (.not. message_has) call expect(.false., "message '"//pg_last_error()//"' lacks a word")
  end function message_has

  subroutine buffer_sizes()
    real(real64) :: x(10), y(10), a(4, 4), small(3)
    integer(int32) :: g(5)
    call test_step("count larger than the array")
    x = 1
    call pg_allreduce(s, x, y, 11, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce with count 11 on 10 elements")
    call expect(message_has([character(len=16) :: "pg_allreduce", "11", "80 bytes"]), &
                "the message names the call, the count and the capacity")
    call pg_allreduce(s, x, small, 10_c_size_t, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce into a 3-element recvbuf")
    call expect(message_has([character(len=16) :: "recvbuf", "24 bytes"]), "names recvbuf")

    call test_step("legacy a(1,1)")
    a = 0
    call pg_allreduce(s, a(1, 1), a(1, 1), 16, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce of a(1,1) with count 16")
    call pg_broadcast(s, a(1, 1), 16, PG_FLOAT64, 0, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_broadcast of a(1,1) with count 16")
    call expect(all(a == 0), "a refused call leaves the array alone")

    call test_step("same start, different sections: two buffers, each packed")
    a = 1
    call pg_allreduce(s, a(1, :), a(1:2, :), 4, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce of a(1,:) into a(1:2,:)")
    call expect(all(a(1:2, 1:2) == p) .and. all(a(:, 3:4) == 1) .and. all(a(3:4, :) == 1), &
                "the result lands in the first 4 elements of a(1:2,:), nothing else changes")
    a = 0

    call test_step("dtype wider than the array's elements")
    call pg_allreduce(s, g, g, 5, PG_INT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce 5 int64 on 5 int32")

    call test_step("collective recvbufs hold size*count")
    call pg_allgather(s, x, y, 10/p + 1, PG_FLOAT64, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allgather into a too small recvbuf")
    call pg_reduce_scatter(s, x, y, 10/p + 1, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_reduce_scatter from a too small sendbuf")
    call pg_alltoall(s, x, y, 10/p + 1, PG_FLOAT64, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_alltoall on too small buffers")
    call pg_allgather(s, x, y, huge(0_c_size_t)/2 + 1, PG_FLOAT64, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allgather with a count near 2**62")
    call pg_allreduce(s, x, y, huge(0_c_size_t), PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce with a count of 2**63-1")
    call pg_sendrecv(s, x, 11, r, y, 1, r, PG_FLOAT64, 0, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_sendrecv with count 11 on 10 elements")
  end subroutine buffer_sizes

  subroutine counts_and_roots()
    real(real64) :: x(4), y(4)
    character(len=:), allocatable :: shim_message
    x = 1
    call test_step("negative count")
    call pg_allreduce(s, x, y, -1, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce with count -1")
    call expect(message_has([character(len=16) :: "-1", "negative"]), "names the negative count")
    shim_message = pg_last_error()

    call test_step("bad root")
    call pg_broadcast(s, x, 4, PG_FLOAT64, p, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_broadcast with root = size")
    ! The last failure is the library's, so its message replaces the module's.
    call expect(pg_last_error() /= shim_message .and. len(pg_last_error()) > 0, &
                "pg_last_error follows the library after a library failure: "//pg_last_error())
    call pg_reduce(s, x, y, 4, PG_FLOAT64, PG_SUM, -1, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_reduce with root -1")
    call pg_gather(s, x, y, 1, PG_FLOAT64, p + 3, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_gather with root size+3")
    call pg_scatter(s, x, y, 1, PG_FLOAT64, -2, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_scatter with root -2")

    call test_step("CUDA stream on a CPU strategy")
    call pg_strategy_set_stream(s, c_null_ptr, ierr)
    call test_status(ierr, PG_ERR_UNSUPPORTED, "pg_strategy_set_stream on a cpu strategy")

    call test_step("bad peer")
    call pg_send(s, x, 4, PG_FLOAT64, p, 0, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_send to rank size")

    call test_step("bad dtype and op")
    call pg_allreduce(s, x, y, 4, 99, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce with dtype 99")
    call pg_allreduce(s, x, y, 4, PG_FLOAT64, 42, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce with op 42")
    call pg_allreduce(s, x, y, 4, PG_FLOAT64, PG_BXOR, ierr)
    call test_status(ierr, PG_ERR_UNSUPPORTED, "pg_allreduce of PG_FLOAT64 with PG_BXOR")
  end subroutine counts_and_roots

  subroutine creation()
    type(pg_strategy) :: t, never
    real(real64) :: x(2)
    call test_step("unknown backend")
    call pg_strategy_create(t, "cpu", backend="no_such_backend", ierr=ierr)
    call test_status(ierr, PG_ERR_UNKNOWN_BACKEND, "pg_strategy_create with backend no_such_backend")
    call expect(message_has([character(len=16) :: "no_such_backend"]), "names the backend")
    call expect(.not. c_associated(t%handle), "a failed create leaves a null handle")

    call test_step("bad device")
    call pg_strategy_create(t, "gpu", ierr=ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_strategy_create for device gpu")
    call expect(message_has([character(len=16) :: "gpu"]), "names the device")

    call test_step("trailing blanks are trimmed")
    call pg_strategy_create(t, "cpu   ", backend="mpi     ", ierr=ierr)
    call test_status(ierr, PG_OK, "pg_strategy_create('cpu   ', 'mpi     ')")
    call expect(pg_strategy_backend(t) == "mpi", "backend mpi")
    call pg_strategy_destroy(t, ierr)
    call test_status(ierr, PG_OK, "pg_strategy_destroy")

    call test_step("a handle never created")
    call pg_allreduce(never, x, x, 2, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce on a null handle")
    call expect(message_has([character(len=16) :: "pg_allreduce", "NULL"]), "says the handle is null")
    call pg_barrier(never, ierr)
    call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_barrier on a null handle")
    call expect(pg_strategy_rank(never) == -1 .and. pg_strategy_size(never) == -1, &
                "queries on a null handle give -1")
    call expect(pg_strategy_backend(never) == "" .and. pg_strategy_device(never) == "", &
                "queries on a null handle give ''")
  end subroutine creation

  subroutine library_information()
    character(len=:), allocatable :: list
    integer :: major, minor, patch
    call test_step("library information")
    call expect(pg_status_name(PG_ERR_UNKNOWN_BACKEND) == "PG_ERR_UNKNOWN_BACKEND", "pg_status_name")
    call expect(pg_status_name(PG_OK) == "PG_OK", "pg_status_name(PG_OK)")
    call expect(pg_default_backend("cpu") == "mpi", "default backend of cpu")
    call expect(pg_default_backend("cuda") == "nccl", "default backend of cuda")
    call expect(pg_default_backend("cuda:1") == "nccl", "default backend of cuda:1")
    call expect(pg_default_backend("tpu") == "", "no default backend for tpu")
    call pg_backends_list(list, ierr)
    call test_status(ierr, PG_OK, "pg_backends_list")
    call expect(index(list, "mpi") > 0 .and. index(list, "nccl") > 0, "backends listed: "//list)
    call pg_version(major, minor, patch)
    call expect(major == PG_VERSION_MAJOR .and. minor == PG_VERSION_MINOR .and. &
                patch == PG_VERSION_PATCH, "pg_version matches the module's constants")
  end subroutine library_information

  !> Under PGS_DEBUG=detail, argument errors are collective: a call the module
  !> refuses on one rank fails on every rank instead of leaving the others
  !> waiting. (Without it they are local, and this case would hang.)
  subroutine refused_on_one_rank()
    character(len=16) :: debug
    real(real64), allocatable :: x(:), y(:)
    type(pg_work) :: w
    integer :: length
    call get_environment_variable("PGS_DEBUG", debug, length)
    if (debug /= "detail" .or. p < 2) return
    call test_step("PGS_DEBUG=detail: refused on rank 0 only")
    allocate (x(merge(10, 11, r == 0)), y(11))
    x = 1
    call pg_allreduce(s, x, y, 11, PG_FLOAT64, PG_SUM, ierr)
    if (r == 0) then
      call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_allreduce of 11 on 10 elements")
      call expect(message_has([character(len=16) :: "needs 11"]), "the module's message stands")
    else
      call expect(ierr /= PG_OK, "the peers of a refused call fail too")
    end if
    call pg_iallreduce(s, x, y, 11, PG_FLOAT64, PG_SUM, w, ierr)
    if (r == 0) then
      call test_status(ierr, PG_ERR_INVALID_ARGUMENT, "pg_iallreduce of 11 on 10 elements")
    else
      call expect(ierr /= PG_OK, "the peers of a refused nonblocking call fail too")
    end if
    call expect(.not. c_associated(w%handle), "no work after a refused start")
  end subroutine refused_on_one_rank

  subroutine still_usable()
    real(real64) :: x(3), y(3)
    call test_step("usable after errors")
    x = r
    call pg_allreduce(s, x, y, 3, PG_FLOAT64, PG_SUM, ierr)
    call test_status(ierr, PG_OK, "pg_allreduce after errors")
    call expect(all(y == p*(p - 1)/2), "allreduce after errors")
  end subroutine still_usable

end program test_fortran_errors
