!> pgstrategy — the Fortran module of the pgstrategy library.
!>
!>   use pgstrategy
!>   type(pg_strategy) :: s
!>   integer :: ierr
!>   call pg_strategy_create(s, "cpu", ierr=ierr)          ! (s, device, backend, comm, ierr)
!>   call pg_allreduce(s, x, y, size(x), PG_FLOAT64, PG_SUM, ierr)
!>   call pg_strategy_destroy(s, ierr)
!>
!> Every procedure has the name of the C call (include/pg_strategy.h, which
!> documents what each call does) and its arguments in C order, with the handle
!> first and `ierr` last. Conventions:
!>
!> - ierr: optional. When present it receives the status (PG_OK or a PG_ERR_*
!>   value). When absent and the call fails, the message is printed to stderr
!>   and the job is aborted with MPI_Abort(MPI_COMM_WORLD, status), as MPI's
!>   default error handler does.
!> - pg_last_error(): the message of this thread's last failure of a call made
!>   through this module. Some argument errors are found by the module itself
!>   (buffer sizes, negative counts, a handle that was never created), which
!>   keeps its own message; pg_last_error() returns the module's message when the
!>   last failure came from the module, and the library's otherwise. Under
!>   PGS_DEBUG=detail the module's refusals are collective, like the library's:
!>   a refused call still reaches the library (without buffers), which fails it
!>   on every rank.
!> - Buffers are `type(*), dimension(..)`: any type, kind and rank, scalars too.
!>   `count` elements of `dtype` must fit in the bytes the actual argument
!>   describes, or the call fails with PG_ERR_INVALID_ARGUMENT: pass the array or
!>   a section, not its first element (the legacy `a(1,1)` is a scalar here). An
!>   assumed-size array (`a(*)`) has no known size and is not checked.
!>   A non-contiguous section is packed into a temporary (and unpacked after an
!>   output call that succeeded), so it works at the cost of a copy. Packing is
!>   done by the CPU: on a CUDA strategy (device memory) a non-contiguous buffer
!>   is refused with PG_ERR_INVALID_ARGUMENT.
!> - Counts are default integers or integer(c_size_t) (both counts of
!>   pg_sendrecv the same kind); a negative count is PG_ERR_INVALID_ARGUMENT.
!> - In place: pass the same array as both buffers.
!>     allreduce, alltoall, reduce (at the root): the array is input and output;
!>     allgather: block rank+1 of the array (elements rank*sendcount+1 ...)
!>       holds this rank's contribution on entry, the whole array is the result;
!>     reduce_scatter: the array holds size*recvcount elements on entry, and the
!>       result is in block rank+1 (elements rank*recvcount+1 ...) on return;
!>     gather / scatter (at the root): the root's block stays in place;
!>     allgatherv, gatherv (at the root): the rank's block, at displs(rank+1),
!>       holds its contribution on entry; scatterv (at the root): the root's
!>       block stays where displs(root+1) puts it; reduce_scatterv: the
!>       result lands in the rank's block; alltoallv: the array is input
!>       (blocks at sdispls) and output (blocks at rdispls).
!> - The uneven collectives (pg_allgatherv, pg_reduce_scatterv, pg_alltoallv,
!>   pg_gatherv, pg_scatterv and their pg_i* twins) take count and displacement
!>   arrays of integer(c_size_t), one entry per rank, with 0-based
!>   displacements (in elements) as in MPI; the scalar counts are default
!>   integers or integer(c_size_t). The arrays of gatherv and scatterv are read
!>   at the root only (pass any array, a zero-size one, elsewhere). The
!>   library copies the arrays: only the buffers must stay untouched until a
!>   nonblocking work has finished.
!>   Passing the block as a section, as in C, works too:
!>     call pg_allgather(s, x(r*n+1:(r+1)*n), x, n, PG_FLOAT64)
!> - Root-only buffers (reduce/gather recvbuf, scatter sendbuf) are not used on
!>   other ranks: pass any array there, a zero-size one for instance.
!> - comm: a Fortran MPI handle, MPI_COMM_WORLD from `use mpi` or comm%MPI_VAL
!>   from `use mpi_f08`. Without it, MPI_COMM_WORLD.
!> - Strings passed in are trimmed of trailing blanks; strings returned are
!>   deferred-length allocatable, of the exact length.
!> - A pg_strategy that is not created (or has been destroyed, or came from a
!>   split with a negative color) has a null `handle`: c_associated(s%handle)
!>   tells them apart.
!> - Nonblocking calls (pg_iallreduce, ..., pg_ibarrier, pg_isend, pg_irecv) take
!>   the blocking call's arguments plus a type(pg_work) before ierr; finish them
!>   with pg_work_wait(work, timeout_seconds, ierr) (a negative timeout waits
!>   forever) or pg_work_test(work, done, ierr), then pg_work_free(work, ierr).
!>   As with MPI, declare the buffers `asynchronous` in the caller and leave
!>   them alone until the work has finished. A packed (non-contiguous) output
!>   buffer is unpacked when pg_work_wait or pg_work_test finds the work
!>   finished. PG_ERR_TIMEOUT from pg_work_wait is a failure like any other:
!>   without ierr it aborts.
module pgstrategy
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_associated, c_int, c_size_t, &
                                         c_long_long, c_char, c_null_char, c_f_pointer, &
                                         c_double, c_float
  implicit none
  private

  !> A strategy handle (the C `pg_strategy *`).
  type, bind(C), public :: pg_strategy
    type(c_ptr) :: handle = c_null_ptr
  end type pg_strategy

  !> A nonblocking operation in flight (started by a pg_i* call).
  type, bind(C), public :: pg_work
    type(c_ptr) :: handle = c_null_ptr
  end type pg_work

  ! ---- constants: the values of include/pg_strategy.h ------------------------
  integer, parameter, public :: PG_VERSION_MAJOR = PGF_VERSION_MAJOR
  integer, parameter, public :: PG_VERSION_MINOR = PGF_VERSION_MINOR
  integer, parameter, public :: PG_VERSION_PATCH = PGF_VERSION_PATCH

  ! pg_status, pg_dtype, pg_op: generated by gen_binding.py from the header.
#include "pgf_constants.F90.inc"

  ! ---- procedures ---------------------------------------------------------------
  public :: pg_status_name, pg_last_error, pg_version, pg_default_backend, pg_backends_list
  public :: pg_strategy_create, pg_strategy_split, pg_strategy_destroy, pg_strategy_abort, pg_strategy_describe
  public :: pg_strategy_set_stream
  public :: pg_mem_alloc, pg_mem_free, pg_work_wait, pg_work_test, pg_work_free

  ! bytes: a default integer or an integer(c_size_t).
  interface pg_mem_alloc
    module procedure pg_mem_alloc_int, pg_mem_alloc_csize
  end interface

  ! timeout_seconds: double precision or default real.
  interface pg_work_wait
    module procedure pg_work_wait_double, pg_work_wait_real
  end interface

  ! Generated by gen_binding.py: the public names of the queries (pg_strategy_rank, ...) and
  ! of the communication calls (pg_allreduce, pg_iallreduce, ...), their generic interfaces,
  ! and the bind(C) interfaces of the C functions the module calls (the library's pg_<name>
  ! as c_<name>).
#include "pgf_spec.F90.inc"

  interface
    function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: c_strlen
    end function c_strlen
  end interface

contains

  ! ---- helpers --------------------------------------------------------------------

  !> A Fortran string as a C one: trailing blanks trimmed, NUL-terminated.
  pure function c_string(f) result(c)
    character(len=*), intent(in) :: f
    character(kind=c_char, len=len_trim(f) + 1) :: c
    c = trim(f)//c_null_char
  end function c_string

  !> A C string (NULL gives "") as a Fortran string of the exact length.
  function f_string(p) result(f)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: f
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      f = ""
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: f)
    do i = 1, n
      f(i:i) = chars(i)
    end do
  end function f_string

  !> Hands the status to ierr, or aborts on failure when there is no ierr.
  subroutine finish(status, call, ierr)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: call
    integer, intent(out), optional :: ierr
    if (present(ierr)) then
      ierr = status
    else if (status /= PG_OK) then
      call pgf_abort(status, c_string(call))
    end if
  end subroutine finish

  !> Calls a C function that writes a NUL-terminated string truncated to its
  !> buffer (describe, backends_list) with a growing buffer until it fits.
  subroutine read_c_text(what, s, text, status)
    character(len=*), intent(in) :: what
    type(pg_strategy), intent(in) :: s
    character(len=:), allocatable, intent(out) :: text
    integer(c_int), intent(out) :: status
    character(kind=c_char, len=:), allocatable :: buf
    integer(c_size_t) :: capacity
    integer :: n
    capacity = 1024
    text = ""
    do
      allocate (character(kind=c_char, len=capacity) :: buf)
      if (what == "describe") then
        status = pgf_lib(c_strategy_describe(s%handle, buf, capacity))
      else
        status = pgf_lib(c_backends_list(buf, capacity))
      end if
      if (status /= PG_OK) return
      n = index(buf, c_null_char) - 1
      if (n < 0) n = int(capacity)
      if (n < capacity - 1 .or. capacity >= 2_c_size_t**26) exit
      deallocate (buf)
      capacity = capacity*8
    end do
    text = buf(1:n)
  end subroutine read_c_text

  ! ---- library information ----------------------------------------------------------

  !> "PG_ERR_UNKNOWN_BACKEND" for PG_ERR_UNKNOWN_BACKEND; "PG_STATUS_UNKNOWN" outside the enum.
  function pg_status_name(status) result(name)
    integer, intent(in) :: status
    character(len=:), allocatable :: name
    name = f_string(c_status_name(status))
  end function pg_status_name

  !> The message of this thread's last failure (see the module's header).
  function pg_last_error() result(message)
    character(len=:), allocatable :: message
    message = f_string(pgf_last_error())
  end function pg_last_error

  !> The version of the library that is running.
  subroutine pg_version(major, minor, patch)
    integer, intent(out) :: major, minor, patch
    call c_version(major, minor, patch)  ! default integers are c_int (see the docs' Limits)
  end subroutine pg_version

  !> "mpi" for "cpu", "nccl" for "cuda"/"cuda:N"; "" for anything else.
  function pg_default_backend(device) result(name)
    character(len=*), intent(in) :: device
    character(len=:), allocatable :: name
    name = f_string(pgf_default_backend(c_string(device)))
  end function pg_default_backend

  !> The registered backends, comma-separated and sorted ("fairring,mpi,nccl").
  subroutine pg_backends_list(list, ierr)
    character(len=:), allocatable, intent(out) :: list
    integer, intent(out), optional :: ierr
    type(pg_strategy) :: none
    integer(c_int) :: status
    call read_c_text("backends_list", none, list, status)
    call finish(status, "pg_backends_list", ierr)
  end subroutine pg_backends_list

  ! ---- lifecycle (collective) -----------------------------------------------------------

  !> Creates a strategy for `device` ("cpu", "cuda", "cuda:N") on a duplicate of
  !> `comm` (default MPI_COMM_WORLD). `backend` absent or "": PGS_BACKEND, then
  !> the device default. Collective; every rank gets the same status.
  subroutine pg_strategy_create(s, device, backend, comm, ierr)
    type(pg_strategy), intent(out) :: s
    character(len=*), intent(in) :: device
    character(len=*), intent(in), optional :: backend
    integer, intent(in), optional :: comm
    integer, intent(out), optional :: ierr
    integer(c_int) :: has_comm, fcomm, status
    has_comm = merge(1, 0, present(comm))
    fcomm = 0
    if (present(comm)) fcomm = comm
    if (present(backend)) then
      status = pgf_strategy_create(c_string(device), c_string(backend), has_comm, fcomm, s%handle)
    else
      status = pgf_strategy_create(c_string(device), has_comm=has_comm, comm=fcomm, out=s%handle)
    end if
    call finish(status, "pg_strategy_create", ierr)
  end subroutine pg_strategy_create

  !> A strategy on the ranks of `s` with the same `color`, ordered by `key`.
  !> A negative color joins no group: `out` stays null and the status is PG_OK.
  subroutine pg_strategy_split(s, color, key, out, ierr)
    type(pg_strategy), intent(in) :: s
    integer, intent(in) :: color, key
    type(pg_strategy), intent(out) :: out
    integer, intent(out), optional :: ierr
    call finish(pgf_lib(c_strategy_split(s%handle, color, key, out%handle)), "pg_strategy_split", ierr)
  end subroutine pg_strategy_split

  !> Destroys the strategy (collective); its handle is null afterwards.
  !> A null handle is fine.
  subroutine pg_strategy_destroy(s, ierr)
    type(pg_strategy), intent(inout) :: s
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = pgf_lib(c_strategy_destroy(s%handle))
    s%handle = c_null_ptr
    call finish(status, "pg_strategy_destroy", ierr)
  end subroutine pg_strategy_destroy

  !> Aborts the strategy on this rank, from any thread (include/pg_strategy.h):
  !> calls in flight on it return PG_ERR_ABORTED; it is poisoned; its peers learn of it
  !> (docs/errors.md, "When a peer fails or aborts").
  subroutine pg_strategy_abort(s, ierr)
    type(pg_strategy), intent(in) :: s
    integer, intent(out), optional :: ierr
    call finish(pgf_lib(c_strategy_abort(s%handle)), "pg_strategy_abort", ierr)
  end subroutine pg_strategy_abort

  !> Backend and the rule that chose it, device, ranks, node layout.
  subroutine pg_strategy_describe(s, text, ierr)
    type(pg_strategy), intent(in) :: s
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    call read_c_text("describe", s, text, status)
    call finish(status, "pg_strategy_describe", ierr)
  end subroutine pg_strategy_describe

  !> Sets the CUDA stream (a cudaStream_t as type(c_ptr)) CUDA backends use.
  !> PG_ERR_UNSUPPORTED on a CPU strategy.
  subroutine pg_strategy_set_stream(s, cuda_stream, ierr)
    type(pg_strategy), intent(in) :: s
    type(c_ptr), intent(in) :: cuda_stream
    integer, intent(out), optional :: ierr
    call finish(pgf_lib(c_strategy_set_stream(s%handle, cuda_stream)), "pg_strategy_set_stream", &
                ierr)
  end subroutine pg_strategy_set_stream

  ! ---- communication buffers (collective) --------------------------------------------------

  !> `bytes` of memory backends can use without copying (CPU), or device
  !> memory (CUDA); view it with c_f_pointer. Free it with pg_mem_free on the
  !> same strategy.
  subroutine pg_mem_alloc_csize(s, bytes, ptr, ierr)
    type(pg_strategy), intent(in) :: s
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr), intent(out) :: ptr
    integer, intent(out), optional :: ierr
    call finish(pgf_mem_alloc(s%handle, int(bytes, c_long_long), ptr), "pg_mem_alloc", ierr)
  end subroutine pg_mem_alloc_csize

  subroutine pg_mem_alloc_int(s, bytes, ptr, ierr)
    type(pg_strategy), intent(in) :: s
    integer, intent(in) :: bytes
    type(c_ptr), intent(out) :: ptr
    integer, intent(out), optional :: ierr
    call pg_mem_alloc_csize(s, int(bytes, c_size_t), ptr, ierr)
  end subroutine pg_mem_alloc_int

  !> Frees memory from pg_mem_alloc; ptr is null afterwards.
  subroutine pg_mem_free(s, ptr, ierr)
    type(pg_strategy), intent(in) :: s
    type(c_ptr), intent(inout) :: ptr
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = pgf_lib(c_mem_free(s%handle, ptr))
    if (status == PG_OK) ptr = c_null_ptr
    call finish(status, "pg_mem_free", ierr)
  end subroutine pg_mem_free

  ! ---- nonblocking work ------------------------------------------------------------------

  !> Waits for the work; a negative timeout waits forever. PG_ERR_TIMEOUT when
  !> the time runs out (the work stays valid: wait again); otherwise the
  !> operation's own status.
  subroutine pg_work_wait_double(work, timeout_seconds, ierr)
    type(pg_work), intent(in) :: work
    real(c_double), intent(in) :: timeout_seconds
    integer, intent(out), optional :: ierr
    call finish(pgf_work_wait(work%handle, timeout_seconds), "pg_work_wait", ierr)
  end subroutine pg_work_wait_double

  subroutine pg_work_wait_real(work, timeout_seconds, ierr)
    type(pg_work), intent(in) :: work
    real(c_float), intent(in) :: timeout_seconds
    integer, intent(out), optional :: ierr
    call finish(pgf_work_wait(work%handle, real(timeout_seconds, c_double)), "pg_work_wait", ierr)
  end subroutine pg_work_wait_real

  !> done = .true. when the work has finished (ierr is then the operation's
  !> status), else .false. and PG_OK.
  subroutine pg_work_test(work, done, ierr)
    type(pg_work), intent(in) :: work
    logical, intent(out) :: done
    integer, intent(out), optional :: ierr
    integer(c_int) :: c_done, status
    status = pgf_work_test(work%handle, c_done)
    done = c_done /= 0
    call finish(status, "pg_work_test", ierr)
  end subroutine pg_work_test

  !> Frees a finished work; its handle is null afterwards. A null handle is
  !> fine. Unfinished work: PG_ERR_STATE, and nothing is freed.
  subroutine pg_work_free(work, ierr)
    type(pg_work), intent(inout) :: work
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = pgf_work_free(work%handle)
    if (status == PG_OK) work%handle = c_null_ptr
    call finish(status, "pg_work_free", ierr)
  end subroutine pg_work_free

  ! ---- generated: the queries (local; a null handle gives "" or -1), and the communication
  ! calls, one subroutine per count kind where the call takes a count -----------------------
#include "pgf_procs.F90.inc"

end module pgstrategy
