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
 * A nonblocking call keeps its temporaries in its work (pgf_work), and unpacks
 * and frees them when the work is found finished.
 *
 * Errors found here never reach the library's pg_last_error(), which has no
 * public setter: the shim keeps its own thread-local message and remembers
 * whether the last failure of this thread came from the shim or from the
 * library. pgf_last_error() returns the message of that last failure.
 */
#include <ISO_Fortran_binding.h>
#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_strategy.h"
#include "util/in_place.h"

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

/* Packing copies with the CPU: only CPU strategies take packed buffers (CUDA
 * strategies take device memory, which the host cannot copy). */
static int host_memory(const pg_strategy *s) {
  const char *device = pg_strategy_device(s);
  return device && strcmp(device, "cpu") == 0;
}

/* `needed` elements of `dtype` must fit; `used` = 0 for a root-only buffer on
 * another rank (the C call gets NULL). Packs a non-contiguous array. */
static int buffer_open(buffer *b, const pg_strategy *s, const CFI_cdesc_t *d, const char *call,
                       const char *what, unsigned long long needed, pg_dtype dtype, int used,
                       int output) {
  b->desc = d;
  b->ptr = NULL;
  b->temp = NULL;
  b->output = output;
  if (!used) return PG_OK;
  long long elements = element_count(d);
  size_t size = pg_dtype_size(dtype); /* 0 outside the enum: the library refuses it */
  if (elements >= 0 && size > 0) {
    unsigned long long capacity = (unsigned long long)elements * d->elem_len;
    unsigned long long bytes = 0;
    if (needed == ~0ull || __builtin_mul_overflow(needed, (unsigned long long)size, &bytes))
      return shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: the size of %s (count times the number of ranks, in elements of "
                       "%s) overflows; the array passed holds %llu bytes",
                       call, what, pg_dtype_name(dtype), capacity);
    if (bytes > capacity)
      return shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: %s needs %llu elements of %s (%llu bytes) but the array passed "
                       "holds %lld elements of %zu bytes (%llu bytes); pass the whole array "
                       "or a section of at least that size, not a single element",
                       call, what, needed, pg_dtype_name(dtype), bytes, elements,
                       (size_t)d->elem_len, capacity);
  }
  if (is_contiguous(d)) {
    b->ptr = (char *)d->base_addr;
    return PG_OK;
  }
  if (!host_memory(s))
    return shim_fail(PG_ERR_INVALID_ARGUMENT,
                     "%s: %s is a non-contiguous section, which is packed in host memory; a "
                     "strategy for device '%s' needs contiguous device memory",
                     call, what, pg_strategy_device(s));
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
 * contiguous or the very same elements. Anything else, even an overlapping
 * section of the same array, is two buffers: each is packed into its own
 * temporary, so the result is right either way. */
static int same_array(const CFI_cdesc_t *a, const CFI_cdesc_t *b) {
  if (a->base_addr != b->base_addr || !a->base_addr) return 0;
  return same_layout(a, b) || (is_contiguous(a) && is_contiguous(b));
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

_Static_assert(sizeof(MPI_Fint) == sizeof(int),
               "the module passes Fortran MPI handles as integer(c_int)");

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

PGF_INTERNAL int pgf_backends_list(char *buf, size_t len) {
  return lib(pg_backends_list(buf, len));
}

PGF_INTERNAL const char *pgf_default_backend(const char *device) {
  const char *name = pg_default_backend(device);
  if (!name) shim_owns_last_error = 0;
  return name;
}

PGF_INTERNAL int pgf_strategy_set_stream(pg_strategy *s, void *stream) {
  return lib(pg_strategy_set_stream(s, stream));
}

PGF_INTERNAL int pgf_mem_alloc(pg_strategy *s, long long bytes, void **ptr) {
  *ptr = NULL;
  int st = check_count(bytes, "pg_mem_alloc", "bytes");
  return st != PG_OK ? st : lib(pg_mem_alloc(s, (size_t)bytes, ptr));
}

PGF_INTERNAL int pgf_mem_free(pg_strategy *s, void *ptr) { return lib(pg_mem_free(s, ptr)); }

PGF_INTERNAL int pgf_barrier(pg_strategy *s) {
  int st = check_handle(s, "pg_barrier");
  return st != PG_OK ? st : lib(pg_barrier(s));
}

/* ---- collectives ------------------------------------------------------------ */

/* The buffers of one call, as the C call sees them. `prepare_*` checks and
 * opens them (freeing what it opened when it fails); the blocking entry runs
 * the C call and closes them, the nonblocking one hands them to its work. */
typedef struct args {
  buffer send, recv;
} args;

static void args_init(args *a) {
  memset(a, 0, sizeof *a);
}

static int args_close(args *a, int status) {
  buffer_close(&a->send, status);
  return buffer_close(&a->recv, status);
}

/* How a call's two buffers relate, in elements: their sizes, whether each is
 * used on this rank (root-only buffers are not elsewhere), and, in place, which
 * one holds the other and where. */
typedef struct pair_layout {
  unsigned long long send_count, recv_count;
  int send_used, recv_used;
  int in_place;
  int recv_holds_send; /* in place: sendbuf lies inside recvbuf (else the reverse) */
  size_t offset;       /* in place: the inner buffer's first element in the outer one */
} pair_layout;

/* The layout of a call whose in-place form is `ip` (util/in_place.h): in place
 * when the same array is passed as both buffers. */
static pair_layout layout_of(unsigned long long send_count, unsigned long long recv_count, int send_used,
                             int recv_used, pg_in_place ip, const CFI_cdesc_t *send, const CFI_cdesc_t *recv) {
  pair_layout l = {send_count, recv_count, send_used, recv_used,
                   ip.form != PG_IN_PLACE_NONE && same_array(send, recv), ip.form == PG_IN_PLACE_SEND_IN_RECV,
                   ip.offset};
  return l;
}

static int prepare_pair(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                        const CFI_cdesc_t *recv, long long count, const char *count_name,
                        pg_dtype dtype, pair_layout l, args *a) {
  args_init(a);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(count, call, count_name);
  if (st != PG_OK) return st;
  const size_t offset_bytes = l.offset * pg_dtype_size(dtype);
  if (l.in_place) { /* one array: opened once, written back on return */
    if (l.recv_holds_send) {
      st = buffer_open(&a->recv, s, recv, call, "recvbuf", l.recv_count, dtype, l.recv_used, 1);
      if (st == PG_OK) buffer_share(&a->send, &a->recv, offset_bytes);
    } else {
      st = buffer_open(&a->send, s, send, call, "sendbuf", l.send_count, dtype, l.send_used, 1);
      if (st == PG_OK) buffer_share(&a->recv, &a->send, offset_bytes);
    }
    return st;
  }
  st = buffer_open(&a->recv, s, recv, call, "recvbuf", l.recv_count, dtype, l.recv_used, 1);
  if (st != PG_OK) return st;
  st = buffer_open(&a->send, s, send, call, "sendbuf", l.send_count, dtype, l.send_used, 0);
  return st == PG_OK ? st : args_close(a, st);
}

static int prepare_allreduce(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                             const CFI_cdesc_t *recv, long long count, int dtype, args *a) {
  pair_layout l = layout_of((unsigned long long)count, (unsigned long long)count, 1, 1, pg_in_place_allreduce(),
                            send, recv);
  return prepare_pair(s, call, send, recv, count, "count", dtype, l, a);
}

static int prepare_broadcast(pg_strategy *s, const char *call, const CFI_cdesc_t *buf,
                             long long count, int dtype, args *a) {
  args_init(a);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(count, call, "count");
  if (st != PG_OK) return st;
  return buffer_open(&a->recv, s, buf, call, "buf", (unsigned long long)count, dtype, 1, 1);
}

static int prepare_reduce(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                          const CFI_cdesc_t *recv, long long count, int dtype, int root, args *a) {
  int rank = pg_strategy_rank(s);
  pair_layout l = layout_of((unsigned long long)count, (unsigned long long)count, 1, rank == root,
                            pg_in_place_reduce(rank, root), send, recv);
  return prepare_pair(s, call, send, recv, count, "count", dtype, l, a);
}

/* In place: this rank's block of recvbuf already holds its contribution. */
static int prepare_allgather(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                             const CFI_cdesc_t *recv, long long sendcount, int dtype, args *a) {
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  pair_layout l = layout_of((unsigned long long)sendcount, times(sendcount, size), 1, 1,
                            pg_in_place_allgather(rank, (size_t)sendcount), send, recv);
  return prepare_pair(s, call, send, recv, sendcount, "sendcount", dtype, l, a);
}

/* In place: the result lands in this rank's block of the array. */
static int prepare_reduce_scatter(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                                  const CFI_cdesc_t *recv, long long recvcount, int dtype,
                                  args *a) {
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  pair_layout l = layout_of(times(recvcount, size), (unsigned long long)recvcount, 1, 1,
                            pg_in_place_reduce_scatter(rank, (size_t)recvcount), send, recv);
  return prepare_pair(s, call, send, recv, recvcount, "recvcount", dtype, l, a);
}

static int prepare_alltoall(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                            const CFI_cdesc_t *recv, long long count, int dtype, args *a) {
  int size = pg_strategy_size(s);
  pair_layout l = layout_of(times(count, size), times(count, size), 1, 1, pg_in_place_alltoall(), send, recv);
  return prepare_pair(s, call, send, recv, count, "count", dtype, l, a);
}

/* In place at the root: the root's block of recvbuf already holds its contribution. */
static int prepare_gather(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                          const CFI_cdesc_t *recv, long long sendcount, int dtype, int root,
                          args *a) {
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  pair_layout l = layout_of((unsigned long long)sendcount, times(sendcount, size), 1, rank == root,
                            pg_in_place_gather(rank, root, (size_t)sendcount), send, recv);
  return prepare_pair(s, call, send, recv, sendcount, "sendcount", dtype, l, a);
}

/* In place at the root: the root's block of sendbuf stays where it is. */
static int prepare_scatter(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                           const CFI_cdesc_t *recv, long long recvcount, int dtype, int root,
                           args *a) {
  int rank = pg_strategy_rank(s), size = pg_strategy_size(s);
  pair_layout l = layout_of(times(recvcount, size), (unsigned long long)recvcount, rank == root, 1,
                            pg_in_place_scatter(rank, root, (size_t)recvcount), send, recv);
  return prepare_pair(s, call, send, recv, recvcount, "recvcount", dtype, l, a);
}

/* ---- the uneven collectives ------------------------------------------------------ */

/* A count or displacement array of an uneven call: integer(c_size_t), one
 * entry per rank (0-based displacements, as in MPI), copied into *out (the
 * library copies it again, so the copy is freed once the call has been made);
 * NULL where the call does not read it on this rank. */
static int counts_open(size_t **out, const pg_strategy *s, const CFI_cdesc_t *d, const char *call,
                       const char *what, int used) {
  *out = NULL;
  if (!used) return PG_OK;
  const int p = pg_strategy_size(s);
  const long long n = element_count(d);
  if (d->rank != 1 || n < p)
    return shim_fail(PG_ERR_INVALID_ARGUMENT, "%s: %s has %lld entries; expected one per rank (%d)", call,
                     what, n, p);
  size_t *v = malloc((size_t)(p > 0 ? p : 1) * sizeof *v);
  if (!v) return shim_fail(PG_ERR_NO_MEMORY, "%s: no memory to copy %s", call, what);
  const char *at = (const char *)d->base_addr;
  for (int r = 0; r < p; ++r, at += d->dim[0].sm) memcpy(&v[r], at, sizeof v[r]);
  *out = v;
  return PG_OK;
}

/* The elements a buffer needs for the blocks `counts` and `displs` describe;
 * ~0ull when that overflows. */
static unsigned long long blocks_extent(const size_t *counts, const size_t *displs, int p) {
  unsigned long long end = 0, e = 0;
  for (int r = 0; r < p; ++r) {
    if (counts[r] == 0) continue;
    if (__builtin_add_overflow((unsigned long long)displs[r], (unsigned long long)counts[r], &e)) return ~0ull;
    if (e > end) end = e;
  }
  return end;
}

static unsigned long long counts_sum(const size_t *counts, int p) {
  unsigned long long total = 0;
  for (int r = 0; r < p; ++r)
    if (__builtin_add_overflow(total, (unsigned long long)counts[r], &total)) return ~0ull;
  return total;
}

/* The buffers and arrays of one uneven call. */
typedef struct vargs {
  args a;
  size_t *sc, *sd, *rc, *rd; /* sendcounts, send displacements, recvcounts, receive displacements */
} vargs;

static void vargs_init(vargs *v) {
  args_init(&v->a);
  v->sc = v->sd = v->rc = v->rd = NULL;
}

static void vargs_free_counts(vargs *v) {
  free(v->sc), free(v->sd), free(v->rc), free(v->rd);
  v->sc = v->sd = v->rc = v->rd = NULL;
}

/* The arrays and their extent: a shim message for blocks beyond size_t. */
static int extent_fits(unsigned long long extent, const char *call, const char *what) {
  return extent != ~0ull ? PG_OK
                         : shim_fail(PG_ERR_INVALID_ARGUMENT,
                                     "%s: the blocks of %s end beyond the largest size_t", call, what);
}

/* Opens the pair of buffers once the arrays are read; frees the arrays on failure. */
static int vargs_pair(vargs *v, pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                      const CFI_cdesc_t *recv, long long count, const char *count_name, int dtype,
                      pair_layout l) {
  int st = prepare_pair(s, call, send, recv, count, count_name, dtype, l, &v->a);
  if (st != PG_OK) vargs_free_counts(v);
  return st;
}

static int prepare_allgatherv(pg_strategy *s, const char *call, const CFI_cdesc_t *send, long long sendcount,
                              const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts,
                              const CFI_cdesc_t *displs, int dtype, vargs *v) {
  vargs_init(v);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(sendcount, call, "sendcount");
  if (st == PG_OK) st = counts_open(&v->rc, s, recvcounts, call, "recvcounts", 1);
  if (st == PG_OK) st = counts_open(&v->rd, s, displs, call, "displs", 1);
  const unsigned long long extent = st == PG_OK ? blocks_extent(v->rc, v->rd, pg_strategy_size(s)) : 0;
  if (st == PG_OK) st = extent_fits(extent, call, "recvcounts and displs");
  if (st != PG_OK) {
    vargs_free_counts(v);
    return st;
  }
  const int rank = pg_strategy_rank(s);
  pair_layout l = layout_of((unsigned long long)sendcount, extent, 1, 1, pg_in_place_allgatherv(rank, v->rd), send,
                            recv);
  return vargs_pair(v, s, call, send, recv, sendcount, "sendcount", dtype, l);
}

static int prepare_reduce_scatterv(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                                   const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts, int dtype, vargs *v) {
  vargs_init(v);
  int st = check_handle(s, call);
  if (st == PG_OK) st = counts_open(&v->rc, s, recvcounts, call, "recvcounts", 1);
  const unsigned long long total = st == PG_OK ? counts_sum(v->rc, pg_strategy_size(s)) : 0;
  if (st == PG_OK) st = extent_fits(total, call, "recvcounts");
  if (st != PG_OK) {
    vargs_free_counts(v);
    return st;
  }
  const int rank = pg_strategy_rank(s);
  const size_t mine = v->rc[rank];
  pair_layout l = layout_of(total, (unsigned long long)mine, 1, 1, pg_in_place_reduce_scatterv(rank, v->rc), send,
                            recv);
  return vargs_pair(v, s, call, send, recv, (long long)mine, "recvcounts(rank+1)", dtype, l);
}

/* In place (the same array): it holds both the blocks sent and the blocks received. */
static int prepare_alltoallv(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                             const CFI_cdesc_t *sendcounts, const CFI_cdesc_t *sdispls, const CFI_cdesc_t *recv,
                             const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *rdispls, int dtype, vargs *v) {
  vargs_init(v);
  int st = check_handle(s, call);
  if (st == PG_OK) st = counts_open(&v->sc, s, sendcounts, call, "sendcounts", 1);
  if (st == PG_OK) st = counts_open(&v->sd, s, sdispls, call, "sdispls", 1);
  if (st == PG_OK) st = counts_open(&v->rc, s, recvcounts, call, "recvcounts", 1);
  if (st == PG_OK) st = counts_open(&v->rd, s, rdispls, call, "rdispls", 1);
  const int p = st == PG_OK ? pg_strategy_size(s) : 0;
  unsigned long long sx = st == PG_OK ? blocks_extent(v->sc, v->sd, p) : 0;
  unsigned long long rx = st == PG_OK ? blocks_extent(v->rc, v->rd, p) : 0;
  if (st == PG_OK) st = extent_fits(sx, call, "sendcounts and sdispls");
  if (st == PG_OK) st = extent_fits(rx, call, "recvcounts and rdispls");
  if (st != PG_OK) {
    vargs_free_counts(v);
    return st;
  }
  if (same_array(send, recv)) sx = rx = sx > rx ? sx : rx;
  pair_layout l = layout_of(sx, rx, 1, 1, pg_in_place_alltoallv(), send, recv);
  return vargs_pair(v, s, call, send, recv, 0, "count", dtype, l);
}

/* The arrays and recvbuf are read at the root only. */
static int prepare_gatherv(pg_strategy *s, const char *call, const CFI_cdesc_t *send, long long sendcount,
                           const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *displs,
                           int dtype, int root, vargs *v) {
  vargs_init(v);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(sendcount, call, "sendcount");
  const int rank = s ? pg_strategy_rank(s) : -1, at_root = rank == root;
  if (st == PG_OK) st = counts_open(&v->rc, s, recvcounts, call, "recvcounts", at_root);
  if (st == PG_OK) st = counts_open(&v->rd, s, displs, call, "displs", at_root);
  const unsigned long long extent = st == PG_OK && at_root ? blocks_extent(v->rc, v->rd, pg_strategy_size(s)) : 0;
  if (st == PG_OK) st = extent_fits(extent, call, "recvcounts and displs");
  if (st != PG_OK) {
    vargs_free_counts(v);
    return st;
  }
  pair_layout l = layout_of((unsigned long long)sendcount, extent, 1, at_root,
                            pg_in_place_gatherv(rank, root, v->rd), send, recv);
  return vargs_pair(v, s, call, send, recv, sendcount, "sendcount", dtype, l);
}

/* The arrays and sendbuf are read at the root only. */
static int prepare_scatterv(pg_strategy *s, const char *call, const CFI_cdesc_t *send, const CFI_cdesc_t *sendcounts,
                            const CFI_cdesc_t *displs, const CFI_cdesc_t *recv, long long recvcount, int dtype,
                            int root, vargs *v) {
  vargs_init(v);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(recvcount, call, "recvcount");
  const int rank = s ? pg_strategy_rank(s) : -1, at_root = rank == root;
  if (st == PG_OK) st = counts_open(&v->sc, s, sendcounts, call, "sendcounts", at_root);
  if (st == PG_OK) st = counts_open(&v->sd, s, displs, call, "displs", at_root);
  const unsigned long long extent = st == PG_OK && at_root ? blocks_extent(v->sc, v->sd, pg_strategy_size(s)) : 0;
  if (st == PG_OK) st = extent_fits(extent, call, "sendcounts and displs");
  if (st != PG_OK) {
    vargs_free_counts(v);
    return st;
  }
  pair_layout l = layout_of(extent, (unsigned long long)recvcount, at_root, 1,
                            pg_in_place_scatterv(rank, root, v->sd), send, recv);
  return vargs_pair(v, s, call, send, recv, recvcount, "recvcount", dtype, l);
}

/* One buffer of a point-to-point call: input (send) or output (recv). */
static int prepare_p2p(pg_strategy *s, const char *call, const CFI_cdesc_t *buf, long long count,
                       int dtype, int output, args *a) {
  args_init(a);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(count, call, "count");
  if (st != PG_OK) return st;
  return buffer_open(output ? &a->recv : &a->send, s, buf, call, "buf", (unsigned long long)count,
                     dtype, 1, output);
}

static int prepare_sendrecv(pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                            long long sendcount, const CFI_cdesc_t *recv, long long recvcount,
                            int dtype, args *a) {
  args_init(a);
  int st = check_handle(s, call);
  if (st == PG_OK) st = check_count(sendcount, call, "sendcount");
  if (st == PG_OK) st = check_count(recvcount, call, "recvcount");
  if (st != PG_OK) return st;
  st = buffer_open(&a->recv, s, recv, call, "recvbuf", (unsigned long long)recvcount, dtype, 1, 1);
  if (st != PG_OK) return st;
  st = buffer_open(&a->send, s, send, call, "sendbuf", (unsigned long long)sendcount, dtype, 1, 0);
  return st == PG_OK ? st : args_close(a, st);
}

/* After the shim refused a call on a live strategy, the library still sees the
 * call, with NULL buffers: it fails it at once on this rank or, under
 * PGS_DEBUG=detail, on every rank together, as it does with its own argument
 * errors (and its sequence numbers stay in step). The shim's status and
 * message stand. A zero-count call the library accepted is completed. */
static int forward_refusal(int status, pg_status library_status, pg_work *work) {
  if (library_status == PG_OK && work) {
    pg_work_wait(work, -1);
    pg_work_free(work);
  }
  shim_owns_last_error = 1;
  return status;
}

/* Blocking entries: prepare, call, close. */
#define PGF_BLOCKING(prepare_call, c_call)                \
  args a;                                                 \
  int st = (prepare_call);                                \
  if (st != PG_OK) {                                      \
    if (!s) return st;                                    \
    a.send.ptr = a.recv.ptr = NULL;                       \
    return forward_refusal(st, c_call, NULL);             \
  }                                                       \
  return args_close(&a, lib(c_call));

PGF_INTERNAL int pgf_allreduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                               long long count, int dtype, int op) {
  PGF_BLOCKING(prepare_allreduce(s, "pg_allreduce", send, recv, count, dtype, &a),
               pg_allreduce(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype, (pg_op)op))
}

PGF_INTERNAL int pgf_broadcast(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                               int root) {
  PGF_BLOCKING(prepare_broadcast(s, "pg_broadcast", buf, count, dtype, &a),
               pg_broadcast(s, a.recv.ptr, (size_t)count, (pg_dtype)dtype, root))
}

PGF_INTERNAL int pgf_reduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                            long long count, int dtype, int op, int root) {
  PGF_BLOCKING(prepare_reduce(s, "pg_reduce", send, recv, count, dtype, root, &a),
               pg_reduce(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype, (pg_op)op,
                         root))
}

PGF_INTERNAL int pgf_allgather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                               long long sendcount, int dtype) {
  PGF_BLOCKING(prepare_allgather(s, "pg_allgather", send, recv, sendcount, dtype, &a),
               pg_allgather(s, a.send.ptr, a.recv.ptr, (size_t)sendcount, (pg_dtype)dtype))
}

PGF_INTERNAL int pgf_reduce_scatter(pg_strategy *s, const CFI_cdesc_t *send,
                                    const CFI_cdesc_t *recv, long long recvcount, int dtype,
                                    int op) {
  PGF_BLOCKING(prepare_reduce_scatter(s, "pg_reduce_scatter", send, recv, recvcount, dtype, &a),
               pg_reduce_scatter(s, a.send.ptr, a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype,
                                 (pg_op)op))
}

PGF_INTERNAL int pgf_alltoall(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                              long long count, int dtype) {
  PGF_BLOCKING(prepare_alltoall(s, "pg_alltoall", send, recv, count, dtype, &a),
               pg_alltoall(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype))
}

PGF_INTERNAL int pgf_gather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                            long long sendcount, int dtype, int root) {
  PGF_BLOCKING(prepare_gather(s, "pg_gather", send, recv, sendcount, dtype, root, &a),
               pg_gather(s, a.send.ptr, a.recv.ptr, (size_t)sendcount, (pg_dtype)dtype, root))
}

PGF_INTERNAL int pgf_scatter(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                             long long recvcount, int dtype, int root) {
  PGF_BLOCKING(prepare_scatter(s, "pg_scatter", send, recv, recvcount, dtype, root, &a),
               pg_scatter(s, a.send.ptr, a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype, root))
}

PGF_INTERNAL int pgf_send(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                          int peer, int tag) {
  PGF_BLOCKING(prepare_p2p(s, "pg_send", buf, count, dtype, 0, &a),
               pg_send(s, a.send.ptr, (size_t)count, (pg_dtype)dtype, peer, tag))
}

PGF_INTERNAL int pgf_recv(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                          int peer, int tag) {
  PGF_BLOCKING(prepare_p2p(s, "pg_recv", buf, count, dtype, 1, &a),
               pg_recv(s, a.recv.ptr, (size_t)count, (pg_dtype)dtype, peer, tag))
}

PGF_INTERNAL int pgf_sendrecv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount,
                              int dest, const CFI_cdesc_t *recv, long long recvcount, int source,
                              int dtype, int tag) {
  PGF_BLOCKING(prepare_sendrecv(s, "pg_sendrecv", send, sendcount, recv, recvcount, dtype, &a),
               pg_sendrecv(s, a.send.ptr, (size_t)sendcount, dest, a.recv.ptr, (size_t)recvcount,
                           source, (pg_dtype)dtype, tag))
}

/* The uneven calls: as PGF_BLOCKING, the count arrays freed once the call is made. */
#define PGF_BLOCKING_V(prepare_call, c_call)              \
  vargs v;                                                \
  int st = (prepare_call);                                \
  if (st != PG_OK) {                                      \
    if (!s) return st;                                    \
    v.a.send.ptr = v.a.recv.ptr = NULL;                   \
    return forward_refusal(st, c_call, NULL);             \
  }                                                       \
  st = lib(c_call);                                       \
  vargs_free_counts(&v);                                  \
  return args_close(&v.a, st);

PGF_INTERNAL int pgf_allgatherv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount, const CFI_cdesc_t *recv,
                                const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *displs, int dtype) {
  PGF_BLOCKING_V(prepare_allgatherv(s, "pg_allgatherv", send, sendcount, recv, recvcounts, displs, dtype, &v),
                 pg_allgatherv(s, v.a.send.ptr, (size_t)sendcount, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype))
}

PGF_INTERNAL int pgf_reduce_scatterv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                                     const CFI_cdesc_t *recvcounts, int dtype, int op) {
  PGF_BLOCKING_V(prepare_reduce_scatterv(s, "pg_reduce_scatterv", send, recv, recvcounts, dtype, &v),
                 pg_reduce_scatterv(s, v.a.send.ptr, v.a.recv.ptr, v.rc, (pg_dtype)dtype, (pg_op)op))
}

PGF_INTERNAL int pgf_alltoallv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *sendcounts,
                               const CFI_cdesc_t *sdispls, const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts,
                               const CFI_cdesc_t *rdispls, int dtype) {
  PGF_BLOCKING_V(prepare_alltoallv(s, "pg_alltoallv", send, sendcounts, sdispls, recv, recvcounts, rdispls, dtype, &v),
                 pg_alltoallv(s, v.a.send.ptr, v.sc, v.sd, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype))
}

PGF_INTERNAL int pgf_gatherv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount, const CFI_cdesc_t *recv,
                             const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *displs, int dtype, int root) {
  PGF_BLOCKING_V(prepare_gatherv(s, "pg_gatherv", send, sendcount, recv, recvcounts, displs, dtype, root, &v),
                 pg_gatherv(s, v.a.send.ptr, (size_t)sendcount, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype, root))
}

PGF_INTERNAL int pgf_scatterv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *sendcounts,
                              const CFI_cdesc_t *displs, const CFI_cdesc_t *recv, long long recvcount, int dtype,
                              int root) {
  PGF_BLOCKING_V(prepare_scatterv(s, "pg_scatterv", send, sendcounts, displs, recv, recvcount, dtype, root, &v),
                 pg_scatterv(s, v.a.send.ptr, v.sc, v.sd, v.a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype, root))
}

/* ---- nonblocking -------------------------------------------------------------- */

/* A C work plus the packed temporaries of its non-contiguous buffers, which are
 * unpacked (output buffers, after success) and freed when the work is found
 * finished: by pg_work_wait, pg_work_test or pg_work_free. The descriptors
 * Fortran passed live only during the call, so the work keeps copies. */
typedef struct pgf_work {
  pg_work *work;
  args buffers;
  int finished, status;
  CFI_CDESC_T(CFI_MAX_RANK) descs[2];
} pgf_work;

/* Moves the prepared buffers into a new work; on failure closes them. */
static int work_new(args *a, const char *call, pgf_work **out) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return args_close(a, shim_fail(PG_ERR_NO_MEMORY, "%s: no memory for the work", call));
  pgf_work *w = *out;
  w->buffers = *a;
  buffer *b[2] = {&w->buffers.send, &w->buffers.recv};
  for (int i = 0; i < 2; ++i) {
    if (!b[i]->temp) continue;
    size_t bytes = offsetof(CFI_cdesc_t, dim) + (size_t)b[i]->desc->rank * sizeof(CFI_dim_t);
    memcpy(&w->descs[i], b[i]->desc, bytes);
    b[i]->desc = (const CFI_cdesc_t *)&w->descs[i];
  }
  return PG_OK;
}

/* After the C start: keeps the work, or undoes everything when it failed. */
static int work_started(pgf_work *w, pg_work *work, int status, pgf_work **out) {
  if (status != PG_OK) {
    args_close(&w->buffers, status);
    free(w);
    *out = NULL;
    return status;
  }
  w->work = work;
  *out = w;
  return PG_OK;
}

static void work_finish(pgf_work *w, int status) {
  if (w->finished) return;
  w->finished = 1;
  w->status = status;
  args_close(&w->buffers, status);
}

/* Nonblocking entries: prepare, move the buffers into a work, start. */
#define PGF_NONBLOCKING(call_name, prepare_call, c_call)  \
  args a;                                                 \
  pgf_work *w = NULL;                                     \
  pg_work *work = NULL;                                   \
  *out = NULL;                                            \
  int st = (prepare_call);                                \
  if (st == PG_OK) st = work_new(&a, call_name, &w);      \
  if (st != PG_OK) {                                      \
    if (!s) return st;                                    \
    a.send.ptr = a.recv.ptr = NULL;                       \
    pg_status library_status = c_call;                    \
    return forward_refusal(st, library_status, work);     \
  }                                                       \
  return work_started(w, work, lib(c_call), out);

PGF_INTERNAL int pgf_iallreduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                                long long count, int dtype, int op, pgf_work **out) {
  PGF_NONBLOCKING("pg_iallreduce",
                  prepare_allreduce(s, "pg_iallreduce", send, recv, count, dtype, &a),
                  pg_iallreduce(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype,
                                (pg_op)op, &work))
}

PGF_INTERNAL int pgf_ibroadcast(pg_strategy *s, const CFI_cdesc_t *buf, long long count,
                                int dtype, int root, pgf_work **out) {
  PGF_NONBLOCKING("pg_ibroadcast", prepare_broadcast(s, "pg_ibroadcast", buf, count, dtype, &a),
                  pg_ibroadcast(s, a.recv.ptr, (size_t)count, (pg_dtype)dtype, root, &work))
}

PGF_INTERNAL int pgf_ireduce(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                             long long count, int dtype, int op, int root, pgf_work **out) {
  PGF_NONBLOCKING("pg_ireduce",
                  prepare_reduce(s, "pg_ireduce", send, recv, count, dtype, root, &a),
                  pg_ireduce(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype,
                             (pg_op)op, root, &work))
}

PGF_INTERNAL int pgf_iallgather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                                long long sendcount, int dtype, pgf_work **out) {
  PGF_NONBLOCKING("pg_iallgather",
                  prepare_allgather(s, "pg_iallgather", send, recv, sendcount, dtype, &a),
                  pg_iallgather(s, a.send.ptr, a.recv.ptr, (size_t)sendcount, (pg_dtype)dtype,
                                &work))
}

PGF_INTERNAL int pgf_ireduce_scatter(pg_strategy *s, const CFI_cdesc_t *send,
                                     const CFI_cdesc_t *recv, long long recvcount, int dtype,
                                     int op, pgf_work **out) {
  PGF_NONBLOCKING("pg_ireduce_scatter",
                  prepare_reduce_scatter(s, "pg_ireduce_scatter", send, recv, recvcount, dtype,
                                         &a),
                  pg_ireduce_scatter(s, a.send.ptr, a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype,
                                     (pg_op)op, &work))
}

PGF_INTERNAL int pgf_ialltoall(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                               long long count, int dtype, pgf_work **out) {
  PGF_NONBLOCKING("pg_ialltoall", prepare_alltoall(s, "pg_ialltoall", send, recv, count, dtype, &a),
                  pg_ialltoall(s, a.send.ptr, a.recv.ptr, (size_t)count, (pg_dtype)dtype, &work))
}

PGF_INTERNAL int pgf_igather(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                             long long sendcount, int dtype, int root, pgf_work **out) {
  PGF_NONBLOCKING("pg_igather",
                  prepare_gather(s, "pg_igather", send, recv, sendcount, dtype, root, &a),
                  pg_igather(s, a.send.ptr, a.recv.ptr, (size_t)sendcount, (pg_dtype)dtype, root,
                             &work))
}

PGF_INTERNAL int pgf_iscatter(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                              long long recvcount, int dtype, int root, pgf_work **out) {
  PGF_NONBLOCKING("pg_iscatter",
                  prepare_scatter(s, "pg_iscatter", send, recv, recvcount, dtype, root, &a),
                  pg_iscatter(s, a.send.ptr, a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype, root,
                              &work))
}

PGF_INTERNAL int pgf_isend(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                           int peer, int tag, pgf_work **out) {
  PGF_NONBLOCKING("pg_isend", prepare_p2p(s, "pg_isend", buf, count, dtype, 0, &a),
                  pg_isend(s, a.send.ptr, (size_t)count, (pg_dtype)dtype, peer, tag, &work))
}

PGF_INTERNAL int pgf_irecv(pg_strategy *s, const CFI_cdesc_t *buf, long long count, int dtype,
                           int peer, int tag, pgf_work **out) {
  PGF_NONBLOCKING("pg_irecv", prepare_p2p(s, "pg_irecv", buf, count, dtype, 1, &a),
                  pg_irecv(s, a.recv.ptr, (size_t)count, (pg_dtype)dtype, peer, tag, &work))
}

/* The uneven calls: as PGF_NONBLOCKING; the library copied the count arrays
 * when the call was made, so they are freed then. */
#define PGF_NONBLOCKING_V(call_name, prepare_call, c_call) \
  vargs v;                                                \
  pgf_work *w = NULL;                                     \
  pg_work *work = NULL;                                   \
  *out = NULL;                                            \
  int st = (prepare_call);                                \
  if (st == PG_OK) {                                      \
    st = work_new(&v.a, call_name, &w);                   \
    if (st != PG_OK) vargs_free_counts(&v);               \
  }                                                       \
  if (st != PG_OK) {                                      \
    if (!s) return st;                                    \
    v.a.send.ptr = v.a.recv.ptr = NULL;                   \
    pg_status library_status = c_call;                    \
    return forward_refusal(st, library_status, work);     \
  }                                                       \
  v.a = w->buffers;                                       \
  st = lib(c_call);                                       \
  vargs_free_counts(&v);                                  \
  return work_started(w, work, st, out);

PGF_INTERNAL int pgf_iallgatherv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount,
                                 const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *displs,
                                 int dtype, pgf_work **out) {
  PGF_NONBLOCKING_V("pg_iallgatherv",
                    prepare_allgatherv(s, "pg_iallgatherv", send, sendcount, recv, recvcounts, displs, dtype, &v),
                    pg_iallgatherv(s, v.a.send.ptr, (size_t)sendcount, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype,
                                   &work))
}

PGF_INTERNAL int pgf_ireduce_scatterv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *recv,
                                      const CFI_cdesc_t *recvcounts, int dtype, int op, pgf_work **out) {
  PGF_NONBLOCKING_V("pg_ireduce_scatterv",
                    prepare_reduce_scatterv(s, "pg_ireduce_scatterv", send, recv, recvcounts, dtype, &v),
                    pg_ireduce_scatterv(s, v.a.send.ptr, v.a.recv.ptr, v.rc, (pg_dtype)dtype, (pg_op)op, &work))
}

PGF_INTERNAL int pgf_ialltoallv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *sendcounts,
                                const CFI_cdesc_t *sdispls, const CFI_cdesc_t *recv, const CFI_cdesc_t *recvcounts,
                                const CFI_cdesc_t *rdispls, int dtype, pgf_work **out) {
  PGF_NONBLOCKING_V("pg_ialltoallv",
                    prepare_alltoallv(s, "pg_ialltoallv", send, sendcounts, sdispls, recv, recvcounts, rdispls,
                                      dtype, &v),
                    pg_ialltoallv(s, v.a.send.ptr, v.sc, v.sd, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype, &work))
}

PGF_INTERNAL int pgf_igatherv(pg_strategy *s, const CFI_cdesc_t *send, long long sendcount, const CFI_cdesc_t *recv,
                              const CFI_cdesc_t *recvcounts, const CFI_cdesc_t *displs, int dtype, int root,
                              pgf_work **out) {
  PGF_NONBLOCKING_V("pg_igatherv",
                    prepare_gatherv(s, "pg_igatherv", send, sendcount, recv, recvcounts, displs, dtype, root, &v),
                    pg_igatherv(s, v.a.send.ptr, (size_t)sendcount, v.a.recv.ptr, v.rc, v.rd, (pg_dtype)dtype, root,
                                &work))
}

PGF_INTERNAL int pgf_iscatterv(pg_strategy *s, const CFI_cdesc_t *send, const CFI_cdesc_t *sendcounts,
                               const CFI_cdesc_t *displs, const CFI_cdesc_t *recv, long long recvcount, int dtype,
                               int root, pgf_work **out) {
  PGF_NONBLOCKING_V("pg_iscatterv",
                    prepare_scatterv(s, "pg_iscatterv", send, sendcounts, displs, recv, recvcount, dtype, root, &v),
                    pg_iscatterv(s, v.a.send.ptr, v.sc, v.sd, v.a.recv.ptr, (size_t)recvcount, (pg_dtype)dtype, root,
                                 &work))
}

PGF_INTERNAL int pgf_ibarrier(pg_strategy *s, pgf_work **out) {
  args a;
  args_init(&a);
  pgf_work *w = NULL;
  pg_work *work = NULL;
  *out = NULL;
  int st = check_handle(s, "pg_ibarrier");
  if (st != PG_OK) return st;
  st = work_new(&a, "pg_ibarrier", &w);
  if (st != PG_OK) {
    pg_status library_status = pg_ibarrier(s, &work);
    return forward_refusal(st, library_status, work);
  }
  return work_started(w, work, lib(pg_ibarrier(s, &work)), out);
}

static int check_work(const pgf_work *w, const char *call) {
  return w ? PG_OK
           : shim_fail(PG_ERR_INVALID_ARGUMENT,
                       "%s: the work is not started (NULL handle), or was freed", call);
}

PGF_INTERNAL int pgf_work_wait(pgf_work *w, double timeout_seconds) {
  int st = check_work(w, "pg_work_wait");
  if (st != PG_OK) return st;
  if (w->finished) return w->status;
  st = lib(pg_work_wait(w->work, timeout_seconds));
  if (st != PG_ERR_TIMEOUT) work_finish(w, st);
  return st;
}

PGF_INTERNAL int pgf_work_test(pgf_work *w, int *done) {
  *done = 0;
  int st = check_work(w, "pg_work_test");
  if (st != PG_OK) return st;
  if (w->finished) {
    *done = 1;
    return w->status;
  }
  st = lib(pg_work_test(w->work, done));
  if (*done) work_finish(w, st);
  return st;
}

/* Unfinished work: PG_ERR_STATE and nothing freed, as in C. */
PGF_INTERNAL int pgf_work_free(pgf_work *w) {
  if (!w) return PG_OK;
  if (!w->finished) {
    int done = 0;
    int st = lib(pg_work_test(w->work, &done));
    if (!done)
      return shim_fail(PG_ERR_STATE,
                       "pg_work_free: the work has not finished; wait for it (pg_work_wait) "
                       "before freeing it");
    work_finish(w, st);
  }
  int st = lib(pg_work_free(w->work));
  if (st != PG_OK) return st;
  free(w);
  return PG_OK;
}
