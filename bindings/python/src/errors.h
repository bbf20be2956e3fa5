// How the backend reports failures to torch: as DistBackendError, with the
// library's own message where a call into it failed.
#pragma once

#include <pg_strategy.h>

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <string>

namespace pgstrategy_torch {

[[noreturn]] inline void raise(const std::string &message) { C10_THROW_ERROR(DistBackendError, message); }

// The library's own message, read on the thread that made the failing call.
inline std::string library_error(const char *what, pg_status st) {
  return c10::str("pgstrategy ", what, ": ", pg_status_name(st), ": ", pg_last_error());
}

inline void check(pg_status st, const char *what) {
  if (st != PG_OK) raise(library_error(what, st));
}

}  // namespace pgstrategy_torch
