/* Backends registered at run time as tables. "random_table": a few
 * operations over MPI on the communicator the library hands it, declining some
 * dtype/op pairs call by call so that those calls run on the device default
 * (pg_backend.h), a native nonblocking allreduce, and nothing else (every other
 * operation falls back). "random_blocking": its blocking allreduce, send and
 * recv alone, so that its nonblocking allreduces and all its point-to-point
 * run on the library's progress thread. The pairs they take reduce exactly
 * with MPI's own operations on the test's inputs (tests/random/calls.cpp). */
#include "table_backend.h"

#include <limits.h>
#include <stdlib.h>

#include "pg_backend.h"

static pg_status from_mpi(int rc) { return rc == MPI_SUCCESS ? PG_OK : PG_ERR_BACKEND; }

static pg_status table_create(const pg_backend_context *ctx, void *user_data, void **state) {
  (void)user_data;
  *state = (void *)ctx; /* valid until destroy */
  return PG_OK;
}

/* Reductions it takes: 32/64-bit integers and float32/float64 with sum and
 * product, bitwise operators on the integers, min/max on the signed integers
 * only (MPICH 4.0.2 compares unsigned ones as signed; floats have NaN and
 * signed zeros, which MPI's MIN/MAX order otherwise than the library). */
static int takes(pg_dtype dtype, pg_op op, MPI_Op *mpi_op) {
  const int integer = dtype == PG_INT32 || dtype == PG_UINT32 || dtype == PG_INT64 || dtype == PG_UINT64;
  const int floating = dtype == PG_FLOAT32 || dtype == PG_FLOAT64;
  switch (op) {
    case PG_SUM: *mpi_op = MPI_SUM; return integer || floating;
    case PG_PROD: *mpi_op = MPI_PROD; return integer || floating;
    case PG_BAND: *mpi_op = MPI_BAND; return integer;
    case PG_BOR: *mpi_op = MPI_BOR; return integer;
    case PG_BXOR: *mpi_op = MPI_BXOR; return integer;
    case PG_MIN: *mpi_op = MPI_MIN; return dtype == PG_INT32 || dtype == PG_INT64;
    case PG_MAX: *mpi_op = MPI_MAX; return dtype == PG_INT32 || dtype == PG_INT64;
    default: return 0;
  }
}

static pg_status table_allreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype, pg_op op) {
  const pg_backend_context *ctx = state;
  MPI_Op mpi_op;
  MPI_Datatype type;
  if (!takes(dtype, op, &mpi_op) || count > INT_MAX || pg_mpi_datatype(dtype, &type) != PG_OK)
    return PG_ERR_UNSUPPORTED;
  return from_mpi(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, type, mpi_op, ctx->comm));
}

static pg_status table_iallreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype, pg_op op,
                                  void **request) {
  const pg_backend_context *ctx = state;
  MPI_Op mpi_op;
  MPI_Datatype type;
  if (!takes(dtype, op, &mpi_op) || count > INT_MAX || pg_mpi_datatype(dtype, &type) != PG_OK)
    return PG_ERR_UNSUPPORTED;
  MPI_Request *r = malloc(sizeof *r);
  if (!r) return PG_ERR_NO_MEMORY;
  const int rc = MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, type, mpi_op, ctx->comm, r);
  if (rc != MPI_SUCCESS) {
    free(r);
    return PG_ERR_BACKEND;
  }
  *request = r;
  return PG_OK;
}

static pg_status table_test(void *state, void *request, int *done) {
  (void)state;
  return from_mpi(MPI_Test((MPI_Request *)request, done, MPI_STATUS_IGNORE));
}

static void table_request_free(void *state, void *request) {
  (void)state;
  free(request);
}

/* Broadcast of every type but the 16-bit floating ones (declined: the same
 * decision on every rank, since every rank has the dtype). */
static pg_status table_broadcast(void *state, void *buf, size_t count, pg_dtype dtype, int root) {
  const pg_backend_context *ctx = state;
  MPI_Datatype type;
  if (dtype == PG_FLOAT16 || dtype == PG_BFLOAT16 || count > INT_MAX || pg_mpi_datatype(dtype, &type) != PG_OK)
    return PG_ERR_UNSUPPORTED;
  return from_mpi(MPI_Bcast(buf, (int)count, type, root, ctx->comm));
}

static pg_status table_allgather(void *state, const void *send, void *recv, size_t sendcount, pg_dtype dtype) {
  const pg_backend_context *ctx = state;
  MPI_Datatype type;
  if (sendcount > INT_MAX / (size_t)ctx->size || pg_mpi_datatype(dtype, &type) != PG_OK) return PG_ERR_UNSUPPORTED;
  const char *mine = (const char *)recv + (size_t)ctx->rank * sendcount * pg_dtype_size(dtype);
  return from_mpi(MPI_Allgather((const char *)send == mine ? MPI_IN_PLACE : send, (int)sendcount, type, recv,
                                (int)sendcount, type, ctx->comm));
}

static pg_status table_barrier(void *state) {
  const pg_backend_context *ctx = state;
  return from_mpi(MPI_Barrier(ctx->comm));
}

/* Point-to-point never declines (its peer would wait on another
 * communicator): counts above INT_MAX go in pieces. */
static pg_status table_send(void *state, const void *buf, size_t count, pg_dtype dtype, int peer, int tag) {
  const pg_backend_context *ctx = state;
  MPI_Datatype type;
  if (pg_mpi_datatype(dtype, &type) != PG_OK) return PG_ERR_INTERNAL;
  const char *p = buf;
  do {
    const size_t piece = count > INT_MAX ? INT_MAX : count;
    const int rc = MPI_Send(p, (int)piece, type, peer, tag, ctx->comm);
    if (rc != MPI_SUCCESS) return PG_ERR_BACKEND;
    p += piece * pg_dtype_size(dtype);
    count -= piece;
  } while (count > 0);
  return PG_OK;
}

/* The receive polls: pg_sendrecv on a table with send and recv runs the send
 * on the library's progress thread while this runs in the caller
 * (pg_backend.h), and MPICH 4.0.2's blocking MPI_Recv from this rank itself
 * keeps a send to itself from another thread from ever matching. */
static pg_status table_recv(void *state, void *buf, size_t count, pg_dtype dtype, int peer, int tag) {
  const pg_backend_context *ctx = state;
  MPI_Datatype type;
  if (pg_mpi_datatype(dtype, &type) != PG_OK) return PG_ERR_INTERNAL;
  char *p = buf;
  do {
    const size_t piece = count > INT_MAX ? INT_MAX : count;
    MPI_Request request;
    int rc = MPI_Irecv(p, (int)piece, type, peer, tag, ctx->comm, &request), done = 0;
    while (rc == MPI_SUCCESS && !done) rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return PG_ERR_BACKEND;
    p += piece * pg_dtype_size(dtype);
    count -= piece;
  } while (count > 0);
  return PG_OK;
}

/* scatterv of every type but int8 (declined alike on every rank); the counts
 * are the root's alone, so a count above INT_MAX cannot be declined on every
 * rank and fails the call instead. */
static pg_status table_scatterv(void *state, const void *send, const size_t *sendcounts, const size_t *displs,
                                void *recv, size_t recvcount, pg_dtype dtype, int root) {
  const pg_backend_context *ctx = state;
  MPI_Datatype type;
  if (dtype == PG_INT8 || pg_mpi_datatype(dtype, &type) != PG_OK) return PG_ERR_UNSUPPORTED;
  if (recvcount > INT_MAX) return PG_ERR_BACKEND;
  int *counts = NULL, *offsets = NULL;
  const void *recv_arg = recv;
  if (ctx->rank == root) {
    counts = malloc(sizeof *counts * (size_t)ctx->size);
    offsets = malloc(sizeof *offsets * (size_t)ctx->size);
    if (!counts || !offsets) {
      free(counts);
      free(offsets);
      return PG_ERR_BACKEND;
    }
    for (int q = 0; q < ctx->size; ++q) {
      if (sendcounts[q] > INT_MAX || displs[q] > INT_MAX) {
        free(counts);
        free(offsets);
        return PG_ERR_BACKEND;
      }
      counts[q] = (int)sendcounts[q];
      offsets[q] = (int)displs[q];
    }
    if ((const char *)recv == (const char *)send + displs[root] * pg_dtype_size(dtype)) recv_arg = MPI_IN_PLACE;
  }
  const int rc = MPI_Scatterv(send, counts, offsets, type, (void *)recv_arg, (int)recvcount, type, root, ctx->comm);
  free(counts);
  free(offsets);
  return from_mpi(rc);
}

/* What both tables have: the blocking allreduce, send and recv. */
static pg_backend_ops blocking_ops(const char *name) {
  pg_backend_ops ops = pg_backend_ops_init(name, PG_DEVICE_CPU);
  ops.create = table_create;
  ops.allreduce = table_allreduce;
  ops.send = table_send;
  ops.recv = table_recv;
  return ops;
}

pg_status random_table_register(void) {
  pg_backend_ops ops = blocking_ops(RANDOM_TABLE_NAME);
  ops.broadcast = table_broadcast;
  ops.allgather = table_allgather;
  ops.barrier = table_barrier;
  ops.iallreduce = table_iallreduce;
  ops.test = table_test;
  ops.request_free = table_request_free;
  ops.scatterv = table_scatterv;
  return pg_backend_register(&ops);
}

pg_status random_blocking_register(void) {
  const pg_backend_ops ops = blocking_ops(RANDOM_BLOCKING_NAME);
  return pg_backend_register(&ops);
}
