/*
 * pgstrategy_f.c — the C side of the Fortran module (module pgstrategy in
 * pgstrategy.F90). Not a public API: every function here is called only by the
 * module, and is hidden from the library's exported symbols.
 *
 * Fortran buffers arrive as TS 29113 descriptors (CFI_cdesc_t, from the
 * ISO_Fortran_binding.h of the Fortran compiler that builds the module). For
 * each buffer the shim
 *   1. checks that the elements the call reads or writes fit in the bytes the
 *      descriptor describes (count * size of dtype <= elements * elem_len), so
 *      a legacy `a(1,1)` actual (a scalar) with a count above 1 is refused;
 *   2. passes a contiguous buffer's address as is, and packs a non-contiguous
 *      one into a temporary, which is unpacked into the array after an output
 *      call that succeeded;
 *   3. maps "the same array as both buffers" to the C in-place layout of the
 *      call (for allgather, reduce_scatter, gather and scatter the in-place
 *      block is the one of this rank, or of the root).
 *
 * Errors found here never reach the library's pg_last_error(), which has no
 * public setter: the shim keeps its own thread-local message and remembers
 * whether the last failure of this thread came from the shim or from the
 * library. pgf_last_error() returns the message of that last failure.
 */
#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_strategy.h"

#define PGF_INTERNAL __attribute__((visibility("hidden")))

/* ---- last error ---------------------------------------------------------- */

static _Thread_local char shim_message[1024];
static _Thread_local int shim_owns_last_error;

/* Records a failure found by the shim and returns its status. */
static int shim_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int shim_fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(shim_message, sizeof shim_message, fmt, ap);
  va_end(ap);
  shim_owns_last_error = 1;
  return status;
}

/* Passes a library status on; a failure makes pg_last_error() the message. */
static int lib(pg_status status) {
  if (status != PG_OK) shim_owns_last_error = 0;
  return (int)status;
}

PGF_INTERNAL const char *pgf_last_error(void) {
  return shim_owns_last_error ? shim_message : pg_last_error();
}

/* The module calls this when a call fails and the caller passed no ierr. */
PGF_INTERNAL void pgf_abort(int status, const char *call) {
  int initialized = 0, finalized = 0, rank = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "[rank %d] pgstrategy: %s failed with %s: %s\n", rank, call,
          pg_status_name((pg_status)status), pgf_last_error());
  fflush(stderr);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, status);
  exit(status);
}

/* ---- descriptors ------------------------------------------------------------ */

static size_t dtype_size(int dtype) {
  switch (dtype) {
    case PG_INT8: case PG_UINT8: return 1;
    case PG_FLOAT16: case PG_BFLOAT16: return 2;
    case PG_INT32: case PG_UINT32: case PG_FLOAT32: return 4;
    case PG_INT64: case PG_UINT64: case PG_FLOAT64: return 8;
    default: return 0; /* the library refuses it with its own message */
  }
}

static const char *dtype_name(int dtype) {
  static const char *const names[] = {"PG_INT8",    "PG_UINT8",    "PG_INT32",  "PG_UINT32",
                                      "PG_INT64",   "PG_UINT64",   "PG_FLOAT16", "PG_BFLOAT16",
                                      "PG_FLOAT32", "PG_FLOAT64"};
  return dtype >= 0 && dtype < (int)(sizeof names / sizeof names[0]) ? names[dtype] : "dtype";
}

/* Elements the descriptor describes; -1 for an assumed-size array (last extent
 * -1), whose size Fortran does not know. */
static long long element_count(const CFI_cdesc_t *d) {
  long long n = 1;
  for (int r = 0; r < d->rank; ++r) {
    if (d->dim[r].extent < 0) return -1;
    n *= (long long)d->dim[r].extent;
  }
  return n;
}

static int is_contiguous(const CFI_cdesc_t *d) {
  if (element_count(d) == 0) return 1;
  CFI_index_t expected = (CFI_index_t)d->elem_len;
  for (int r = 0; r < d->rank; ++r) {
    if (d->dim[r].extent != 1 && d->dim[r].sm != expected) return 0;
    expected *= d->dim[r].extent;
  }
  return 1;
}

static int same_layout(const CFI_cdesc_t *a, const CFI_cdesc_t *b) {
  if (a->rank != b->rank || a->elem_len != b->elem_len) return 0;
  for (int r = 0; r < a->rank; ++r)
    if (a->dim[r].extent != b->dim[r].extent || a->dim[r].sm != b->dim[r].sm) return 0;
  return 1;
}

/* Copies every element between the (non-contiguous) array and a packed buffer,
 * first index fastest (Fortran array element order). */
static void copy_elements(const CFI_cdesc_t *d, char *packed, int to_packed) {
  long long n = element_count(d);
  CFI_index_t index[CFI_MAX_RANK] = {0};
  char *element = (char *)d->base_addr;
  for (long long k = 0; k < n; ++k) {
    if (to_packed)
      memcpy(packed, element, d->elem_len);
    else
      memcpy(element, packed, d->elem_len);
    packed += d->elem_len;
    for (int r = 0; r < d->rank; ++r) { /* odometer */
      element += d->dim[r].sm;
      if (++index[r] < d->dim[r].extent) break;
      element -= d->dim[r].sm * d->dim[r].extent;
      index[r] = 0;
    }
  }
}

/* One Fortran buffer as the C call sees it. */
typedef struct buffer {
  const CFI_cdesc_t *desc;
  char *ptr;    /* what the C call gets */
  char *temp;   /* packed copy of a non-contiguous array, or NULL */
  int output;   /* the call writes it: unpack after success */
} buffer;

/* `needed` elements of `dtype` must fit; `used` = 0 for a root-only buffer on
 * another rank (the C call gets NULL). Packs a non-contiguous array. */
static int buffer_open(buffer *b, const CFI_cdesc_t *d, const char *call, const char *what,
                       unsigned long long needed, int dtype, int used, int output) {
  b->desc = d;
  b->ptr = NULL;
  b->temp = NULL;
  b->output = output;
  if (!used) return PG_OK;
  long long elements = element_count(d);
  size_t size = dtype_size(dtype);
  if (elements >= 0 && size > 0) {
    unsigned long long capacity = (unsigned long long)elements * d->elem_len;
    unsigned long long bytes = 0;
    if (__builtin_mul_overflow(needed, (unsigned long long)size, &bytes) || bytes > capacity)
      return shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: %s needs %llu elements of %s (%llu bytes) but the array passed "
                       "holds %lld elements of %zu bytes (%llu bytes); pass the whole array "
                       "or a section of at least that size, not a single element",
                       call, what, needed, dtype_name(dtype), needed * (unsigned long long)size,
                       elements, (size_t)d->elem_len, capacity);
  }
  if (is_contiguous(d)) {
    b->ptr = (char *)d->base_addr;
    return PG_OK;
  }
  size_t bytes = (size_t)elements * d->elem_len;
  b->temp = malloc(bytes);
  if (!b->temp)
    return shim_fail(PG_ERR_NO_MEMORY, "%s: no memory to pack the non-contiguous %s (%zu bytes)",
                     call, what, bytes);
  copy_elements(d, b->temp, 1);
  b->ptr = b->temp;
  return PG_OK;
}

/* The second buffer of an in-place call shares the first one's memory. */
static void buffer_share(buffer *b, const buffer *with, size_t offset_bytes) {
  b->desc = with->desc;
  b->ptr = with->ptr ? with->ptr + offset_bytes : NULL;
  b->temp = NULL; /* owned by `with` */
  b->output = 0;
}

/* Unpacks after success, frees the temporary; returns status. */
static int buffer_close(buffer *b, int status) {
  if (b->temp) {
    if (status == PG_OK && b->output) copy_elements(b->desc, b->temp, 0);
    free(b->temp);
    b->temp = NULL;
  }
  return status;
}

/* The same array passed as both buffers: same start, and either both
 * contiguous or the very same elements. Different arrays: 0. The same start
 * with different layouts is refused (status in *refused). */
static int same_array(const CFI_cdesc_t *a, const CFI_cdesc_t *b, const char *call, int *refused) {
  *refused = PG_OK;
  if (a->base_addr != b->base_addr || !a->base_addr) return 0;
  if (same_layout(a, b) || (is_contiguous(a) && is_contiguous(b))) return 1;
  *refused = shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: sendbuf and recvbuf start at the same address but describe "
                       "different non-contiguous elements; for in place pass the same "
                       "array (or section) as both buffers",
                       call);
  return 0;
}

static int check_handle(const pg_strategy *s, const char *call) {
  return s ? PG_OK
           : shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: the strategy is not created (NULL handle); call "
                       "pg_strategy_create first",
                       call);
}

static int check_count(long long count, const char *call, const char *what) {
  return count >= 0 ? PG_OK
                    : shim_fail(PG_ERR_INVALID_ARGUMENT, "%s: %s %lld is negative", call, what,
                                count);
}

/* count * n without overflow (n = group size, at least 1 here). */
static unsigned long long times(long long count, int n) {
  unsigned long long r;
  if (n < 1) n = 1;
  if (__builtin_mul_overflow((unsigned long long)count, (unsigned long long)n, &r))
    return ~0ull;
  return r;
}

/* ---- lifecycle ------------------------------------------------------------- */

PGF_INTERNAL int pgf_strategy_create(const char *device, const char *backend, int has_comm,
                                     MPI_Fint comm, pg_strategy **out) {
  *out = NULL;
  if (has_comm) return lib(pg_strategy_create_fcomm(device, backend, comm, out));
  return lib(pg_strategy_create(device, backend, out));
}

PGF_INTERNAL int pgf_strategy_split(pg_strategy *s, int color, int key, pg_strategy **out) {
  *out = NULL;
  return lib(pg_strategy_split(s, color, key, out));
}

PGF_INTERNAL int pgf_strategy_destroy(pg_strategy *s) { return lib(pg_strategy_destroy(s)); }

PGF_INTERNAL int pgf_strategy_describe(const pg_strategy *s, char *buf, size_t len) {
  return lib(pg_strategy_describe(s, buf, len));
}

PGF_INTERNAL int pgf_backends_list(char *buf, size_t len) { return lib(pg_backends_list(buf, len)); }

PGF_INTERNAL const char *pgf_default_backend(const char *device) {
  const char *name = pg_default_backend(device);
  if (!name) shim_owns_last_error = 0;
  return name;
}

PGF_INTERNAL int pgf_barrier(pg_strategy *s) {
  int st = check_handle(s, "pg_barrier");
  return st != PG_OK ? st : lib(pg_barrier(s));
}

/* ---- collectives ------------------------------------------------------------ */

/* Validation common to every buffer call. */
#define PGF_START(call)                                  \
  const char *call_ = call;                              \
  int st_ = check_handle(s, call_);                      \
  if (st_ != PG_OK) return st_;

#define PGF_COUNT(count, what)                           \
  st_ = check_count(count, call_, what);                 \
  if (st_ != PG_OK) return st_;

PGF_INTERNAL int pgf_allreduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                               long long count, int dtype, int op) {
  PGF_START("pg_allreduce")
  PGF_COUNT(count, "count")
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = same_array(send, recv, call_, &refused);
  if (refused) return refused;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", (unsigned long long)count, dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  if (in_place) {
    buffer_share(&sb, &rb, 0);
  } else {
    st_ = buffer_open(&sb, send, call_, "sendbuf", (unsigned long long)count, dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_allreduce(s, sb.ptr, rb.ptr, (size_t)count, (pg_dtype)dtype, (pg_op)op));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}

PGF_INTERNAL int pgf_broadcast(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                               int root) {
  PGF_START("pg_broadcast")
  PGF_COUNT(count, "count")
  buffer b;
  st_ = buffer_open(&b, buf, call_, "buf", (unsigned long long)count, dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  st_ = lib(pg_broadcast(s, b.ptr, (size_t)count, (pg_dtype)dtype, root));
  return buffer_close(&b, st_);
}

PGF_INTERNAL int pgf_reduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                            long long count, int dtype, int op, int root) {
  PGF_START("pg_reduce")
  PGF_COUNT(count, "count")
  int at_root = pg_strategy_rank(s) == root;
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = at_root && same_array(send, recv, call_, &refused);
  if (at_root && refused) return refused;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", (unsigned long long)count, dtype, at_root, 1);
  if (st_ != PG_OK) return st_;
  if (in_place) {
    buffer_share(&sb, &rb, 0);
  } else {
    st_ = buffer_open(&sb, send, call_, "sendbuf", (unsigned long long)count, dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_reduce(s, sb.ptr, rb.ptr, (size_t)count, (pg_dtype)dtype, (pg_op)op, root));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}

PGF_INTERNAL int pgf_allgather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                               long long sendcount, int dtype) {
  PGF_START("pg_allgather")
  PGF_COUNT(sendcount, "sendcount")
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = same_array(send, recv, call_, &refused);
  if (refused) return refused;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", times(sendcount, size), dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  if (in_place) { /* this rank's block of recvbuf already holds its contribution */
    buffer_share(&sb, &rb, (size_t)rank * (size_t)sendcount * dtype_size(dtype));
  } else {
    st_ = buffer_open(&sb, send, call_, "sendbuf", (unsigned long long)sendcount, dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_allgather(s, sb.ptr, rb.ptr, (size_t)sendcount, (pg_dtype)dtype));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}

PGF_INTERNAL int pgf_reduce_scatter(pg_strategy *s, const CFI_cdesc_t *send,
                                    const CFI_cdesc_t *recv, long long recvcount, int dtype,
                                    int op) {
  PGF_START("pg_reduce_scatter")
  PGF_COUNT(recvcount, "recvcount")
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = same_array(send, recv, call_, &refused);
  if (refused) return refused;
  if (in_place) { /* the result lands in this rank's block of the array */
    st_ = buffer_open(&sb, send, call_, "sendbuf", times(recvcount, size), dtype, 1, 1);
    if (st_ != PG_OK) return st_;
    buffer_share(&rb, &sb, (size_t)rank * (size_t)recvcount * dtype_size(dtype));
  } else {
    st_ = buffer_open(&rb, recv, call_, "recvbuf", (unsigned long long)recvcount, dtype, 1, 1);
    if (st_ != PG_OK) return st_;
    st_ = buffer_open(&sb, send, call_, "sendbuf", times(recvcount, size), dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_reduce_scatter(s, sb.ptr, rb.ptr, (size_t)recvcount, (pg_dtype)dtype, (pg_op)op));
  buffer_close(&rb, st_);
  return buffer_close(&sb, st_);
}

PGF_INTERNAL int pgf_alltoall(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                              long long count, int dtype) {
  PGF_START("pg_alltoall")
  PGF_COUNT(count, "count")
  int size = pg_strategy_size(s);
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = same_array(send, recv, call_, &refused);
  if (refused) return refused;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", times(count, size), dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  if (in_place) {
    buffer_share(&sb, &rb, 0);
  } else {
    st_ = buffer_open(&sb, send, call_, "sendbuf", times(count, size), dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_alltoall(s, sb.ptr, rb.ptr, (size_t)count, (pg_dtype)dtype));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}

PGF_INTERNAL int pgf_gather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                            long long sendcount, int dtype, int root) {
  PGF_START("pg_gather")
  PGF_COUNT(sendcount, "sendcount")
  int at_root = pg_strategy_rank(s) == root, size = pg_strategy_size(s);
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = at_root && same_array(send, recv, call_, &refused);
  if (at_root && refused) return refused;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", times(sendcount, size), dtype, at_root, 1);
  if (st_ != PG_OK) return st_;
  if (in_place) { /* the root's block of recvbuf already holds its contribution */
    buffer_share(&sb, &rb, (size_t)root * (size_t)sendcount * dtype_size(dtype));
  } else {
    st_ = buffer_open(&sb, send, call_, "sendbuf", (unsigned long long)sendcount, dtype, 1, 0);
    if (st_ != PG_OK) return buffer_close(&rb, st_);
  }
  st_ = lib(pg_gather(s, sb.ptr, rb.ptr, (size_t)sendcount, (pg_dtype)dtype, root));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}

PGF_INTERNAL int pgf_scatter(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                             long long recvcount, int dtype, int root) {
  PGF_START("pg_scatter")
  PGF_COUNT(recvcount, "recvcount")
  int at_root = pg_strategy_rank(s) == root, size = pg_strategy_size(s);
  buffer sb, rb;
  int refused = PG_OK;
  int in_place = at_root && same_array(send, recv, call_, &refused);
  if (at_root && refused) return refused;
  st_ = buffer_open(&sb, send, call_, "sendbuf", times(recvcount, size), dtype, at_root,
                    in_place);
  if (st_ != PG_OK) return st_;
  if (in_place) { /* the root's block stays where it is */
    buffer_share(&rb, &sb, (size_t)root * (size_t)recvcount * dtype_size(dtype));
  } else {
    st_ = buffer_open(&rb, recv, call_, "recvbuf", (unsigned long long)recvcount, dtype, 1, 1);
    if (st_ != PG_OK) return buffer_close(&sb, st_);
  }
  st_ = lib(pg_scatter(s, sb.ptr, rb.ptr, (size_t)recvcount, (pg_dtype)dtype, root));
  buffer_close(&rb, st_);
  return buffer_close(&sb, st_);
}

PGF_INTERNAL int pgf_send(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                          int peer, int tag) {
  PGF_START("pg_send")
  PGF_COUNT(count, "count")
  buffer b;
  st_ = buffer_open(&b, buf, call_, "buf", (unsigned long long)count, dtype, 1, 0);
  if (st_ != PG_OK) return st_;
  st_ = lib(pg_send(s, b.ptr, (size_t)count, (pg_dtype)dtype, peer, tag));
  return buffer_close(&b, st_);
}

PGF_INTERNAL int pgf_recv(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                          int peer, int tag) {
  PGF_START("pg_recv")
  PGF_COUNT(count, "count")
  buffer b;
  st_ = buffer_open(&b, buf, call_, "buf", (unsigned long long)count, dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  st_ = lib(pg_recv(s, b.ptr, (size_t)count, (pg_dtype)dtype, peer, tag));
  return buffer_close(&b, st_);
}

PGF_INTERNAL int pgf_sendrecv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount,
                              int dest, const CFI_cdesc_t *recv, long long recvcount, int source,
                              int dtype, int tag) {
  PGF_START("pg_sendrecv")
  PGF_COUNT(sendcount, "sendcount")
  PGF_COUNT(recvcount, "recvcount")
  buffer sb, rb;
  st_ = buffer_open(&rb, recv, call_, "recvbuf", (unsigned long long)recvcount, dtype, 1, 1);
  if (st_ != PG_OK) return st_;
  st_ = buffer_open(&sb, send, call_, "sendbuf", (unsigned long long)sendcount, dtype, 1, 0);
  if (st_ != PG_OK) return buffer_close(&rb, st_);
  st_ = lib(pg_sendrecv(s, sb.ptr, (size_t)sendcount, dest, rb.ptr, (size_t)recvcount, source,
                        (pg_dtype)dtype, tag));
  buffer_close(&sb, st_);
  return buffer_close(&rb, st_);
}
