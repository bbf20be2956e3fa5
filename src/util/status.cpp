#include "util/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pg {
namespace {
thread_local std::string t_last_error;
}

const char *status_name(pg_status status) {
  switch (status) {
#define PG_STATUS_CASE(name) \
  case name:                 \
    return #name;
    PG_STATUS_LIST(PG_STATUS_CASE)
#undef PG_STATUS_CASE
  }
  return "PG_STATUS_UNKNOWN";
}

bool known_status(int value) {
  switch (value) {
#define PG_STATUS_KNOWN(name) case name:
    PG_STATUS_LIST(PG_STATUS_KNOWN)
#undef PG_STATUS_KNOWN
    return true;
  }
  return false;
}

pg_status fail_message(pg_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

pg_status fail(pg_status status, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return fail_message(status, buf);
}

const std::string &last_error() { return t_last_error; }

pg_status mpi_failure(int code, const char *call, const char *file, int line) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "MPI error %d", code);
  const char *base = std::strrchr(file, '/');
  return fail(PG_ERR_BACKEND, "%s failed (%s:%d): %s", call, base ? base + 1 : file, line, text);
}

}  // namespace pg
