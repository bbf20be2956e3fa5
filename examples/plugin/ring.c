/*
 * ring.c — a complete custom pgstrategy backend, shipped as a plugin.
 *
 * It implements one operation, allreduce, as the classic bandwidth-optimal ring
 * over MPI point-to-point, and leaves every other operation NULL: the library
 * runs those on the device's default backend (mpi on cpu). It adds with the
 * library's own kernel (pg_reduce_local), so it serves every dtype; it could
 * serve every op too, but to show how a backend declines a call it takes SUM
 * and AVG only. Build it as libpg_backend_ring.so; select it with
 *
 *     PGS_PLUGIN_PATH=/dir/of/the/plugin PGS_BACKEND=cpu:ring mpiexec -n 4 ./app
 *
 * or pg_strategy_create("cpu", "ring", &s). See README.md in this folder.
 *
 * Ring allreduce on P ranks, N elements: the buffer is cut into P chunks.
 *   1. reduce-scatter, P-1 steps: in step s, rank r sends chunk (r-s) mod P to
 *      rank r+1 and adds chunk (r-s-1) mod P received from rank r-1 into its
 *      own copy. Afterwards rank r holds the full sum of chunk (r+1) mod P.
 *   2. allgather, P-1 steps: in step s, rank r sends chunk (r+1-s) mod P to
 *      rank r+1 and stores chunk (r-s) mod P received from rank r-1.
 *   3. AVG only: every rank divides its result by P (pg_reduce_finish).
 * Each rank sends and receives 2(P-1)/P * N elements. Every chunk is summed in
 * one order, by one chain of ranks, then copied: all ranks get bit-identical
 * results, as the library requires.
 *
 * Messages are cut into segments of at most SEGMENT_BYTES, so MPI's int counts
 * never overflow and the scratch buffer stays small. Every chunk is cut into the
 * same number of segments (some may be empty), so each send matches one receive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "pg_backend.h"

#define SEGMENT_BYTES ((size_t)1 << 20)

/* The state of one backend instance (one per strategy). */
typedef struct ring_state {
  const pg_backend_context *ctx; /* owned by the library, valid until destroy */
  void *scratch;                 /* one received segment */
} ring_state;

/* --- create / destroy ------------------------------------------------------ */

/* Called collectively on every rank of ctx->comm when a strategy selects "ring". */
static pg_status ring_create(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)user_data;
  ring_state *st = (ring_state *)calloc(1, sizeof *st);
  if (st != NULL) st->scratch = malloc(SEGMENT_BYTES);
  /* Every rank must fail or succeed together: agree before returning. */
  int ok = st != NULL && st->scratch != NULL, all_ok = 0;
  if (MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ctx->comm) != MPI_SUCCESS) all_ok = 0;
  if (!all_ok) {
    if (st != NULL) free(st->scratch);
    free(st);
    if (ctx->log) ctx->log(PG_LOG_ERROR, "ring: cannot allocate the scratch buffer");
    return ok ? PG_ERR_BACKEND : PG_ERR_NO_MEMORY;
  }
  st->ctx = ctx;
  *state = st;
  if (ctx->log) ctx->log(PG_LOG_DEBUG, "ring: backend instance created");
  return PG_OK;
}

static void ring_destroy(void *state) {
  ring_state *st = (ring_state *)state;
  if (st == NULL) return;
  free(st->scratch);
  free(st);
}

/* --- the ring -------------------------------------------------------------- */

/* Chunk c of P covers elements [first, first+len): the first (count % P)
 * chunks have one element more. */
static void chunk_range(size_t count, int P, int c, size_t *first, size_t *len) {
  size_t base = count / (size_t)P, extra = count % (size_t)P, uc = (size_t)c;
  *first = uc * base + (uc < extra ? uc : extra);
  *len = base + (uc < extra ? 1 : 0);
}

static int mod(int a, int P) { return ((a % P) + P) % P; }

/* One ring step: send chunk `send_chunk` to the right neighbour, receive chunk
 * `recv_chunk` from the left one, segment by segment. With `reduce` the received
 * data is added into buf, otherwise stored into it. */
static pg_status ring_step(ring_state *st, char *buf, size_t count, size_t esize,
                           pg_dtype dtype, pg_op op, int send_chunk, int recv_chunk, int reduce,
                           size_t segments, size_t seg_elems) {
  const pg_backend_context *ctx = st->ctx;
  const int right = (ctx->rank + 1) % ctx->size, left = mod(ctx->rank - 1, ctx->size);
  size_t s_first, s_len, r_first, r_len, k;
  chunk_range(count, ctx->size, send_chunk, &s_first, &s_len);
  chunk_range(count, ctx->size, recv_chunk, &r_first, &r_len);
  for (k = 0; k < segments; ++k) {
    size_t off = k * seg_elems;
    size_t s_n = off < s_len ? (s_len - off < seg_elems ? s_len - off : seg_elems) : 0;
    size_t r_n = off < r_len ? (r_len - off < seg_elems ? r_len - off : seg_elems) : 0;
    char *dst = reduce ? (char *)st->scratch : buf + (r_first + off) * esize;
    /* The send and receive regions are different chunks: no overlap. */
    int rc = MPI_Sendrecv(buf + (s_first + off) * esize, (int)(s_n * esize), MPI_BYTE, right, 0,
                          dst, (int)(r_n * esize), MPI_BYTE, left, 0, ctx->comm,
                          MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING + 64];
      int len = 0;
      strcpy(text, "ring: MPI_Sendrecv failed: ");
      MPI_Error_string(rc, text + strlen(text), &len);
      if (ctx->log) ctx->log(PG_LOG_ERROR, text);
      return PG_ERR_BACKEND;
    }
    /* The built-in backends' arithmetic, for every dtype (PG_AVG adds too). */
    if (reduce) pg_reduce_local(dtype, op, buf + (r_first + off) * esize, st->scratch, r_n);
  }
  return PG_OK;
}

/* The library has already checked the arguments: buffers are valid, in place
 * means send == recv, the dtype/op pair is legal. */
static pg_status ring_allreduce(void *state, const void *send, void *recv, size_t count,
                                pg_dtype dtype, pg_op op) {
  ring_state *st = (ring_state *)state;
  const size_t esize = pg_dtype_size(dtype);
  /* Not ours: say so BEFORE communicating, and the library runs this call on
   * the default backend instead. */
  if (op != PG_SUM && op != PG_AVG) return PG_ERR_UNSUPPORTED;

  if (send != recv && count > 0) memcpy(recv, send, count * esize);
  const int P = st->ctx->size;
  if (P == 1 || count == 0) return PG_OK;

  /* Same segmentation on every rank: derived from the largest chunk. */
  const size_t seg_elems = SEGMENT_BYTES / esize;
  const size_t max_chunk = (count + (size_t)P - 1) / (size_t)P;
  const size_t segments = (max_chunk + seg_elems - 1) / seg_elems;
  const int r = st->ctx->rank;
  char *buf = (char *)recv;
  int s;
  for (s = 0; s < P - 1; ++s) { /* reduce-scatter */
    pg_status rc = ring_step(st, buf, count, esize, dtype, op, mod(r - s, P), mod(r - s - 1, P), 1,
                             segments, seg_elems);
    if (rc != PG_OK) return rc;
  }
  for (s = 0; s < P - 1; ++s) { /* allgather */
    pg_status rc = ring_step(st, buf, count, esize, dtype, op, mod(r + 1 - s, P), mod(r - s, P), 0,
                             segments, seg_elems);
    if (rc != PG_OK) return rc;
  }
  return pg_reduce_finish(dtype, op, buf, count, P);
}

/* --- registration ---------------------------------------------------------- */

/* The plugin's entry point: the library calls it once, right after loading
 * libpg_backend_ring.so, because a strategy asked for "ring". PG_API gives it
 * default visibility even when the rest is built hidden. */
PG_API pg_status pg_backend_plugin_init(void) {
  /* every operation not set below runs on the default backend */
  pg_backend_ops ops = pg_backend_ops_init("ring", PG_DEVICE_CPU);
  ops.create = ring_create;
  ops.destroy = ring_destroy;
  ops.allreduce = ring_allreduce;
  return pg_backend_register(&ops); /* copies the table */
}
