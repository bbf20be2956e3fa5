// Status names, the thread-local last error, and the check macros every
// internal call goes through (NCCL's checks.h habit).
#pragma once

#include <mpi.h>

#include <string>

#include "pg_strategy.h"

// One list, so no status is ever missing a name.
#define PG_STATUS_LIST(X) \
  X(PG_OK)                \
  X(PG_ERR_INVALID_ARGUMENT) \
  X(PG_ERR_UNKNOWN_BACKEND)  \
  X(PG_ERR_UNSUPPORTED)      \
  X(PG_ERR_UNAVAILABLE)      \
  X(PG_ERR_BACKEND)          \
  X(PG_ERR_TIMEOUT)          \
  X(PG_ERR_MISMATCH)         \
  X(PG_ERR_PLUGIN)           \
  X(PG_ERR_STATE)            \
  X(PG_ERR_NO_MEMORY)        \
  X(PG_ERR_INTERNAL)         \
  X(PG_ERR_ABORTED)

namespace pg {

const char *status_name(pg_status status);
// Whether `value` is one of the statuses above (a plugin's table may return anything).
bool known_status(int value);

// Sets this thread's last error and returns `status`, so a failure reads
// `return fail(PG_ERR_INVALID_ARGUMENT, "bad root %d", root);`.
pg_status fail(pg_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
pg_status fail_message(pg_status status, std::string message);
const std::string &last_error();

// An MPI error code as PG_ERR_BACKEND, with MPI's own error string.
pg_status mpi_failure(int code, const char *call, const char *file, int line);

}  // namespace pg

#define PG_CHECK(expr)                         \
  do {                                         \
    pg_status pg_check_status_ = (expr);       \
    if (pg_check_status_ != PG_OK) return pg_check_status_; \
  } while (0)

#define PG_MPI_CHECK(call)                                                    \
  do {                                                                        \
    int pg_mpi_code_ = (call);                                                \
    if (pg_mpi_code_ != MPI_SUCCESS)                                          \
      return ::pg::mpi_failure(pg_mpi_code_, #call, __FILE__, __LINE__);      \
  } while (0)
