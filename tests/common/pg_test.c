#define _POSIX_C_SOURCE 200809L
#include "pg_test.h"

#include "pg_backend.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
static char step[256] = "start";
static char name[128] = "test";

static void on_alarm(int sig) {
  (void)sig;
  /* Only async-signal-safe calls here. */
  static const char prefix[] = "pg_test watchdog: hung test '";
  ssize_t ignored = write(STDERR_FILENO, prefix, sizeof prefix - 1);
  ignored = write(STDERR_FILENO, name, strlen(name));
  ignored = write(STDERR_FILENO, "' at step: ", 11);
  ignored = write(STDERR_FILENO, step, strlen(step));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  _exit(3);
}

void pg_test_watchdog(const char *test_name) {
  snprintf(name, sizeof name, "%s", test_name);
  const char *value = getenv("PG_TEST_WATCHDOG");
  int seconds = value ? atoi(value) : 0;
  if (seconds <= 0) return;
  /* Fire a little before CTest's TIMEOUT so the message is seen. */
  if (seconds > 10) seconds -= 5;
  signal(SIGALRM, on_alarm);
  alarm((unsigned)seconds);
}

void pg_test_step(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(step, sizeof step, fmt, ap);
  va_end(ap);
  if (getenv("PG_TEST_VERBOSE")) fprintf(stderr, "step: %s\n", step);
}

int pg_test_check(int cond, const char *file, int line, const char *fmt, ...) {
  if (cond) return 1;
  int rank = -1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char message[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rank %d] FAIL %s:%d (step: %s): %s\n", rank, file, line, step, message);
  fflush(stderr);
  ++failures;
  return 0;
}

int pg_test_failures(void) { return failures; }

int pg_test_verdict(MPI_Comm comm, const char *test_name) {
  int local = failures == 0, all = 0, rank = 0, size = 0;
  MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank == 0) printf("%s on %d ranks: %s\n", test_name, size, all ? "PASSED" : "FAILED");
  /* Out before MPI_Finalize, which may hang (docs/known-issues.md): the
   * cluster tests go by this line. */
  fflush(stdout);
  return all ? 0 : 1;
}

static pg_status plain_create(const pg_backend_context *ctx, void *user, void **state) {
  (void)user;
  *state = (void *)ctx;
  return PG_OK;
}

static pg_status plain_allreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                                 pg_op op) {
  const pg_backend_context *ctx = state;
  if (op != PG_SUM || (dtype != PG_INT32 && dtype != PG_FLOAT64)) return PG_ERR_UNSUPPORTED;
  return MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count,
                       dtype == PG_INT32 ? MPI_INT32_T : MPI_DOUBLE, MPI_SUM, ctx->comm) == MPI_SUCCESS
             ? PG_OK
             : PG_ERR_BACKEND;
}

pg_status pg_test_register_plain(void) {
  pg_backend_ops ops = pg_backend_ops_init("plain", PG_DEVICE_CPU);
  ops.create = plain_create;
  ops.allreduce = plain_allreduce;
  return pg_backend_register(&ops);
}
