// What every C entry point of the library shares: no C++ exception crosses into
// the caller, and strings are copied out the same way.
#pragma once

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "pg_strategy.h"
#include "util/status.h"

namespace pg {

// Runs `body`, turning an escaping exception into a status and a message named after `fn`.
template <typename F>
pg_status guarded(const char *fn, F &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(PG_ERR_NO_MEMORY, "%s: out of memory", fn);
  } catch (const std::exception &e) {
    return fail(PG_ERR_INTERNAL, "%s: internal error: %s", fn, e.what());
  } catch (...) {
    return fail(PG_ERR_INTERNAL, "%s: internal error", fn);
  }
}

// Copies `text` into buf[len], cut to fit and always terminated.
inline pg_status write_string(const char *fn, const std::string &text, char *buf, size_t len) {
  if (!buf || len == 0) return fail(PG_ERR_INVALID_ARGUMENT, "%s: buf is NULL or len is 0", fn);
  const size_t n = text.size() < len - 1 ? text.size() : len - 1;
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  return PG_OK;
}

}  // namespace pg
