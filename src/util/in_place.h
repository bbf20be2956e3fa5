/*
 * The in-place layouts of include/pg_strategy.h, in one place: for each
 * collective with two buffers, which one lies inside the other when the call
 * is in place, and where. The library's validation computes a call's layout
 * from these once and carries the answer with the call's arguments
 * (CollArgs::in_place); the Fortran binding's C shim, which opens one array
 * for both buffers, uses them too. C99, header-only, for both.
 */
#ifndef PG_IN_PLACE_H
#define PG_IN_PLACE_H

#include <stddef.h>

typedef enum pg_in_place_form {
  PG_IN_PLACE_NONE = 0,     /* the call has no in-place form on this rank */
  PG_IN_PLACE_SEND_IN_RECV, /* in place when sendbuf == recvbuf + offset elements */
  PG_IN_PLACE_RECV_IN_SEND  /* in place when recvbuf == sendbuf + offset elements */
} pg_in_place_form;

typedef struct pg_in_place {
  pg_in_place_form form;
  size_t offset;    /* elements */
  const char *rule; /* the layout in words, for messages */
} pg_in_place;

static inline pg_in_place pg_in_place_make(pg_in_place_form form, size_t offset, const char *rule) {
  pg_in_place p;
  p.form = form;
  p.offset = offset;
  p.rule = rule;
  return p;
}

/* Whether buffers `send` and `recv` (elements of `size` bytes) are in the layout. */
static inline int pg_in_place_holds(pg_in_place p, const void *send, const void *recv, size_t size) {
  const char *s = (const char *)send, *r = (const char *)recv;
  if (p.form == PG_IN_PLACE_SEND_IN_RECV) return r != NULL && s == r + p.offset * size;
  if (p.form == PG_IN_PLACE_RECV_IN_SEND) return s != NULL && r == s + p.offset * size;
  return 0;
}

static inline pg_in_place pg_in_place_allreduce(void) {
  return pg_in_place_make(PG_IN_PLACE_SEND_IN_RECV, 0, "sendbuf == recvbuf");
}
static inline pg_in_place pg_in_place_reduce(int rank, int root) {
  return pg_in_place_make(rank == root ? PG_IN_PLACE_SEND_IN_RECV : PG_IN_PLACE_NONE, 0,
                          "sendbuf == recvbuf at the root");
}
static inline pg_in_place pg_in_place_allgather(int rank, size_t sendcount) {
  return pg_in_place_make(PG_IN_PLACE_SEND_IN_RECV, (size_t)rank * sendcount,
                          "sendbuf == recvbuf + rank*sendcount*size");
}
static inline pg_in_place pg_in_place_reduce_scatter(int rank, size_t recvcount) {
  return pg_in_place_make(PG_IN_PLACE_RECV_IN_SEND, (size_t)rank * recvcount,
                          "recvbuf == sendbuf + rank*recvcount*size");
}
/* The library stages an in-place alltoall (CPU). */
static inline pg_in_place pg_in_place_alltoall(void) {
  return pg_in_place_make(PG_IN_PLACE_SEND_IN_RECV, 0, "sendbuf == recvbuf");
}
static inline pg_in_place pg_in_place_gather(int rank, int root, size_t sendcount) {
  return pg_in_place_make(rank == root ? PG_IN_PLACE_SEND_IN_RECV : PG_IN_PLACE_NONE, (size_t)root * sendcount,
                          "sendbuf == recvbuf + root*sendcount*size at the root");
}
static inline pg_in_place pg_in_place_scatter(int rank, int root, size_t recvcount) {
  return pg_in_place_make(rank == root ? PG_IN_PLACE_RECV_IN_SEND : PG_IN_PLACE_NONE, (size_t)root * recvcount,
                          "recvbuf == sendbuf + root*recvcount*size at the root");
}

/* The uneven (v) collectives. Displacements and counts are in elements; an
 * array that is not there (NULL: not read on this rank) gives no layout. */
static inline pg_in_place pg_in_place_allgatherv(int rank, const size_t *displs) {
  return pg_in_place_make(displs ? PG_IN_PLACE_SEND_IN_RECV : PG_IN_PLACE_NONE, displs ? displs[rank] : 0,
                          "sendbuf == recvbuf + displs[rank]*size");
}
/* Block `rank` of sendbuf starts after the blocks of the ranks before it. */
static inline pg_in_place pg_in_place_reduce_scatterv(int rank, const size_t *recvcounts) {
  size_t before = 0;
  int r;
  if (!recvcounts) return pg_in_place_make(PG_IN_PLACE_NONE, 0, "recvbuf == sendbuf + (recvcounts[0] + ... + recvcounts[rank-1])*size");
  for (r = 0; r < rank; ++r) before += recvcounts[r];
  return pg_in_place_make(PG_IN_PLACE_RECV_IN_SEND, before,
                          "recvbuf == sendbuf + (recvcounts[0] + ... + recvcounts[rank-1])*size");
}
/* The library stages an in-place alltoallv (CPU): sendcounts and sdispls
 * then describe the blocks sent out of the same buffer. */
static inline pg_in_place pg_in_place_alltoallv(void) {
  return pg_in_place_make(PG_IN_PLACE_SEND_IN_RECV, 0, "sendbuf == recvbuf");
}
static inline pg_in_place pg_in_place_gatherv(int rank, int root, const size_t *displs) {
  const int here = rank == root && displs != NULL;
  return pg_in_place_make(here ? PG_IN_PLACE_SEND_IN_RECV : PG_IN_PLACE_NONE, here ? displs[root] : 0,
                          "sendbuf == recvbuf + displs[root]*size at the root");
}
static inline pg_in_place pg_in_place_scatterv(int rank, int root, const size_t *displs) {
  const int here = rank == root && displs != NULL;
  return pg_in_place_make(here ? PG_IN_PLACE_RECV_IN_SEND : PG_IN_PLACE_NONE, here ? displs[root] : 0,
                          "recvbuf == sendbuf + displs[root]*size at the root");
}

#endif /* PG_IN_PLACE_H */
