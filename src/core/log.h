// The library's logger: PGS_LOG chooses the level; lines go to stderr,
// prefixed with the world rank.
#pragma once

#include "core/params.h"

namespace pg::log {

void set_level(params::LogLevel level);
bool enabled(params::LogLevel level);
void write(params::LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The pg_backend_context.log entry.
void from_backend(int level, const char *message);

}  // namespace pg::log

#define PG_LOG(level, ...)                                                    \
  do {                                                                        \
    if (::pg::log::enabled(::pg::params::LogLevel::level))                    \
      ::pg::log::write(::pg::params::LogLevel::level, __VA_ARGS__);           \
  } while (0)
