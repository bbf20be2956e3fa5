/*
 * pg_backend.h — the pgstrategy backend-author API (C99).
 *
 * A backend is a table of plain C function pointers. Register it at run time
 * with pg_backend_register(), or ship it as a plugin: a shared library named
 * libpg_backend_<name>.so exporting pg_backend_plugin_init(), which the library
 * loads when a strategy asks for <name> and no backend of that name is
 * registered (searched in PGS_PLUGIN_PATH, then the library's own plugin folder).
 *
 * The library validates every argument before a backend sees it: counts, dtypes,
 * ops, roots, peers and buffers are valid, and the dtype/op pair is allowed. An
 * operation left NULL, or one that returns PG_ERR_UNSUPPORTED before it has
 * communicated, runs on the device's default backend instead.
 */
#ifndef PG_BACKEND_H
#define PG_BACKEND_H

#include <stdint.h>
#include <string.h>

#include "pg_strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of the pg_backend_ops layout. A table declares the version it was
 * built with; the library refuses versions it does not know. */
#define PG_BACKEND_ABI_VERSION 1

/** Devices a backend serves (bit set in pg_backend_ops.devices). */
enum { PG_DEVICE_CPU = 1u << 0, PG_DEVICE_CUDA = 1u << 1 };

/** Levels for pg_backend_context.log (PGS_LOG chooses which are printed). */
enum { PG_LOG_ERROR = 0, PG_LOG_WARN = 1, PG_LOG_INFO = 2, PG_LOG_DEBUG = 3 };

/** What a backend instance gets at create. Everything in it, the communicators
 * included, is owned by the library and valid until the backend's destroy has
 * returned. The communicators are private duplicates for this backend instance:
 * the backend may use any tag and any collective on them, and must not free them.
 * Their error handler is MPI_ERRORS_RETURN. */
typedef struct pg_backend_context {
  MPI_Comm comm;          /* all ranks of the strategy */
  int rank, size;         /* rank in comm, ranks in comm */
  const char *device;     /* "cpu" or "cuda" */
  int device_index;       /* -1 for cpu, N for cuda:N (this rank's GPU) */
  MPI_Comm node_comm;     /* ranks on this (virtual) node, ordered by rank */
  int local_rank, local_size;
  MPI_Comm rail_comm;     /* ranks with the same local rank, one per node, by node */
  int node_rank, node_count;
  void *stream;           /* cudaStream_t set with pg_strategy_set_stream, or NULL */
  void (*log)(int level, const char *message); /* the library's logger (rank-prefixed) */
} pg_backend_context;

/** A backend. Fields after `user_data` may be NULL except `create`.
 * Every operation returns PG_OK or a failure status (any pg_status value,
 * PG_ERR_ABORTED included; a value that is none reaches the caller as
 * PG_ERR_BACKEND, saying so). PG_ERR_BACKEND (the
 * communication library failed) poisons the strategy. PG_ERR_UNSUPPORTED,
 * returned before communicating, sends that one call to the device default; the
 * decision must be the same on every rank, and send/recv never decline (their
 * peer would wait on another communicator).
 * The library calls an instance from three lanes, one for collectives, one
 * for sends and one for receives, which never wait for each other (a receive
 * must not wait behind a collective that its peer joins later): within a lane,
 * one call at a time, and a blocking entry only once every call before it in
 * the lane has returned or finished. At MPI_THREAD_MULTIPLE the lanes may call
 * at once from different threads: a collective entry (or `test` of a started
 * iallreduce), `send` and `recv` may run concurrently, each on its own thread;
 * a backend with send and recv must allow that. Blocking entries run on the
 * lane's own thread or the caller's; `test` on any thread that moves the lane.
 * Below MPI_THREAD_MULTIPLE everything runs in the caller, one call at a time
 * (a pg_sendrecv's send completes before its recv starts). */
typedef struct pg_backend_ops {
  uint32_t abi_version;   /* PG_BACKEND_ABI_VERSION */
  size_t struct_size;     /* sizeof(pg_backend_ops) the backend was built with */
  const char *name;       /* [a-z0-9_]{1,63}; copied at registration */
  uint32_t devices;       /* PG_DEVICE_CPU | PG_DEVICE_CUDA */
  void *user_data;        /* handed back through create */

  /** Make an instance for ctx (collective over ctx->comm). *state is passed to
   * every other entry. A failure fails pg_strategy_create on every rank. */
  pg_status (*create)(const pg_backend_context *ctx, void *user_data, void **state);
  /** Free an instance (collective). May be NULL. Called only for instances
   * whose create succeeded on every rank (after a partial failure the library
   * leaves the instances that were made). */
  void (*destroy)(void *state);
  /** CUDA backends: enqueue later operations on this cudaStream_t. */
  pg_status (*set_stream)(void *state, void *stream);

  /* Blocking operations, same meaning and in-place rules as in pg_strategy.h.
   * NULL means "not implemented by this backend". */
  pg_status (*allreduce)(void *state, const void *send, void *recv, size_t count,
                         pg_dtype dtype, pg_op op);
  pg_status (*broadcast)(void *state, void *buf, size_t count, pg_dtype dtype, int root);
  pg_status (*reduce)(void *state, const void *send, void *recv, size_t count,
                      pg_dtype dtype, pg_op op, int root);
  pg_status (*allgather)(void *state, const void *send, void *recv, size_t sendcount,
                         pg_dtype dtype);
  pg_status (*reduce_scatter)(void *state, const void *send, void *recv, size_t recvcount,
                              pg_dtype dtype, pg_op op);
  /* On CPU the library stages an in-place alltoall, so send != recv here; on
   * CUDA send == recv reaches the backend (in place). */
  pg_status (*alltoall)(void *state, const void *send, void *recv, size_t count,
                        pg_dtype dtype);
  pg_status (*gather)(void *state, const void *send, void *recv, size_t sendcount,
                      pg_dtype dtype, int root);
  pg_status (*scatter)(void *state, const void *send, void *recv, size_t recvcount,
                       pg_dtype dtype, int root);
  pg_status (*barrier)(void *state);
  pg_status (*send)(void *state, const void *buf, size_t count, pg_dtype dtype, int peer,
                    int tag);
  pg_status (*recv)(void *state, void *buf, size_t count, pg_dtype dtype, int peer, int tag);

  /* Optional native nonblocking allreduce (what data-parallel training overlaps
   * with the backward pass). All three or none. `test` sets *done to 1 once the
   * request has finished (its status is the return value then); the library calls
   * request_free exactly once per request, after it finished. */
  pg_status (*iallreduce)(void *state, const void *send, void *recv, size_t count,
                          pg_dtype dtype, pg_op op, void **request);
  pg_status (*test)(void *state, void *request, int *done);
  void (*request_free)(void *state, void *request);

  /* The uneven collectives (entries added after request_free: a table built
   * against an older header, with a smaller struct_size, has none of them).
   * Same meaning and in-place rules as in pg_strategy.h; the count and
   * displacement arrays are the library's, valid during the call. The root's
   * arrays are NULL on the other ranks of gatherv and scatterv. On CPU the
   * library stages an in-place alltoallv, so send != recv here. A NULL entry
   * runs on the device default, as for the other operations. */
  pg_status (*allgatherv)(void *state, const void *send, size_t sendcount, void *recv,
                          const size_t *recvcounts, const size_t *displs, pg_dtype dtype);
  pg_status (*reduce_scatterv)(void *state, const void *send, void *recv, const size_t *recvcounts,
                               pg_dtype dtype, pg_op op);
  pg_status (*alltoallv)(void *state, const void *send, const size_t *sendcounts, const size_t *sdispls,
                         void *recv, const size_t *recvcounts, const size_t *rdispls, pg_dtype dtype);
  pg_status (*gatherv)(void *state, const void *send, size_t sendcount, void *recv,
                       const size_t *recvcounts, const size_t *displs, pg_dtype dtype, int root);
  pg_status (*scatterv)(void *state, const void *send, const size_t *sendcounts, const size_t *displs,
                        void *recv, size_t recvcount, pg_dtype dtype, int root);
} pg_backend_ops;

/** A table to fill in: abi_version and struct_size this header's, `name` and
 * `devices` as given, every other field NULL (an operation left NULL runs on
 * the device's default backend). */
static inline pg_backend_ops pg_backend_ops_init(const char *name, uint32_t devices) {
  pg_backend_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.abi_version = PG_BACKEND_ABI_VERSION;
  ops.struct_size = sizeof ops;
  ops.name = name;
  ops.devices = devices;
  return ops;
}

/** Register a backend. The table and its name are copied. Thread-safe, local.
 * PG_ERR_INVALID_ARGUMENT: NULL table, invalid or duplicate name (built-ins
 * included), no create, no device. PG_ERR_PLUGIN: unknown abi_version, or a
 * struct_size larger than this library knows with non-zero bytes beyond it.
 * A smaller struct_size (a backend built against an older header) is accepted;
 * the missing entries count as NULL. */
PG_API pg_status pg_backend_register(const pg_backend_ops *ops);

/** @defgroup kernels Reduction kernels for backend authors (local, thread-safe)
 * The library's own elementwise arithmetic, so a backend that reduces with it
 * gives the same bits as the built-in backends.
 * @{ */

/** inout[i] = inout[i] (op) in[i] for i < count, exactly as the built-in
 * backends combine two contributions: integer SUM and PROD wrap around; float
 * MIN and MAX are symmetric (a NaN wins, and -0 < +0), so the result does not
 * depend on which operand comes first; float16 and bfloat16 combine in float and
 * round to nearest even. PG_AVG combines as PG_SUM: call pg_reduce_finish once
 * on the final sum. `in` may equal `inout`; other overlaps are undefined.
 * PG_ERR_INVALID_ARGUMENT: a dtype or op outside the enums, or a NULL buffer
 * with count > 0. PG_ERR_UNSUPPORTED: a pair that does not exist (PG_AVG on
 * integers, bitwise ops on floating types). */
PG_API pg_status pg_reduce_local(pg_dtype dtype, pg_op op, void *inout, const void *in,
                                 size_t count);

/** Finishes a reduction of `ranks` contributions in place: PG_AVG divides every
 * element by `ranks` in the type's arithmetic (float16 and bfloat16 in float,
 * then rounded), as the built-in backends do; every other op leaves buf as it
 * is. Errors as pg_reduce_local, and PG_ERR_INVALID_ARGUMENT for ranks < 1. */
PG_API pg_status pg_reduce_finish(pg_dtype dtype, pg_op op, void *buf, size_t count, int ranks);


/** Element conversion as the kernels round: `count` elements of `dtype` to
 * double (exact for every type but 64-bit integers beyond 2^53), and doubles
 * to `dtype` (integers wrap modulo 2^bits through int64; floating types round
 * to nearest even). For backends and tools that make or check data of every
 * type, float16 and bfloat16 included. PG_ERR_INVALID_ARGUMENT for a dtype
 * outside the enum or a NULL buffer with count > 0. */
PG_API pg_status pg_dtype_to_double(pg_dtype dtype, const void *in, double *out, size_t count);
PG_API pg_status pg_dtype_from_double(pg_dtype dtype, const double *in, void *out, size_t count);
/** @} */

/** A plugin library exports this function; it calls pg_backend_register once
 * for each backend it provides and returns PG_OK. */
typedef pg_status (*pg_backend_plugin_init_fn)(void);
#define PG_BACKEND_PLUGIN_INIT_SYMBOL "pg_backend_plugin_init"

#ifdef __cplusplus
}
#endif

#endif /* PG_BACKEND_H */
