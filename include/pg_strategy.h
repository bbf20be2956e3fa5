/*
 * pg_strategy.h — the pgstrategy user API (C99).
 *
 * A process-group *strategy* is a communicator plus the backend that runs its
 * collectives. Ask for one for a device ("cpu", "cuda", "cuda:N"), optionally
 * naming a backend; without one, PGS_BACKEND decides, then the device default
 * (cuda -> nccl, cpu -> mpi).
 *
 *   pg_strategy *s;
 *   if (pg_strategy_create("cpu", NULL, &s) != PG_OK)
 *     fprintf(stderr, "%s\n", pg_last_error());
 *   pg_allreduce(s, send, recv, n, PG_FLOAT32, PG_SUM);
 *   pg_strategy_destroy(s);
 *
 * Conventions that hold for every call below:
 * - Every call returns a pg_status; on failure pg_last_error() (thread-local)
 *   holds a message naming the bad value and what is accepted. Nothing in the
 *   library terminates the process on bad input.
 * - Argument errors in collectives are local: the failing rank returns at once
 *   and its peers may wait. With PGS_DEBUG=detail the arguments are compared
 *   across ranks first and a mismatch fails every rank with PG_ERR_MISMATCH.
 * - After PG_ERR_BACKEND (an MPI or NCCL failure, or a peer's failure or
 *   abort: docs/errors.md, "When a peer fails or aborts") or a watchdog timeout the
 *   strategy is poisoned: every call that communicates or changes it (every
 *   collective, point-to-point and nonblocking call, pg_strategy_split,
 *   pg_strategy_set_stream, pg_mem_alloc and pg_mem_free) returns
 *   PG_ERR_STATE; pg_strategy_destroy and the local queries (getters,
 *   pg_strategy_describe, pg_strategy_info) still work and say why.
 * - Counts are element counts (size_t); `size` below is the size of one element
 *   of the dtype. Counts above INT_MAX work.
 * - Buffers: a NULL buffer is accepted only when count is 0 or the buffer is not
 *   used on this rank (root-only buffers on non-root ranks). Send and receive
 *   buffers may overlap only in the in-place layout given for each call; any other
 *   overlap is PG_ERR_INVALID_ARGUMENT.
 * - One strategy is used by one thread at a time; different strategies may be
 *   used from different threads at once (needs MPI_THREAD_MULTIPLE).
 * - MPI ownership: if the application initialized MPI, the library never
 *   finalizes it. Otherwise the first pg_strategy_create initializes it
 *   (MPI_THREAD_MULTIPLE) and the library finalizes it at exit, after destroying
 *   the strategies still alive (the last made first, the same order on every
 *   rank: each destroy may wait for its peers); a child the process forks
 *   does neither at its exit (the strategies and MPI stay the parent's). A
 *   strategy destroyed after the application's MPI_Finalize frees its memory
 *   and makes no MPI call.
 */
#ifndef PG_STRATEGY_H
#define PG_STRATEGY_H

#include <mpi.h>
#include <stddef.h>

#if defined(_WIN32)
#define PG_API
#else
#define PG_API __attribute__((visibility("default")))
#endif

/** @defgroup version Version
 * @{ */
#define PG_VERSION_MAJOR 0
#define PG_VERSION_MINOR 1
#define PG_VERSION_PATCH 0
/** @} */

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque handles. */
typedef struct pg_strategy pg_strategy;
typedef struct pg_work pg_work;

/* In C++ the enums have int as their underlying type, so that any int a caller
 * passes (a bad value from C or Fortran included) is a value of the type and
 * is rejected by validation, not undefined behaviour. */
#ifdef __cplusplus
#define PG_ENUM_INT : int
#else
#define PG_ENUM_INT
#endif

/** Status codes. The values never change. */
typedef enum pg_status PG_ENUM_INT {
  PG_OK = 0,
  PG_ERR_INVALID_ARGUMENT = 1, /* bad pointer, count, root, dtype, op, device string */
  PG_ERR_UNKNOWN_BACKEND = 2,  /* no backend of that name registered or found as a plugin */
  PG_ERR_UNSUPPORTED = 3,      /* backend/device or dtype/op pair not supported */
  PG_ERR_UNAVAILABLE = 4,      /* supported but not here: no CUDA build, no GPU */
  PG_ERR_BACKEND = 5,          /* the communication library failed, or a peer did (poisons the strategy) */
  PG_ERR_TIMEOUT = 6,          /* pg_work_wait ran out of time; the work stays valid */
  PG_ERR_MISMATCH = 7,         /* ranks disagree (backend, settings, PGS_DEBUG fingerprint) */
  PG_ERR_PLUGIN = 8,           /* a plugin or backend table could not be loaded or accepted */
  PG_ERR_STATE = 9,            /* call not valid now (poisoned strategy, unfinished work) */
  PG_ERR_NO_MEMORY = 10,
  PG_ERR_INTERNAL = 11,
  PG_ERR_ABORTED = 12          /* the call was in flight when pg_strategy_abort was called */
} pg_status;

typedef enum pg_dtype PG_ENUM_INT {
  PG_INT8, PG_UINT8, PG_INT32, PG_UINT32, PG_INT64, PG_UINT64,
  PG_FLOAT16, PG_BFLOAT16, PG_FLOAT32, PG_FLOAT64
} pg_dtype;

/** Reduction operators. PG_AVG is for floating types only; PG_BAND, PG_BOR and
 * PG_BXOR for integer types only; other pairs are PG_ERR_UNSUPPORTED.
 * fp16/bf16 combine each pair in float and round to the type, so every rank gets
 * bit-identical results whatever the backend. */
typedef enum pg_op PG_ENUM_INT { PG_SUM, PG_PROD, PG_MIN, PG_MAX, PG_AVG, PG_BAND, PG_BOR, PG_BXOR } pg_op;

/** @defgroup info Library information (local, thread-safe)
 * @{ */

/** Name of a status ("PG_ERR_UNKNOWN_BACKEND"); "PG_STATUS_UNKNOWN" for values
 * outside the enum. Never NULL. */
PG_API const char *pg_status_name(pg_status status);

/** Detail of the last failure in this thread; "" if none yet. Set by every
 * failing call, not cleared by success. Valid until this thread's next failing call. */
PG_API const char *pg_last_error(void);

/** Version of the library that is running. NULL pointers are skipped. */
PG_API void pg_version(int *major, int *minor, int *patch);

/** Size in bytes of one element of `dtype` (1, 2, 4 or 8); 0 for a value outside
 * the enum. */
PG_API size_t pg_dtype_size(pg_dtype dtype);

/** Lower-case name of a dtype ("float32", "bfloat16") or op ("sum", "avg");
 * "invalid" for a value outside the enum. Never NULL. */
PG_API const char *pg_dtype_name(pg_dtype dtype);
PG_API const char *pg_op_name(pg_op op);

/** 1 when reductions of `dtype` with `op` exist (PG_AVG on floating types,
 * bitwise ops on integer types, the others on every type); 0 otherwise,
 * including values outside the enums. */
PG_API int pg_op_supported(pg_dtype dtype, pg_op op);

/** Default backend of a device: "nccl" for "cuda"/"cuda:N", "mpi" for "cpu";
 * NULL for anything else (the reason is in pg_last_error()). */
PG_API const char *pg_default_backend(const char *device);

/** Comma-separated, sorted names of the registered backends ("mpi,nccl"), written
 * NUL-terminated into buf, truncated to len. Plugins appear once loaded. */
PG_API pg_status pg_backends_list(char *buf, size_t len);
/** @} */

/** @defgroup lifecycle Strategy lifecycle (collective)
 * @{ */

/** Create a strategy for `device` on a private duplicate of MPI_COMM_WORLD.
 *
 * Collective over MPI_COMM_WORLD. `backend` NULL or "" means: PGS_BACKEND, then
 * the device default. Checks, in order: device syntax (PG_ERR_INVALID_ARGUMENT),
 * backend registered or found as a plugin (PG_ERR_UNKNOWN_BACKEND), backend serves
 * the device (PG_ERR_UNSUPPORTED), CUDA built in and a GPU present
 * (PG_ERR_UNAVAILABLE), cuda:N in range (PG_ERR_INVALID_ARGUMENT). Every rank
 * returns the same status; the message names the rank that failed. Ranks that
 * chose different backends or schedule-changing PGS_* values fail with
 * PG_ERR_MISMATCH. If MPI is not initialized the library initializes it
 * (MPI_THREAD_MULTIPLE) and finalizes it at exit. On failure *out is NULL. */
PG_API pg_status pg_strategy_create(const char *device, const char *backend, pg_strategy **out);

/** As pg_strategy_create, on a duplicate of `comm` (collective over `comm`). */
PG_API pg_status pg_strategy_create_comm(const char *device, const char *backend, MPI_Comm comm,
                                         pg_strategy **out);

/** As pg_strategy_create_comm, with a Fortran communicator handle. */
PG_API pg_status pg_strategy_create_fcomm(const char *device, const char *backend, MPI_Fint comm,
                                          pg_strategy **out);

/** A strategy with the same device and backend on the ranks of `s` that pass
 * the same `color`, ordered by `key` (ties by rank). Collective over `s`.
 * A negative color joins no group: *out is NULL and the status PG_OK. */
PG_API pg_status pg_strategy_split(pg_strategy *s, int color, int key, pg_strategy **out);

/** Destroy a strategy (collective over its communicator). NULL is fine.
 * Unfinished nonblocking work is completed first. After the application's
 * MPI_Finalize, frees memory and makes no MPI call. After pg_strategy_abort,
 * or once this rank failed or learned that a peer failed or aborted
 * (PG_ERR_BACKEND, docs/errors.md), local: frees what is this process's alone
 * and never waits for peers (the strategy's communicators and shared memory
 * are left to the process's exit). */
PG_API pg_status pg_strategy_destroy(pg_strategy *s);

/** Abort a strategy on this rank. Callable from any thread, also while another
 * thread is blocked in a call on `s` (as ncclCommAbort): every call in flight
 * on `s` on this rank returns PG_ERR_ABORTED within a bounded time (a fraction
 * of a second), and so do pg_work_wait and pg_work_test on its unfinished
 * works. Not ended: a custom backend's blocking operation (it returns when the
 * backend returns), the mpi backend's blocking calls under PGS_MPI_WAIT=block
 * (docs/env.md) and, built
 * against Open MPI 4, above 2 GiB and its alltoallv, gatherv and scatterv
 * (docs/known-issues.md).
 * `s` is then poisoned: later calls return PG_ERR_STATE, the local queries
 * still answer, and pg_strategy_destroy frees what it can without talking to
 * peers (it never blocks; the backends' communicators and shared memory are
 * left to the process's exit). MPI cannot cancel a collective: the buffers of
 * the calls it ended may still be read or written (when a late peer arrives)
 * until the process exits, so keep them allocated (the library keeps its own
 * staging buffers). The peers learn of it: a peer on this rank's node waiting
 * in, or entering, a call on the strategy returns PG_ERR_BACKEND naming this
 * rank within a fraction of a second; a peer on another node does once a
 * notice has reached it over MPI (sent at once at MPI_THREAD_MULTIPLE, else
 * by this rank's pg_strategy_destroy). docs/errors.md says where and when.
 * An abort racing pg_strategy_destroy (from another thread): while destroy
 * still waits for the strategy's works or its peers, the abort ends those
 * waits and destroy goes on alone, as after an abort; once destroy has begun
 * to free what it shares with its peers (every rank has arrived), the abort
 * does nothing. Calling it after destroy has returned is undefined, as for
 * any freed handle.
 * Local; a second call does nothing. PG_ERR_INVALID_ARGUMENT for NULL. */
PG_API pg_status pg_strategy_abort(pg_strategy *s);
/** @} */

/** @defgroup query Queries (local). A NULL handle gives NULL or -1.
 * @{ */
PG_API const char *pg_strategy_backend(const pg_strategy *s); /* "mpi" */
PG_API const char *pg_strategy_device(const pg_strategy *s);  /* "cpu", "cuda:1" */
PG_API int pg_strategy_rank(const pg_strategy *s);
PG_API int pg_strategy_size(const pg_strategy *s);
PG_API int pg_strategy_local_rank(const pg_strategy *s);  /* rank on this (virtual) node */
PG_API int pg_strategy_local_size(const pg_strategy *s);
PG_API int pg_strategy_node_rank(const pg_strategy *s);   /* index of this node */
PG_API int pg_strategy_node_count(const pg_strategy *s);
/* Collectives issued on s so far, blocking and nonblocking (not point-to-point):
 * the same on every rank that made the same calls; the last one's `coll_seq`
 * in the flight recorder (docs/trace.md). */
PG_API long long pg_strategy_sequence(const pg_strategy *s);

/** Human-readable description: backend and the rule that chose it, device,
 * rank/size, node layout, delegated operations. NUL-terminated, truncated to len. */
PG_API pg_status pg_strategy_describe(const pg_strategy *s, char *buf, size_t len);

/** One fact this rank's strategy knows, as text, NUL-terminated and truncated
 * to len (local; what tools such as pg-topo print). `key` is one of:
 *   "host"              this rank's host name (MPI_Get_processor_name)
 *   "machine"           the node's topology as the library loaded it: where from
 *                       (this machine, or PGS_TOPOLOGY_XML), packages, cores,
 *                       NUMA nodes, GPUs, NICs
 *   "binding"           what PGS_BIND chose for this rank, and the CPUs it may run on now
 *   "gpu"               the GPU a "cuda" strategy of this local rank uses:
 *                       "cuda:N <PCI bus id> ..." as hwloc sees it, or "none (why)"
 *   "nic"               the NIC nearest to that GPU (without one, to the rank's
 *                       binding): "<name>[/<netdev>] (<how near>)", or "none"
 *   "launcher"          the launcher the environment names (Hydra, Open MPI,
 *                       a Slurm step, torchrun), or "none found"; then, when
 *                       the library brought MPI up itself (docs/launch.md),
 *                       "; MPI brought up by pgstrategy's bootstrap (...)"
 *   "launcher_warning"  "" unless that launcher and MPI disagree about the job
 *   "nodes"             how nodes were formed: "shared-memory domains" or
 *                       "virtual nodes of PGS_RANKS_PER_NODE=k consecutive ranks"
 *   "backend:cpu", "backend:cuda"
 *                       the backend pg_strategy_create(device, NULL, ...) chooses
 *                       with this strategy's settings, and by which rule:
 *                       "mpi (device default)"
 *   "settings"          every PGS_* variable the library and its built-in
 *                       backends read, one per line: "NAME=value" as set when
 *                       the strategy was created, or "NAME unset (default: ...)";
 *                       the bootstrap's as set now, PGS_BOOTSTRAP_SECRET never
 *                       shown
 * PG_ERR_INVALID_ARGUMENT for a NULL handle, key or buf, len 0, or another key
 * (the message lists these). */
PG_API pg_status pg_strategy_info(const pg_strategy *s, const char *key, char *buf, size_t len);

/** Set the CUDA stream (cudaStream_t) CUDA backends enqueue on. PG_ERR_UNSUPPORTED
 * on a CPU strategy. Local. */
PG_API pg_status pg_strategy_set_stream(pg_strategy *s, void *cuda_stream);
/** @} */

/** @defgroup trace The flight recorder (docs/trace.md)
 * With PGS_TRACE=DIR set when strategies are created, each keeps its last
 * PGS_TRACE_ENTRIES operations (arguments, backend and algorithm, start and
 * end times aligned to its rank 0's clock, status), and each rank writes them
 * to DIR/pgstrategy-<job>-rank<R>.json when the watchdog fires, when a
 * strategy is poisoned, on SIGUSR1, at pg_strategy_destroy and at exit. The
 * tool pg-trace reads the files of any set of ranks.
 * @{ */

/** Writes this rank's dump now (local; any thread). PG_ERR_STATE when nothing
 * is recorded (no strategy was created with PGS_TRACE) or a file could not be
 * written. */
PG_API pg_status pg_trace_dump(void);
/** @} */

/** @defgroup mpi MPI interoperability (local, thread-safe)
 * For applications and tools that make MPI calls of their own on data they
 * also give the library: the same datatypes and reductions, so the results
 * agree bit for bit with the mpi backend's.
 * @{ */

/** The MPI datatype of `dtype`: the fixed-width integer types, MPI_FLOAT and
 * MPI_DOUBLE; float16 and bfloat16 travel as MPI_UINT16_T (16-bit words, which
 * only pg_mpi_op's operations combine correctly). PG_ERR_INVALID_ARGUMENT for
 * a value outside the enum. */
PG_API pg_status pg_mpi_datatype(pg_dtype dtype, MPI_Datatype *out);

/** The MPI operation the mpi backend reduces `dtype` with under `op`: MPI's
 * own where it gives the library's results, else a user-defined operation over
 * the library's kernel (pg_reduce_local in pg_backend.h: float16/bfloat16,
 * floating and unsigned MIN/MAX, 8-bit sums), created once per process and
 * never freed. PG_AVG reduces as PG_SUM: divide with pg_reduce_finish.
 * PG_ERR_STATE before MPI_Init or after MPI_Finalize; PG_ERR_INVALID_ARGUMENT or
 * PG_ERR_UNSUPPORTED as pg_reduce_local. */
PG_API pg_status pg_mpi_op(pg_dtype dtype, pg_op op, MPI_Op *out);

/** 1 when `comm` is one of the library's own communicators (a strategy's,
 * its backends', its runtime's, or a duplicate of one), else 0. A tool that
 * intercepts MPI's entry points (the MPI layer, libpgstrategy_mpi; a profiler)
 * passes calls on them through: they are the library's traffic, made on any
 * of its threads. Local; 0 for MPI_COMM_NULL, before MPI_Init and after
 * MPI_Finalize. */
PG_API int pg_mpi_comm_owned(MPI_Comm comm);
/** @} */

/** @defgroup launch Starting without an MPI launcher (docs/launch.md)
 * Under mpiexec, mpirun or srun, MPI_Init joins the launcher's job. Without
 * one, when RANK and WORLD_SIZE say this process is one of N > 1 (torchrun,
 * a Kubernetes job, plain copies), the first pg_strategy_create brings MPI up
 * itself: rank 0 serves a rendezvous at MASTER_ADDR:MASTER_PORT (or
 * PGS_BOOTSTRAP_ADDR), and the library serves PMI-1 to its own MPI before
 * MPI_Init. Frameworks that already have a rendezvous of their own (torch's
 * Store) use the two calls below instead: rank 0 opens the library's
 * rendezvous and publishes its address and a secret there; every rank joins.
 * A world of 1 while the launcher or RANK/WORLD_SIZE say N > 1 is an error
 * (PG_ERR_STATE) for every strategy creation.
 * @{ */

/** The MPI launcher whose variables this process carries, written
 * NUL-terminated into buf, truncated to len: "hydra", "openmpi", "slurm",
 * "pmix", "pmi" (another PMI process manager), "mvapich", "pals", or "" when
 * none does (a plain process, or a torchrun worker, whose inherited launcher
 * variables are ignored). Local; PG_ERR_INVALID_ARGUMENT for a NULL buf or
 * len 0. */
PG_API pg_status pg_mpi_launcher(char *buf, size_t len);

/** MPI_Init_thread(required, provided) as the library's own first
 * pg_strategy_create does it, for applications and tools that make MPI calls
 * before they create a strategy: under an MPI launcher, or for one process,
 * plainly; without one, for a job of N > 1 processes that RANK and
 * WORLD_SIZE describe, through the bootstrap. The application owns MPI then
 * and finalizes it. PG_ERR_STATE when MPI is initialized already; when the
 * bootstrap fails (the message names the missing ranks, or a variable and
 * its value; MPI is then not initialized); and when MPI's world is 1 while the
 * launcher says N (MPI is then initialized). PG_ERR_BACKEND when
 * MPI_Init_thread fails. */
PG_API pg_status pg_mpi_init(int required, int *provided);

/** Rank 0 of a job of `size` processes that no MPI launcher started: opens
 * the job's rendezvous on `host` (NULL or "": PGS_BOOTSTRAP_ADDR's host, else
 * this machine's address on the route to MASTER_ADDR) and a free port
 * (PGS_BOOTSTRAP_ADDR's port when set), admitting only processes that prove
 * `secret` (16 to 1024 printable characters, no spaces). Writes where the
 * others reach it, "host:port", into address (truncated to len). Call before
 * MPI is initialized, once per process; then pg_bootstrap_join like every
 * rank. PG_ERR_STATE when MPI is initialized or a rendezvous is open already;
 * PG_ERR_INVALID_ARGUMENT when the address cannot be listened on;
 * PG_ERR_UNSUPPORTED in a build against Open MPI (docs/launch.md). */
PG_API pg_status pg_bootstrap_listen(int size, const char *host, const char *secret, char *address,
                                     size_t len);

/** Every rank of such a job: joins the rendezvous at `address` (what rank 0's
 * pg_bootstrap_listen wrote) as `rank` of `size`, proving `secret`, and brings
 * MPI up (MPI_THREAD_MULTIPLE; the library finalizes it at exit). Collective
 * over the job: returns once all `size` processes arrived, or fails on every
 * one that did, naming the ranks that did not arrive within
 * PGS_BOOTSTRAP_TIMEOUT (PG_ERR_TIMEOUT), or what disagreed (two processes
 * with one rank, different sizes, a wrong secret: PG_ERR_INVALID_ARGUMENT).
 * From then on a process of the job that dies before finalizing MPI, or calls
 * MPI_Abort, ends every process of the job (docs/launch.md). PG_OK at once
 * when MPI already runs with `size` processes, or `size` is 1 (MPI starts as
 * one process); PG_ERR_STATE when MPI runs with another size. */
PG_API pg_status pg_bootstrap_join(int rank, int size, const char *address, const char *secret);
/** @} */

/** @defgroup memory Communication buffers (collective)
 * @{ */

/** Allocate a communication buffer of `bytes` (sizes may differ between ranks).
 * Collective over the strategy: every rank calls it, in the same order, and
 * every rank returns the same status (PG_ERR_NO_MEMORY when any rank could not
 * allocate; then no rank keeps memory).
 *
 * CUDA: device memory on the strategy's GPU.
 * CPU: memory in an MPI-3 shared window of the node (the ranks of the node
 * allocate together). Any backend can use it like any memory; the fairring
 * backend reads other ranks' buffers in it in place, so collectives whose send
 * and receive buffers lie in such memory skip the copy into shared memory and
 * the final copy out of it (about 1.5x the bandwidth on large allreduces).
 * Use it for buffers reused across many large collectives (gradient buckets,
 * halo exchange buffers); a window per call costs a collective. Node-wide
 * shared memory (/dev/shm on Linux) bounds what a node can allocate. */
PG_API pg_status pg_mem_alloc(pg_strategy *s, size_t bytes, void **ptr);
/** Free a buffer from pg_mem_alloc on this strategy (collective, like the
 * allocation; NULL is fine). pg_strategy_destroy frees what is left. */
PG_API pg_status pg_mem_free(pg_strategy *s, void *ptr);
/** @} */

/** @defgroup collectives Blocking collectives (collective over the strategy)
 * In place: see each call. Root-only buffers may be NULL on other ranks.
 * @{ */

/** recvbuf[i] = op over ranks of sendbuf[i]. In place: sendbuf == recvbuf. */
PG_API pg_status pg_allreduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                              pg_dtype dtype, pg_op op);

/** buf on every rank = buf on root. */
PG_API pg_status pg_broadcast(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int root);

/** recvbuf (root only) = op over ranks of sendbuf. In place at the root: sendbuf == recvbuf. */
PG_API pg_status pg_reduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                           pg_dtype dtype, pg_op op, int root);

/** recvbuf[r*sendcount ...] = sendbuf of rank r. recvbuf holds size*sendcount
 * elements. In place: sendbuf == recvbuf + rank*sendcount*size. */
PG_API pg_status pg_allgather(pg_strategy *s, const void *sendbuf, void *recvbuf,
                              size_t sendcount, pg_dtype dtype);

/** recvbuf = block `rank` (recvcount elements) of the reduction over ranks of
 * sendbuf (size*recvcount elements). In place: recvbuf == sendbuf + rank*recvcount*size;
 * the other blocks of sendbuf are undefined afterwards. */
PG_API pg_status pg_reduce_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf,
                                   size_t recvcount, pg_dtype dtype, pg_op op);

/** Block p of sendbuf (count elements) goes to rank p, landing in block `rank`
 * of its recvbuf. In place: sendbuf == recvbuf (the library stages). */
PG_API pg_status pg_alltoall(pg_strategy *s, const void *sendbuf, void *recvbuf,
                             size_t count, pg_dtype dtype);

/** recvbuf (root only, size*sendcount elements)[r*sendcount ...] = sendbuf of rank r.
 * In place at the root: sendbuf == recvbuf + root*sendcount*size. */
PG_API pg_status pg_gather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                           pg_dtype dtype, int root);

/** recvbuf = block `rank` of sendbuf (root only, size*recvcount elements).
 * In place at the root: recvbuf == sendbuf + root*recvcount*size. */
PG_API pg_status pg_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                            pg_dtype dtype, int root);

PG_API pg_status pg_barrier(pg_strategy *s);

/** @name Uneven (v) collectives
 * The counts and displacements are in elements (size_t), one per rank: arrays
 * of pg_strategy_size(s) entries. The library copies them when the call is
 * made, so only the data buffers must stay valid until a nonblocking work
 * completes. Receive blocks must not overlap; send blocks may. Argument errors
 * (PG_ERR_INVALID_ARGUMENT) name the argument and the index: a NULL array
 * where it is read, a block whose displacement + count overflows or runs past
 * the end of memory, overlapping receive blocks, sendcount != recvcounts[rank],
 * send and receive buffers that overlap outside the in-place layout. With
 * PGS_DEBUG=detail the counts each rank expects from each peer are checked
 * against what that peer sends before anything runs; a mismatch fails every
 * rank with PG_ERR_MISMATCH naming the pair, and the strategy stays usable.
 * @{ */

/** recvbuf + displs[r] (elements) receives recvcounts[r] elements from rank r;
 * sendcount == recvcounts[rank]. In place: sendbuf == recvbuf + displs[rank]*size. */
PG_API pg_status pg_allgatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                               const size_t *recvcounts, const size_t *displs, pg_dtype dtype);

/** sendbuf holds sum(recvcounts) elements; block r (starting at the sum of
 * recvcounts[0..r-1]) reduced over ranks lands in recvbuf (recvcounts[rank]
 * elements) on rank r. recvcounts must be the same on every rank. In place:
 * recvbuf == sendbuf + (recvcounts[0] + ... + recvcounts[rank-1])*size; the other
 * blocks of sendbuf are undefined afterwards. */
PG_API pg_status pg_reduce_scatterv(pg_strategy *s, const void *sendbuf, void *recvbuf,
                                    const size_t *recvcounts, pg_dtype dtype, pg_op op);

/** sendcounts[p] elements at sendbuf + sdispls[p] go to rank p, landing at
 * recvbuf + rdispls[rank] there; recvcounts[q] elements arrive from rank q at
 * recvbuf + rdispls[q]. In place: sendbuf == recvbuf (the library stages the
 * blocks sendcounts and sdispls describe on CPU; CUDA backends get the call
 * as it is). */
PG_API pg_status pg_alltoallv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts,
                              const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                              const size_t *rdispls, pg_dtype dtype);

/** The root's recvbuf + displs[r] receives recvcounts[r] elements from rank r
 * (sendcount there). The count and displacement arrays and recvbuf are read at
 * the root only (NULL elsewhere). In place at the root:
 * sendbuf == recvbuf + displs[root]*size. */
PG_API pg_status pg_gatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                            const size_t *recvcounts, const size_t *displs, pg_dtype dtype, int root);

/** recvbuf (recvcount elements) = sendcounts[rank] elements at the root's
 * sendbuf + displs[rank]. sendbuf and the arrays are read at the root only
 * (NULL elsewhere). In place at the root: recvbuf == sendbuf + displs[root]*size. */
PG_API pg_status pg_scatterv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts,
                             const size_t *displs, void *recvbuf, size_t recvcount, pg_dtype dtype,
                             int root);
/** @} */

/** Point-to-point (local to the pair). tag >= 0. A receive's peer may be
 * PG_ANY_SOURCE: the first matching message from any rank (MPI_ANY_SOURCE), on
 * the mpi backend and on those whose point-to-point it serves (fairring, a
 * table without send and recv); others return PG_ERR_UNSUPPORTED at the call.
 * A nonblocking receive then names the sender through pg_work_source. */
#define PG_ANY_SOURCE (-1)
PG_API pg_status pg_send(pg_strategy *s, const void *buf, size_t count, pg_dtype dtype, int peer,
                         int tag);
PG_API pg_status pg_recv(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int peer,
                         int tag);
/** Send to dest and receive from source at once (halo exchange); buffers must not overlap. */
PG_API pg_status pg_sendrecv(pg_strategy *s, const void *sendbuf, size_t sendcount, int dest,
                             void *recvbuf, size_t recvcount, int source, pg_dtype dtype, int tag);
/** @} */

/** @defgroup nonblocking Nonblocking twins
 * Same arguments as the blocking call plus a trailing `pg_work **work`. Buffers
 * must stay valid and untouched until the work completes (the count and
 * displacement arrays of the v-collectives are copied: they need not).
 * Collectives on one strategy, blocking and nonblocking, start in the order
 * they are called and complete in that order (a collective work is finished
 * only once those started before it are), the same on every rank; blocking
 * collectives the library runs itself (pg_mem_alloc, pg_mem_free,
 * pg_strategy_split) come after the collective works started before them.
 * Point-to-point calls are not ordered with collectives, as in MPI: a send or
 * receive never waits for a collective, so a rank may receive before it joins
 * a collective that its peer started before sending. Sends are posted in the
 * order they are called, and so are receives (MPI's non-overtaking rule).
 * Calls for which the backend has no nonblocking entry run its blocking one on
 * a thread of the strategy (one for collectives, one for sends, one for
 * receives) when MPI's thread level is MPI_THREAD_MULTIPLE; below it such a
 * call completes before returning. docs/architecture.md ("Running an
 * operation") says which thread moves a work, and when.
 * A nonblocking call does not match its blocking twin (as in MPI): every rank
 * must make the same call. With PGS_DEBUG=detail a rank that makes the other
 * one fails every rank with PG_ERR_MISMATCH instead of deadlocking.
 * Using a work after pg_work_free, or a strategy after pg_strategy_destroy,
 * is undefined (as for MPI's handles).
 * @{ */
PG_API pg_status pg_iallreduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                               pg_dtype dtype, pg_op op, pg_work **work);
PG_API pg_status pg_ibroadcast(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int root,
                               pg_work **work);
PG_API pg_status pg_ireduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                            pg_dtype dtype, pg_op op, int root, pg_work **work);
PG_API pg_status pg_iallgather(pg_strategy *s, const void *sendbuf, void *recvbuf,
                               size_t sendcount, pg_dtype dtype, pg_work **work);
PG_API pg_status pg_ireduce_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf,
                                    size_t recvcount, pg_dtype dtype, pg_op op, pg_work **work);
PG_API pg_status pg_ialltoall(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                              pg_dtype dtype, pg_work **work);
PG_API pg_status pg_igather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                            pg_dtype dtype, int root, pg_work **work);
PG_API pg_status pg_iscatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                             pg_dtype dtype, int root, pg_work **work);
PG_API pg_status pg_ibarrier(pg_strategy *s, pg_work **work);
PG_API pg_status pg_iallgatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                                const size_t *recvcounts, const size_t *displs, pg_dtype dtype,
                                pg_work **work);
PG_API pg_status pg_ireduce_scatterv(pg_strategy *s, const void *sendbuf, void *recvbuf,
                                     const size_t *recvcounts, pg_dtype dtype, pg_op op,
                                     pg_work **work);
PG_API pg_status pg_ialltoallv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts,
                               const size_t *sdispls, void *recvbuf, const size_t *recvcounts,
                               const size_t *rdispls, pg_dtype dtype, pg_work **work);
PG_API pg_status pg_igatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                             const size_t *recvcounts, const size_t *displs, pg_dtype dtype, int root,
                             pg_work **work);
PG_API pg_status pg_iscatterv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts,
                              const size_t *displs, void *recvbuf, size_t recvcount, pg_dtype dtype,
                              int root, pg_work **work);
PG_API pg_status pg_isend(pg_strategy *s, const void *buf, size_t count, pg_dtype dtype, int peer,
                          int tag, pg_work **work);
PG_API pg_status pg_irecv(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int peer,
                          int tag, pg_work **work);

/** Wait for a work. timeout_seconds < 0, infinite, or above 1e9 (about 31
 * years) waits forever; NaN is PG_ERR_INVALID_ARGUMENT. PG_ERR_TIMEOUT when the
 * time runs out: the work stays valid, wait again. Otherwise the work's own
 * status (PG_OK, or the failure of the operation). After MPI_Finalize a work
 * that had not finished returns PG_ERR_STATE: it can no longer finish. */
PG_API pg_status pg_work_wait(pg_work *w, double timeout_seconds);

/** *done = 1 when finished (then the status is the work's own), else 0 and PG_OK. */
PG_API pg_status pg_work_test(pg_work *w, int *done);

/** The rank a finished receive's message came from (its peer, or the sender
 * when it was PG_ANY_SOURCE). PG_ERR_STATE before the work finished, or for a
 * work that is not a receive (or whose sender is not known: a receive queued
 * behind a backend without native nonblocking calls). */
PG_API pg_status pg_work_source(pg_work *w, int *source);

/** Free a finished work. NULL is fine. Unfinished work: PG_ERR_STATE, nothing freed. */
PG_API pg_status pg_work_free(pg_work *w);
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* PG_STRATEGY_H */
