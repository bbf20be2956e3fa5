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

  ! pg_status
  integer, parameter, public :: PG_OK = 0
  integer, parameter, public :: PG_ERR_INVALID_ARGUMENT = 1
  integer, parameter, public :: PG_ERR_UNKNOWN_BACKEND = 2
  integer, parameter, public :: PG_ERR_UNSUPPORTED = 3
  integer, parameter, public :: PG_ERR_UNAVAILABLE = 4
  integer, parameter, public :: PG_ERR_BACKEND = 5
  integer, parameter, public :: PG_ERR_TIMEOUT = 6
  integer, parameter, public :: PG_ERR_MISMATCH = 7
  integer, parameter, public :: PG_ERR_PLUGIN = 8
  integer, parameter, public :: PG_ERR_STATE = 9
  integer, parameter, public :: PG_ERR_NO_MEMORY = 10
  integer, parameter, public :: PG_ERR_INTERNAL = 11

  ! pg_dtype
  integer, parameter, public :: PG_INT8 = 0
  integer, parameter, public :: PG_UINT8 = 1
  integer, parameter, public :: PG_INT32 = 2
  integer, parameter, public :: PG_UINT32 = 3
  integer, parameter, public :: PG_INT64 = 4
  integer, parameter, public :: PG_UINT64 = 5
  integer, parameter, public :: PG_FLOAT16 = 6
  integer, parameter, public :: PG_BFLOAT16 = 7
  integer, parameter, public :: PG_FLOAT32 = 8
  integer, parameter, public :: PG_FLOAT64 = 9

  ! pg_op
  integer, parameter, public :: PG_SUM = 0
  integer, parameter, public :: PG_PROD = 1
  integer, parameter, public :: PG_MIN = 2
  integer, parameter, public :: PG_MAX = 3
  integer, parameter, public :: PG_AVG = 4
  integer, parameter, public :: PG_BAND = 5
  integer, parameter, public :: PG_BOR = 6
  integer, parameter, public :: PG_BXOR = 7

  ! ---- procedures ---------------------------------------------------------------
  public :: pg_status_name, pg_last_error, pg_version, pg_default_backend, pg_backends_list
  public :: pg_strategy_create, pg_strategy_split, pg_strategy_destroy
  public :: pg_strategy_backend, pg_strategy_device, pg_strategy_rank, pg_strategy_size
  public :: pg_strategy_local_rank, pg_strategy_local_size, pg_strategy_node_rank
  public :: pg_strategy_node_count, pg_strategy_describe, pg_strategy_set_stream
  public :: pg_mem_alloc, pg_mem_free
  public :: pg_allreduce, pg_broadcast, pg_reduce, pg_allgather, pg_reduce_scatter
  public :: pg_alltoall, pg_gather, pg_scatter, pg_barrier, pg_send, pg_recv, pg_sendrecv
  public :: pg_iallreduce, pg_ibroadcast, pg_ireduce, pg_iallgather, pg_ireduce_scatter
  public :: pg_ialltoall, pg_igather, pg_iscatter, pg_ibarrier, pg_isend, pg_irecv
  public :: pg_work_wait, pg_work_test, pg_work_free
  public :: pg_allgatherv, pg_reduce_scatterv, pg_alltoallv, pg_gatherv, pg_scatterv
  public :: pg_iallgatherv, pg_ireduce_scatterv, pg_ialltoallv, pg_igatherv, pg_iscatterv

  ! Counts: a default integer or an integer(c_size_t). The two specific procedures
  ! of each generic are one text, pgstrategy_counts.inc, included once per kind at
  ! the end of the module. (The empty comment pastes names: Fortran preprocessors
  ! are traditional ones, without ##.)
#define PGF_INT(name) name/**/_int
#define PGF_CSIZE(name) name/**/_csize
#define PGF_COUNT_GENERIC(name) interface name; module procedure PGF_INT(name), PGF_CSIZE(name); end interface
  PGF_COUNT_GENERIC(pg_mem_alloc)
  PGF_COUNT_GENERIC(pg_allreduce)
  PGF_COUNT_GENERIC(pg_broadcast)
  PGF_COUNT_GENERIC(pg_reduce)
  PGF_COUNT_GENERIC(pg_allgather)
  PGF_COUNT_GENERIC(pg_reduce_scatter)
  PGF_COUNT_GENERIC(pg_alltoall)
  PGF_COUNT_GENERIC(pg_gather)
  PGF_COUNT_GENERIC(pg_scatter)
  PGF_COUNT_GENERIC(pg_send)
  PGF_COUNT_GENERIC(pg_recv)
  PGF_COUNT_GENERIC(pg_sendrecv)

  PGF_COUNT_GENERIC(pg_iallreduce)
  PGF_COUNT_GENERIC(pg_ibroadcast)
  PGF_COUNT_GENERIC(pg_ireduce)
  PGF_COUNT_GENERIC(pg_iallgather)
  PGF_COUNT_GENERIC(pg_ireduce_scatter)
  PGF_COUNT_GENERIC(pg_ialltoall)
  PGF_COUNT_GENERIC(pg_igather)
  PGF_COUNT_GENERIC(pg_iscatter)
  PGF_COUNT_GENERIC(pg_isend)
  PGF_COUNT_GENERIC(pg_irecv)
  PGF_COUNT_GENERIC(pg_allgatherv)
  PGF_COUNT_GENERIC(pg_gatherv)
  PGF_COUNT_GENERIC(pg_scatterv)
  PGF_COUNT_GENERIC(pg_iallgatherv)
  PGF_COUNT_GENERIC(pg_igatherv)
  PGF_COUNT_GENERIC(pg_iscatterv)
#undef PGF_COUNT_GENERIC

  ! timeout_seconds: double precision or default real.
  interface pg_work_wait
    module procedure pg_work_wait_double, pg_work_wait_real
  end interface

  ! ---- the C side: the library itself, and the shim (pgstrategy_f.c) ---------------
  interface
    function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: c_strlen
    end function c_strlen

    function c_status_name(status) bind(C, name="pg_status_name")
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: c_status_name
    end function c_status_name

    subroutine c_version(major, minor, patch) bind(C, name="pg_version")
      import :: c_int
      integer(c_int), intent(out) :: major, minor, patch
    end subroutine c_version

    function c_strategy_backend(s) bind(C, name="pg_strategy_backend")
      import :: c_ptr
      type(c_ptr), value :: s
      type(c_ptr) :: c_strategy_backend
    end function c_strategy_backend

    function c_strategy_device(s) bind(C, name="pg_strategy_device")
      import :: c_ptr
      type(c_ptr), value :: s
      type(c_ptr) :: c_strategy_device
    end function c_strategy_device

    function c_strategy_rank(s) bind(C, name="pg_strategy_rank")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_rank
    end function c_strategy_rank

    function c_strategy_size(s) bind(C, name="pg_strategy_size")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_size
    end function c_strategy_size

    function c_strategy_local_rank(s) bind(C, name="pg_strategy_local_rank")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_local_rank
    end function c_strategy_local_rank

    function c_strategy_local_size(s) bind(C, name="pg_strategy_local_size")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_local_size
    end function c_strategy_local_size

    function c_strategy_node_rank(s) bind(C, name="pg_strategy_node_rank")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_node_rank
    end function c_strategy_node_rank

    function c_strategy_node_count(s) bind(C, name="pg_strategy_node_count")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int) :: c_strategy_node_count
    end function c_strategy_node_count

    function pgf_last_error() bind(C, name="pgf_last_error")
      import :: c_ptr
      type(c_ptr) :: pgf_last_error
    end function pgf_last_error

    subroutine pgf_abort(status, call) bind(C, name="pgf_abort")
      import :: c_int, c_char
      integer(c_int), value :: status
      character(kind=c_char), dimension(*), intent(in) :: call
    end subroutine pgf_abort

    function pgf_default_backend(device) bind(C, name="pgf_default_backend")
      import :: c_ptr, c_char
      character(kind=c_char), dimension(*), intent(in) :: device
      type(c_ptr) :: pgf_default_backend
    end function pgf_default_backend

    function pgf_backends_list(buf, len) bind(C, name="pgf_backends_list")
      import :: c_int, c_char, c_size_t
      character(kind=c_char), dimension(*) :: buf
      integer(c_size_t), value :: len
      integer(c_int) :: pgf_backends_list
    end function pgf_backends_list

    function pgf_strategy_create(device, backend, has_comm, comm, out) &
        bind(C, name="pgf_strategy_create")
      import :: c_int, c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: device
      character(kind=c_char), dimension(*), intent(in), optional :: backend
      integer(c_int), value :: has_comm, comm
      type(c_ptr), intent(out) :: out
      integer(c_int) :: pgf_strategy_create
    end function pgf_strategy_create

    function pgf_strategy_split(s, color, key, out) bind(C, name="pgf_strategy_split")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
      integer(c_int), value :: color, key
      type(c_ptr), intent(out) :: out
      integer(c_int) :: pgf_strategy_split
    end function pgf_strategy_split

    function pgf_strategy_destroy(s) bind(C, name="pgf_strategy_destroy")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
      integer(c_int) :: pgf_strategy_destroy
    end function pgf_strategy_destroy

    function pgf_strategy_describe(s, buf, len) bind(C, name="pgf_strategy_describe")
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: s
      character(kind=c_char), dimension(*) :: buf
      integer(c_size_t), value :: len
      integer(c_int) :: pgf_strategy_describe
    end function pgf_strategy_describe

    function pgf_strategy_set_stream(s, stream) bind(C, name="pgf_strategy_set_stream")
      import :: c_int, c_ptr
      type(c_ptr), value :: s, stream
      integer(c_int) :: pgf_strategy_set_stream
    end function pgf_strategy_set_stream

    function pgf_mem_alloc(s, bytes, ptr) bind(C, name="pgf_mem_alloc")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      integer(c_long_long), value :: bytes
      type(c_ptr), intent(out) :: ptr
      integer(c_int) :: pgf_mem_alloc
    end function pgf_mem_alloc

    function pgf_mem_free(s, ptr) bind(C, name="pgf_mem_free")
      import :: c_int, c_ptr
      type(c_ptr), value :: s, ptr
      integer(c_int) :: pgf_mem_free
    end function pgf_mem_free

    function pgf_barrier(s) bind(C, name="pgf_barrier")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
      integer(c_int) :: pgf_barrier
    end function pgf_barrier

    function pgf_allreduce(s, sendbuf, recvbuf, count, dtype, op) bind(C, name="pgf_allreduce")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, op
      integer(c_int) :: pgf_allreduce
    end function pgf_allreduce

    function pgf_broadcast(s, buf, count, dtype, root) bind(C, name="pgf_broadcast")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..) :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, root
      integer(c_int) :: pgf_broadcast
    end function pgf_broadcast

    function pgf_reduce(s, sendbuf, recvbuf, count, dtype, op, root) bind(C, name="pgf_reduce")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, op, root
      integer(c_int) :: pgf_reduce
    end function pgf_reduce

    function pgf_allgather(s, sendbuf, recvbuf, sendcount, dtype) bind(C, name="pgf_allgather")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: sendcount
      integer(c_int), value :: dtype
      integer(c_int) :: pgf_allgather
    end function pgf_allgather

    ! The uneven collectives: count and displacement arrays (integer(c_size_t),
    ! one per rank, 0-based displacements) go to the shim as descriptors.
    function pgf_allgatherv(s, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype) &
        bind(C, name="pgf_allgatherv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      integer(c_long_long), value :: sendcount
      type(*), dimension(..) :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
      integer(c_int), value :: dtype
      integer(c_int) :: pgf_allgatherv
    end function pgf_allgatherv

    function pgf_reduce_scatterv(s, sendbuf, recvbuf, recvcounts, dtype, op) bind(C, name="pgf_reduce_scatterv")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:)
      integer(c_int), value :: dtype, op
      integer(c_int) :: pgf_reduce_scatterv
    end function pgf_reduce_scatterv

    function pgf_alltoallv(s, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype) &
        bind(C, name="pgf_alltoallv")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
      type(*), dimension(..) :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
      integer(c_int), value :: dtype
      integer(c_int) :: pgf_alltoallv
    end function pgf_alltoallv

    function pgf_gatherv(s, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root) &
        bind(C, name="pgf_gatherv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      integer(c_long_long), value :: sendcount
      type(*), dimension(..) :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
      integer(c_int), value :: dtype, root
      integer(c_int) :: pgf_gatherv
    end function pgf_gatherv

    function pgf_scatterv(s, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root) &
        bind(C, name="pgf_scatterv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      integer(c_size_t), intent(in) :: sendcounts(:), displs(:)
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, root
      integer(c_int) :: pgf_scatterv
    end function pgf_scatterv

    function pgf_iallgatherv(s, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, work) &
        bind(C, name="pgf_iallgatherv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      integer(c_long_long), value :: sendcount
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
      integer(c_int), value :: dtype
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_iallgatherv
    end function pgf_iallgatherv

    function pgf_ireduce_scatterv(s, sendbuf, recvbuf, recvcounts, dtype, op, work) &
        bind(C, name="pgf_ireduce_scatterv")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:)
      integer(c_int), value :: dtype, op
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ireduce_scatterv
    end function pgf_ireduce_scatterv

    function pgf_ialltoallv(s, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, work) &
        bind(C, name="pgf_ialltoallv")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
      integer(c_int), value :: dtype
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ialltoallv
    end function pgf_ialltoallv

    function pgf_igatherv(s, sendbuf, sendcount, recvbuf, recvcounts, displs, dtype, root, work) &
        bind(C, name="pgf_igatherv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      integer(c_long_long), value :: sendcount
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_size_t), intent(in) :: recvcounts(:), displs(:)
      integer(c_int), value :: dtype, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_igatherv
    end function pgf_igatherv

    function pgf_iscatterv(s, sendbuf, sendcounts, displs, recvbuf, recvcount, dtype, root, work) &
        bind(C, name="pgf_iscatterv")
      import :: c_int, c_ptr, c_long_long, c_size_t
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      integer(c_size_t), intent(in) :: sendcounts(:), displs(:)
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_iscatterv
    end function pgf_iscatterv

    function pgf_reduce_scatter(s, sendbuf, recvbuf, recvcount, dtype, op) &
        bind(C, name="pgf_reduce_scatter")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, op
      integer(c_int) :: pgf_reduce_scatter
    end function pgf_reduce_scatter

    function pgf_alltoall(s, sendbuf, recvbuf, count, dtype) bind(C, name="pgf_alltoall")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype
      integer(c_int) :: pgf_alltoall
    end function pgf_alltoall

    function pgf_gather(s, sendbuf, recvbuf, sendcount, dtype, root) bind(C, name="pgf_gather")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: sendcount
      integer(c_int), value :: dtype, root
      integer(c_int) :: pgf_gather
    end function pgf_gather

    function pgf_scatter(s, sendbuf, recvbuf, recvcount, dtype, root) bind(C, name="pgf_scatter")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, root
      integer(c_int) :: pgf_scatter
    end function pgf_scatter

    function pgf_send(s, buf, count, dtype, peer, tag) bind(C, name="pgf_send")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, peer, tag
      integer(c_int) :: pgf_send
    end function pgf_send

    function pgf_recv(s, buf, count, dtype, peer, tag) bind(C, name="pgf_recv")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..) :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, peer, tag
      integer(c_int) :: pgf_recv
    end function pgf_recv

    function pgf_sendrecv(s, sendbuf, sendcount, dest, recvbuf, recvcount, source, dtype, tag) &
        bind(C, name="pgf_sendrecv")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in) :: sendbuf
      integer(c_long_long), value :: sendcount
      integer(c_int), value :: dest
      type(*), dimension(..) :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: source, dtype, tag
      integer(c_int) :: pgf_sendrecv
    end function pgf_sendrecv

    function pgf_iallreduce(s, sendbuf, recvbuf, count, dtype, op, work) &
        bind(C, name="pgf_iallreduce")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, op
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_iallreduce
    end function pgf_iallreduce

    function pgf_ibroadcast(s, buf, count, dtype, root, work) bind(C, name="pgf_ibroadcast")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), asynchronous :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ibroadcast
    end function pgf_ibroadcast

    function pgf_ireduce(s, sendbuf, recvbuf, count, dtype, op, root, work) &
        bind(C, name="pgf_ireduce")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, op, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ireduce
    end function pgf_ireduce

    function pgf_iallgather(s, sendbuf, recvbuf, sendcount, dtype, work) &
        bind(C, name="pgf_iallgather")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: sendcount
      integer(c_int), value :: dtype
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_iallgather
    end function pgf_iallgather

    function pgf_ireduce_scatter(s, sendbuf, recvbuf, recvcount, dtype, op, work) &
        bind(C, name="pgf_ireduce_scatter")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, op
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ireduce_scatter
    end function pgf_ireduce_scatter

    function pgf_ialltoall(s, sendbuf, recvbuf, count, dtype, work) bind(C, name="pgf_ialltoall")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ialltoall
    end function pgf_ialltoall

    function pgf_igather(s, sendbuf, recvbuf, sendcount, dtype, root, work) &
        bind(C, name="pgf_igather")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: sendcount
      integer(c_int), value :: dtype, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_igather
    end function pgf_igather

    function pgf_iscatter(s, sendbuf, recvbuf, recvcount, dtype, root, work) &
        bind(C, name="pgf_iscatter")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: sendbuf
      type(*), dimension(..), asynchronous :: recvbuf
      integer(c_long_long), value :: recvcount
      integer(c_int), value :: dtype, root
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_iscatter
    end function pgf_iscatter

    function pgf_isend(s, buf, count, dtype, peer, tag, work) bind(C, name="pgf_isend")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), intent(in), asynchronous :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, peer, tag
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_isend
    end function pgf_isend

    function pgf_irecv(s, buf, count, dtype, peer, tag, work) bind(C, name="pgf_irecv")
      import :: c_int, c_ptr, c_long_long
      type(c_ptr), value :: s
      type(*), dimension(..), asynchronous :: buf
      integer(c_long_long), value :: count
      integer(c_int), value :: dtype, peer, tag
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_irecv
    end function pgf_irecv

    function pgf_ibarrier(s, work) bind(C, name="pgf_ibarrier")
      import :: c_int, c_ptr
      type(c_ptr), value :: s
      type(c_ptr), intent(out) :: work
      integer(c_int) :: pgf_ibarrier
    end function pgf_ibarrier

    function pgf_work_wait(work, timeout_seconds) bind(C, name="pgf_work_wait")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: work
      real(c_double), value :: timeout_seconds
      integer(c_int) :: pgf_work_wait
    end function pgf_work_wait

    function pgf_work_test(work, done) bind(C, name="pgf_work_test")
      import :: c_int, c_ptr
      type(c_ptr), value :: work
      integer(c_int), intent(out) :: done
      integer(c_int) :: pgf_work_test
    end function pgf_work_test

    function pgf_work_free(work) bind(C, name="pgf_work_free")
      import :: c_int, c_ptr
      type(c_ptr), value :: work
      integer(c_int) :: pgf_work_free
    end function pgf_work_free
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
        status = pgf_strategy_describe(s%handle, buf, capacity)
      else
        status = pgf_backends_list(buf, capacity)
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
    integer(c_int) :: c_major, c_minor, c_patch
    call c_version(c_major, c_minor, c_patch)
    major = c_major
    minor = c_minor
    patch = c_patch
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
    has_comm = 0
    fcomm = 0
    if (present(comm)) then
      has_comm = 1
      fcomm = comm
    end if
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
    call finish(pgf_strategy_split(s%handle, color, key, out%handle), "pg_strategy_split", ierr)
  end subroutine pg_strategy_split

  !> Destroys the strategy (collective); its handle is null afterwards.
  !> A null handle is fine.
  subroutine pg_strategy_destroy(s, ierr)
    type(pg_strategy), intent(inout) :: s
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = pgf_strategy_destroy(s%handle)
    s%handle = c_null_ptr
    call finish(status, "pg_strategy_destroy", ierr)
  end subroutine pg_strategy_destroy

  ! ---- queries (local; a null handle gives "" or -1) -----------------------------------------

  function pg_strategy_backend(s) result(name)
    type(pg_strategy), intent(in) :: s
    character(len=:), allocatable :: name
    name = f_string(c_strategy_backend(s%handle))
  end function pg_strategy_backend

  function pg_strategy_device(s) result(name)
    type(pg_strategy), intent(in) :: s
    character(len=:), allocatable :: name
    name = f_string(c_strategy_device(s%handle))
  end function pg_strategy_device

  integer function pg_strategy_rank(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_rank = c_strategy_rank(s%handle)
  end function pg_strategy_rank

  integer function pg_strategy_size(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_size = c_strategy_size(s%handle)
  end function pg_strategy_size

  integer function pg_strategy_local_rank(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_local_rank = c_strategy_local_rank(s%handle)
  end function pg_strategy_local_rank

  integer function pg_strategy_local_size(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_local_size = c_strategy_local_size(s%handle)
  end function pg_strategy_local_size

  integer function pg_strategy_node_rank(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_node_rank = c_strategy_node_rank(s%handle)
  end function pg_strategy_node_rank

  integer function pg_strategy_node_count(s)
    type(pg_strategy), intent(in) :: s
    pg_strategy_node_count = c_strategy_node_count(s%handle)
  end function pg_strategy_node_count

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
    call finish(pgf_strategy_set_stream(s%handle, cuda_stream), "pg_strategy_set_stream", ierr)
  end subroutine pg_strategy_set_stream

  ! ---- communication buffers (collective) --------------------------------------------------

  !> Frees memory from pg_mem_alloc; ptr is null afterwards.
  subroutine pg_mem_free(s, ptr, ierr)
    type(pg_strategy), intent(in) :: s
    type(c_ptr), intent(inout) :: ptr
    integer, intent(out), optional :: ierr
    integer(c_int) :: status
    status = pgf_mem_free(s%handle, ptr)
    if (status == PG_OK) ptr = c_null_ptr
    call finish(status, "pg_mem_free", ierr)
  end subroutine pg_mem_free

  ! ---- collectives (collective over the strategy) ------------------------------------------

  subroutine pg_barrier(s, ierr)
    type(pg_strategy), intent(in) :: s
    integer, intent(out), optional :: ierr
    call finish(pgf_barrier(s%handle), "pg_barrier", ierr)
  end subroutine pg_barrier

  ! The uneven collectives without a scalar count (the others are in
  ! pgstrategy_counts.inc): count and displacement arrays integer(c_size_t),
  ! one entry per rank, displacements 0-based as in MPI.

  subroutine pg_reduce_scatterv(s, sendbuf, recvbuf, recvcounts, dtype, op, ierr)
    type(pg_strategy), intent(in) :: s
    type(*), dimension(..), intent(in) :: sendbuf
    type(*), dimension(..) :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:)
    integer, intent(in) :: dtype, op
    integer, intent(out), optional :: ierr
    call finish(pgf_reduce_scatterv(s%handle, sendbuf, recvbuf, recvcounts, dtype, op), "pg_reduce_scatterv", ierr)
  end subroutine pg_reduce_scatterv

  subroutine pg_alltoallv(s, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, ierr)
    type(pg_strategy), intent(in) :: s
    type(*), dimension(..), intent(in) :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
    type(*), dimension(..) :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
    integer, intent(in) :: dtype
    integer, intent(out), optional :: ierr
    call finish(pgf_alltoallv(s%handle, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype), &
                "pg_alltoallv", ierr)
  end subroutine pg_alltoallv

  ! ---- nonblocking -------------------------------------------------------------------------
  subroutine pg_ireduce_scatterv(s, sendbuf, recvbuf, recvcounts, dtype, op, work, ierr)
    type(pg_strategy), intent(in) :: s
    type(*), dimension(..), intent(in), asynchronous :: sendbuf
    type(*), dimension(..), asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:)
    integer, intent(in) :: dtype, op
    type(pg_work), intent(out) :: work
    integer, intent(out), optional :: ierr
    call finish(pgf_ireduce_scatterv(s%handle, sendbuf, recvbuf, recvcounts, dtype, op, work%handle), &
                "pg_ireduce_scatterv", ierr)
  end subroutine pg_ireduce_scatterv

  subroutine pg_ialltoallv(s, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, work, ierr)
    type(pg_strategy), intent(in) :: s
    type(*), dimension(..), intent(in), asynchronous :: sendbuf
    integer(c_size_t), intent(in) :: sendcounts(:), sdispls(:)
    type(*), dimension(..), asynchronous :: recvbuf
    integer(c_size_t), intent(in) :: recvcounts(:), rdispls(:)
    integer, intent(in) :: dtype
    type(pg_work), intent(out) :: work
    integer, intent(out), optional :: ierr
    call finish(pgf_ialltoallv(s%handle, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, dtype, &
                               work%handle), "pg_ialltoallv", ierr)
  end subroutine pg_ialltoallv

  subroutine pg_ibarrier(s, work, ierr)
    type(pg_strategy), intent(in) :: s
    type(pg_work), intent(out) :: work
    integer, intent(out), optional :: ierr
    call finish(pgf_ibarrier(s%handle, work%handle), "pg_ibarrier", ierr)
  end subroutine pg_ibarrier

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

  ! ---- the procedures that take a count, for each count kind -------------------------------

#define PGF_COUNT_TYPE integer
#define PGF_NAME PGF_INT
#include "pgstrategy_counts.inc"
#undef PGF_COUNT_TYPE
#undef PGF_NAME

#define PGF_COUNT_TYPE integer(c_size_t)
#define PGF_NAME PGF_CSIZE
#include "pgstrategy_counts.inc"
#undef PGF_COUNT_TYPE
#undef PGF_NAME

end module pgstrategy
