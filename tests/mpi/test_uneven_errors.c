/* The uneven collectives' bad input and count checks.
 *   input     (default) every rank makes the same mistake: each call returns
 *             PG_ERR_INVALID_ARGUMENT with a message naming the argument and
 *             the index, and the strategy stays usable
 *   mismatch  under PGS_DEBUG=detail (set by the test), ranks whose counts
 *             disagree, a bad argument on one rank only, and the nonblocking
 *             twin: every rank returns the same status, the message names
 *             the pair, nothing hangs, and the strategy stays usable */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg_test.h"

enum { MAX_RANKS = 16 };

static void expect_message(const char *what, const char *needle) {
  PG_TEST_TRUE(strstr(pg_last_error(), needle) != NULL, "%s: message '%s' does not mention '%s'", what,
               pg_last_error(), needle);
}

/* The strategy still works: a correct alltoallv of one element per pair. */
static void still_usable(pg_strategy *s, const char *after) {
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  int send[MAX_RANKS], recv[MAX_RANKS];
  size_t counts[MAX_RANKS], displs[MAX_RANKS];
  for (int r = 0; r < size; ++r) {
    send[r] = rank * 100 + r;
    recv[r] = -1;
    counts[r] = 1;
    displs[r] = (size_t)r;
  }
  PG_TEST_STATUS(pg_alltoallv(s, send, counts, displs, recv, counts, displs, PG_INT32), PG_OK);
  for (int q = 0; q < size; ++q)
    PG_TEST_TRUE(recv[q] == q * 100 + rank, "after %s: alltoallv block %d is %d, expected %d", after, q, recv[q],
                 q * 100 + rank);
}

/* st must be `expected` with a message mentioning `needle` (NULL: anything). */
static void expect(pg_strategy *s, const char *what, pg_status st, pg_status expected, const char *needle) {
  pg_test_step("%s", what);
  PG_TEST_TRUE(st == expected, "%s: %s (%s), expected %s", what, pg_status_name(st), pg_last_error(),
               pg_status_name(expected));
  if (needle) expect_message(what, needle);
  still_usable(s, what);
}

static void bad_input(pg_strategy *s) {
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  const size_t me = (size_t)rank;
  double send[4 * MAX_RANKS], recv[4 * MAX_RANKS];
  size_t counts[MAX_RANKS], displs[MAX_RANKS], other[MAX_RANKS];
  for (int r = 0; r < size; ++r) counts[r] = 2, displs[r] = 3 * (size_t)r, other[r] = 2;
  const pg_status bad = PG_ERR_INVALID_ARGUMENT;

  expect(s, "allgatherv: recvcounts NULL", pg_allgatherv(s, send, 2, recv, NULL, displs, PG_FLOAT64), bad,
         "recvcounts is NULL");
  expect(s, "allgatherv: displs NULL", pg_allgatherv(s, send, 2, recv, counts, NULL, PG_FLOAT64), bad,
         "displs is NULL");
  expect(s, "allgatherv: sendcount", pg_allgatherv(s, send, 3, recv, counts, displs, PG_FLOAT64), bad,
         "sendcount is 3 but recvcounts[");
  /* Block 0 ends at element 2; block `last` starts at 1. */
  displs[size - 1] = 1;
  if (size > 1)
    expect(s, "allgatherv: overlapping receive blocks", pg_allgatherv(s, send, 2, recv, counts, displs, PG_FLOAT64),
           bad, "overlap");
  displs[size - 1] = SIZE_MAX - 1;
  expect(s, "allgatherv: a block past size_t", pg_allgatherv(s, send, 2, recv, counts, displs, PG_FLOAT64), bad,
         "overflows size_t");
  displs[size - 1] = 3 * (size_t)(size - 1);
  /* The send block inside another rank's receive block, not the in-place layout. */
  expect(s, "allgatherv: send inside a receive block",
         pg_allgatherv(s, recv + displs[(me + 1) % (size_t)size] + 1, 2, recv, counts, displs, PG_FLOAT64), bad,
         "in place means sendbuf == recvbuf + displs[rank]*size");
  expect(s, "allgatherv: recvbuf NULL", pg_allgatherv(s, send, 2, NULL, counts, displs, PG_FLOAT64), bad,
         "recvbuf is NULL");

  expect(s, "alltoallv: sdispls NULL", pg_alltoallv(s, send, counts, NULL, recv, counts, displs, PG_FLOAT64), bad,
         "sdispls is NULL");
  expect(s, "alltoallv: rdispls NULL", pg_alltoallv(s, send, counts, displs, recv, counts, NULL, PG_FLOAT64), bad,
         "rdispls is NULL");
  other[rank] = 1;
  expect(s, "alltoallv: own counts", pg_alltoallv(s, send, other, displs, recv, counts, displs, PG_FLOAT64), bad,
         "sendcounts[rank] is 1 but recvcounts[");
  other[rank] = 2;
  if (size > 1) {
    displs[1] = 1;
    expect(s, "alltoallv: overlapping receive blocks",
           pg_alltoallv(s, send, counts, displs, recv, counts, displs, PG_FLOAT64), bad, "rdispls[");
    displs[1] = 3;
  }
  expect(s, "alltoallv: send and receive overlap",
         pg_alltoallv(s, recv + 1, counts, displs, recv, counts, displs, PG_FLOAT64), bad, "overlaps receive block");

  expect(s, "reduce_scatterv: recvcounts NULL", pg_reduce_scatterv(s, send, recv, NULL, PG_FLOAT64, PG_SUM), bad,
         "recvcounts is NULL");
  expect(s, "reduce_scatterv: bad op", pg_reduce_scatterv(s, send, recv, counts, PG_INT32, PG_AVG),
         PG_ERR_UNSUPPORTED, "avg");
  other[size - 1] = SIZE_MAX / 4;
  expect(s, "reduce_scatterv: blocks past size_t", pg_reduce_scatterv(s, send, recv, other, PG_FLOAT64, PG_SUM), bad,
         "overflows size_t");
  other[size - 1] = 2;
  expect(s, "reduce_scatterv: send and receive overlap",
         pg_reduce_scatterv(s, send, send + 1 + 2 * me, counts, PG_FLOAT64, PG_SUM), bad,
         "recvbuf == sendbuf + (recvcounts[0] + ... + recvcounts[rank-1])*size");

  expect(s, "gatherv: root out of range", pg_gatherv(s, send, 2, recv, counts, displs, PG_FLOAT64, size), bad,
         "root");
  expect(s, "scatterv: root out of range", pg_scatterv(s, send, counts, displs, recv, 2, PG_FLOAT64, -1), bad, "root");
  if (size == 1) {  /* the root's arrays: with one rank no peer waits */
    expect(s, "gatherv: recvcounts NULL at the root", pg_gatherv(s, send, 2, recv, NULL, displs, PG_FLOAT64, 0), bad,
           "recvcounts is NULL");
    expect(s, "scatterv: recvcount", pg_scatterv(s, send, counts, displs, recv, 1, PG_FLOAT64, 0), bad,
           "recvcount is 1 but sendcounts[0] is 2");
  }
  pg_work *w = (pg_work *)0x1;
  expect(s, "ialltoallv: displs NULL", pg_ialltoallv(s, send, counts, NULL, recv, counts, displs, PG_FLOAT64, &w),
         bad, "sdispls is NULL");
  PG_TEST_TRUE(w == NULL, "a failed nonblocking call leaves *work NULL");
}

/* PGS_DEBUG=detail: the counts every rank expects against what its peers send. */
static void mismatches(pg_strategy *s) {
  const int size = pg_strategy_size(s), rank = pg_strategy_rank(s);
  int send[4 * MAX_RANKS], recv[4 * MAX_RANKS];
  size_t counts[MAX_RANKS], displs[MAX_RANKS];
  for (int r = 0; r < size; ++r) counts[r] = 2, displs[r] = 3 * (size_t)r;
  const int last = size - 1;

  /* Rank 0 expects 3 elements from the last rank, which sends 2. */
  if (rank == 0) counts[last] = 3;
  expect(s, "alltoallv: counts that disagree", pg_alltoallv(s, send, counts, displs, recv, counts, displs, PG_INT32),
         PG_ERR_MISMATCH, "rank 0 expects 3 elements from rank ");
  counts[last] = 2;

  /* The last rank's recvcounts say rank 0 gives 1; rank 0 gives 2. */
  if (rank == last) counts[0] = 1;
  expect(s, "allgatherv: recvcounts that disagree",
         pg_allgatherv(s, send, counts[rank], recv, counts, displs, PG_INT32), PG_ERR_MISMATCH,
         "expects 1 elements from rank 0, which sends 2");
  counts[0] = 2;

  if (rank == 1) counts[0] = 4;
  expect(s, "reduce_scatterv: recvcounts that disagree", pg_reduce_scatterv(s, send, recv, counts, PG_INT32, PG_SUM),
         PG_ERR_MISMATCH, "rank 0 expects 2 elements from rank 1, which sends 4");
  counts[0] = 2;

  /* The root (the last rank) expects 2 from rank 1, which sends 1. */
  expect(s, "gatherv: a sendcount that disagrees",
         pg_gatherv(s, send, rank == 1 ? 1 : 2, recv, rank == last ? counts : NULL, rank == last ? displs : NULL,
                    PG_INT32, last),
         PG_ERR_MISMATCH, "expects 2 elements from rank 1, which sends 1");
  expect(s, "scatterv: a recvcount that disagrees",
         pg_scatterv(s, send, rank == 0 ? counts : NULL, rank == 0 ? displs : NULL, recv, rank == 1 ? 3 : 2, PG_INT32,
                     0),
         PG_ERR_MISMATCH, "rank 1 expects 3 elements from rank 0, which sends 2");
  /* A bad argument at the root only: every rank fails alike, nobody waits. */
  expect(s, "gatherv: NULL recvcounts at the root only",
         pg_gatherv(s, send, 2, recv, NULL, rank == last ? displs : NULL, PG_INT32, last), PG_ERR_INVALID_ARGUMENT,
         "recvcounts is NULL");
  /* The nonblocking twin does not match the blocking call. */
  pg_work *w = NULL;
  pg_status st = rank == 0 ? pg_iallgatherv(s, send, 2, recv, counts, displs, PG_INT32, &w)
                           : pg_allgatherv(s, send, 2, recv, counts, displs, PG_INT32);
  if (w) pg_work_wait(w, -1), pg_work_free(w);
  expect(s, "iallgatherv against allgatherv", st, PG_ERR_MISMATCH, "iallgatherv");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "input";
  pg_test_watchdog("test_uneven_errors");
  if (strcmp(mode, "mismatch") == 0) setenv("PGS_DEBUG", "detail", 1);
  pg_strategy *s = NULL;
  PG_TEST_STATUS(pg_strategy_create("cpu", NULL, &s), PG_OK);
  if (!s) return 1;
  if (pg_strategy_size(s) > MAX_RANKS) {
    pg_strategy_destroy(s);
    return PG_TEST_SKIP;
  }
  if (strcmp(mode, "mismatch") == 0) {
    if (pg_strategy_size(s) >= 3) mismatches(s);
  } else {
    bad_input(s);
  }
  PG_TEST_STATUS(pg_strategy_destroy(s), PG_OK);
  return pg_test_verdict(MPI_COMM_WORLD, "test_uneven_errors");
}
