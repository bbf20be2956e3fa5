/* Support for multi-rank tests: checks that record failures and go on, a hang
 * watchdog, and a verdict every rank agrees on. */
#ifndef PG_TEST_H
#define PG_TEST_H

#include <mpi.h>
#include <stdio.h>

#include "pg_strategy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exit code CTest reports as skipped (SKIP_RETURN_CODE). */
#define PG_TEST_SKIP 77

/* Arms a watchdog from PG_TEST_WATCHDOG (seconds, set by pg_add_mpi_test): a
 * hung test prints where it was and exits non-zero before CTest's TIMEOUT. */
void pg_test_watchdog(const char *test_name);
/* Records the current step for the watchdog's message. */
void pg_test_step(const char *fmt, ...);
/* Records a failure (rank-prefixed message on stderr); returns cond. */
int pg_test_check(int cond, const char *file, int line, const char *fmt, ...);
/* Local failures so far. */
int pg_test_failures(void);
/* Every rank of comm agrees: returns 0 when all passed, 1 otherwise; rank 0
 * prints the verdict. Collective. */
int pg_test_verdict(MPI_Comm comm, const char *test_name);

/* Registers "plain": a CPU backend with only a blocking allreduce (int32 and
 * float64 sums; other pairs are declined), so that its nonblocking calls run
 * on the library's progress thread and everything else on the default backend. */
pg_status pg_test_register_plain(void);

/* Checks that record a failure and go on (the library's PG_CHECK returns early). */
#define PG_TEST_TRUE(cond, ...) pg_test_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define PG_TEST_STATUS(call, expected)                                                  \
  do {                                                                                  \
    pg_status got_ = (call);                                                            \
    pg_test_check(got_ == (expected), __FILE__, __LINE__, "%s returned %s, expected %s: %s", \
                  #call, pg_status_name(got_), pg_status_name(expected), pg_last_error());   \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
