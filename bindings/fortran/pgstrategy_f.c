/*
 * pgstrategy_f.c — the C side of the Fortran module (module pgstrategy in
 * pgstrategy.F90, whose header states the conventions). Not a public API: called
 * only by the module, hidden from the library's exported symbols.
 *
 * Fortran buffers arrive as TS 29113 descriptors (CFI_cdesc_t, from the
 * ISO_Fortran_binding.h of the Fortran compiler that builds the module): the shim
 * checks their sizes, packs non-contiguous ones into temporaries (unpacked after
 * an output call succeeded; a nonblocking call's work, pgf_work, keeps them until
 * it is found finished), and maps the same array passed as both buffers to the
 * call's in-place layout. The communication calls' entry points (pgf_allreduce,
 * ...) are generated from procedures.py into pgf_calls.c.inc, included below.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/in_place.h" /* the in-place layouts (pg_in_place_*), shared with the library */
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

/* The same, for the library functions the module calls itself (pg_strategy_split, ...). */
PGF_INTERNAL int pgf_lib(int status) { return lib((pg_status)status); }

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

/* Copies every element between the (non-contiguous) array and a packed buffer,
 * first index fastest (Fortran array element order). */
static void copy_elements(const CFI_cdesc_t *d, char *packed, int to_packed) {
  long long n = element_count(d);
  CFI_index_t index[CFI_MAX_RANK] = {0};
  char *element = (char *)d->base_addr;
  for (long long k = 0; k < n; ++k) {
    memcpy(to_packed ? packed : element, to_packed ? element : packed, d->elem_len);
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
  *b = (buffer){.desc = d, .output = output};
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
  *b = (buffer){.desc = with->desc, .ptr = with->ptr ? with->ptr + offset_bytes : NULL}; /* no temp: `with` owns it */
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
  if (is_contiguous(a) && is_contiguous(b)) return 1;
  if (a->rank != b->rank || a->elem_len != b->elem_len) return 0;
  for (int r = 0; r < a->rank; ++r)
    if (a->dim[r].extent != b->dim[r].extent || a->dim[r].sm != b->dim[r].sm) return 0;
  return 1;
}

static int check_handle(const pg_strategy *s, const char *call) {
  if (s) return PG_OK;
  return shim_fail(PG_ERR_INVALID_ARGUMENT,
                   "%s: the strategy is not created (NULL handle); call pg_strategy_create first", call);
}

static int check_count(long long count, const char *call, const char *what) {
  if (count >= 0) return PG_OK;
  return shim_fail(PG_ERR_INVALID_ARGUMENT, "%s: %s %lld is negative", call, what, count);
}

/* count * n without overflow (n = group size, at least 1 here). */
static unsigned long long times(long long count, int n) {
  unsigned long long r, group = n < 1 ? 1 : (unsigned long long)n;
  return __builtin_mul_overflow((unsigned long long)count, group, &r) ? ~0ull : r;
}

/* ---- the arguments of one call ------------------------------------------------- */

/* The buffers and count arrays of one call, as the C call sees them. A
 * prepare_<name> function fills them (and closes them when it fails); the
 * blocking entry makes the C call and closes them, the nonblocking one moves
 * them into its work. */
typedef struct args {
  buffer send, recv;         /* a single-buffer call uses the one it reads or writes */
  size_t *sc, *sd, *rc, *rd; /* sendcounts, send displacements, recvcounts, receive displacements */
} args;

static int begin(args *a, const pg_strategy *s, const char *call) {
  memset(a, 0, sizeof *a);
  return check_handle(s, call);
}

static void free_counts(args *a) {
  free(a->sc), free(a->sd), free(a->rc), free(a->rd);
  a->sc = a->sd = a->rc = a->rd = NULL;
}

/* Unpacks the output buffers after success, frees temporaries and arrays; returns status. */
static int args_close(args *a, int status) {
  free_counts(a);
  buffer_close(&a->send, status);
  return buffer_close(&a->recv, status);
}

/* The two buffers of a call, in elements: their sizes, whether each is used on
 * this rank (root-only buffers are not elsewhere), and the call's in-place
 * layout on this rank (pg_in_place_*, from the header included above). */
typedef struct pair_layout {
  unsigned long long send_count, recv_count;
  int send_used, recv_used;
  pg_in_place in_place; /* zero: no in-place form */
} pair_layout;

/* Opens both buffers: once, as one array written back on return, when the same
 * array is passed as both and the call has an in-place form; closes `a` on failure. */
static int open_pair(args *a, pg_strategy *s, const char *call, const CFI_cdesc_t *send,
                     const CFI_cdesc_t *recv, int dtype, pair_layout l) {
  int st;
  if (l.in_place.form != PG_IN_PLACE_NONE && same_array(send, recv)) {
    const size_t offset_bytes = l.in_place.offset * pg_dtype_size(dtype);
    if (l.in_place.form == PG_IN_PLACE_SEND_IN_RECV) {
      st = buffer_open(&a->recv, s, recv, call, "recvbuf", l.recv_count, dtype, l.recv_used, 1);
      if (st == PG_OK) buffer_share(&a->send, &a->recv, offset_bytes);
    } else {
      st = buffer_open(&a->send, s, send, call, "sendbuf", l.send_count, dtype, l.send_used, 1);
      if (st == PG_OK) buffer_share(&a->recv, &a->send, offset_bytes);
    }
  } else {
    st = buffer_open(&a->recv, s, recv, call, "recvbuf", l.recv_count, dtype, l.recv_used, 1);
    if (st == PG_OK)
      st = buffer_open(&a->send, s, send, call, "sendbuf", l.send_count, dtype, l.send_used, 0);
  }
  return st == PG_OK ? st : args_close(a, st);
}

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

static int extent_fits(unsigned long long extent, const char *call, const char *what) {
  if (extent != ~0ull) return PG_OK;
  return shim_fail(PG_ERR_INVALID_ARGUMENT, "%s: the blocks of %s end beyond the largest size_t", call, what);
}

/* *n = the elements a buffer needs for the blocks `counts` and `displs` describe. */
static int blocks(unsigned long long *n, const size_t *counts, const size_t *displs, int p,
                  const char *call, const char *what) {
  unsigned long long end = 0, e = 0;
  for (int r = 0; r < p && end != ~0ull; ++r) {
    if (counts[r] == 0) continue;
    if (__builtin_add_overflow((unsigned long long)displs[r], (unsigned long long)counts[r], &e)) e = ~0ull;
    if (e > end) end = e;
  }
  *n = end;
  return extent_fits(end, call, what);
}

/* *n = the sum of the entries of `counts`. */
static int sum(unsigned long long *n, const size_t *counts, int p, const char *call, const char *what) {
  unsigned long long total = 0;
  for (int r = 0; r < p && total != ~0ull; ++r)
    if (__builtin_add_overflow(total, (unsigned long long)counts[r], &total)) total = ~0ull;
  *n = total;
  return extent_fits(total, call, what);
}

/* *n = this rank's entry of `counts`, refused when negative as a Fortran integer. */
static int entry(unsigned long long *n, const size_t *counts, int rank, const char *call, const char *what) {
  *n = counts[rank];
  return check_count((long long)*n, call, what);
}

/* ---- the calls -------------------------------------------------------------------- */

/* A C work plus the packed temporaries of its non-contiguous buffers, which are
 * unpacked (output buffers, after success) and freed when the work is found
 * finished: by pg_work_wait, pg_work_test or pg_work_free. The descriptors
 * Fortran passed live only during the call, so the work keeps copies. */
typedef struct pgf_work {
  pg_work *work;
  args a;
  int finished, status;
  CFI_CDESC_T(CFI_MAX_RANK) descs[2];
} pgf_work;

/* Moves the prepared arguments into a new work (`a` still names the same
 * memory, for the C call); on failure closes them. */
static int work_new(args *a, const char *call, pgf_work **out) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return args_close(a, shim_fail(PG_ERR_NO_MEMORY, "%s: no memory for the work", call));
  pgf_work *w = *out;
  w->a = *a;
  buffer *b[2] = {&w->a.send, &w->a.recv};
  for (int i = 0; i < 2; ++i) {
    if (!b[i]->temp) continue;
    size_t bytes = offsetof(CFI_cdesc_t, dim) + (size_t)b[i]->desc->rank * sizeof(CFI_dim_t);
    memcpy(&w->descs[i], b[i]->desc, bytes);
    b[i]->desc = (const CFI_cdesc_t *)&w->descs[i];
  }
  return PG_OK;
}

/* After the C start: keeps the work, or undoes everything when it failed. The
 * library copied the count arrays: they are freed either way. */
static int work_started(pgf_work *w, pg_work *work, int status, pgf_work **out) {
  free_counts(&w->a);
  if (status != PG_OK) {
    args_close(&w->a, status);
    free(w);
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
  args_close(&w->a, status);
}

/* After the shim refused a call on a live strategy, the library still sees the
 * call, with NULL buffers and arrays: it fails it at once on this rank or,
 * under PGS_DEBUG=detail, on every rank together, as it does with its own
 * argument errors (and its sequence numbers stay in step). The shim's status
 * and message stand. A zero-count call the library accepted is completed. */
static int forward_refusal(int status, pg_status library_status, pg_work **work) {
  if (library_status == PG_OK && work && *work) {
    pg_work_wait(*work, -1);
    pg_work_free(*work);
  }
  shim_owns_last_error = 1;
  return status;
}

/* pgf_allreduce, pgf_iallreduce, ...: generated from procedures.py. */
#include "pgf_calls.c.inc"

/* ---- lifecycle ------------------------------------------------------------- */

_Static_assert(sizeof(MPI_Fint) == sizeof(int),
               "the module passes Fortran MPI handles as integer(c_int)");

PGF_INTERNAL int pgf_strategy_create(const char *device, const char *backend /* optional */,
                                     int has_comm, MPI_Fint comm, pg_strategy **out) {
  *out = NULL;
  if (has_comm) return lib(pg_strategy_create_fcomm(device, backend, comm, out));
  return lib(pg_strategy_create(device, backend, out));
}

PGF_INTERNAL const char *pgf_default_backend(const char *device) {
  const char *name = pg_default_backend(device);
  if (!name) shim_owns_last_error = 0;
  return name;
}

PGF_INTERNAL int pgf_mem_alloc(pg_strategy *s, long long bytes, void **ptr) {
  *ptr = NULL;
  int st = check_count(bytes, "pg_mem_alloc", "bytes");
  return st != PG_OK ? st : lib(pg_mem_alloc(s, (size_t)bytes, ptr));
}

/* ---- works ------------------------------------------------------------------------ */

static int check_work(const pgf_work *w, const char *call) {
  if (w) return PG_OK;
  return shim_fail(PG_ERR_INVALID_ARGUMENT, "%s: the work is not started (NULL handle), or was freed", call);
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
