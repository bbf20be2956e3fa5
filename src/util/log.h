// The library's logger: PGS_LOG chooses the level; lines go to stderr,
// prefixed with the world rank.
#pragma once

#include <string>

#include "util/params.h"

namespace pg::log {

void set_level(params::LogLevel level);
// The world rank of this process, for the prefix, when it is known before MPI
// knows it (the bootstrap's); otherwise the first line after MPI_Init asks MPI.
void set_world_rank(int rank);

// A second name for this process in every line's prefix ("[pgstrategy 0,
// slurm rank 2]"), for when MPI's rank alone does not tell processes apart.
void set_process_tag(const std::string &tag);
bool enabled(params::LogLevel level);
void write(params::LogLevel level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The pg_backend_context.log entry.
void from_backend(int level, const char *message);

// While alive, collects the error lines backends log in this thread, so a
// failing backend call can say why (backends cannot set pg_last_error).
class Capture {
 public:
  Capture();
  ~Capture();
  Capture(const Capture &) = delete;
  Capture &operator=(const Capture &) = delete;
  const std::string &text() const { return text_; }

 private:
  friend void from_backend(int, const char *);
  std::string text_;
  Capture *outer_;
};

}  // namespace pg::log

#define PG_LOG(level, ...)                                                    \
  do {                                                                        \
    if (::pg::log::enabled(::pg::params::LogLevel::level))                    \
      ::pg::log::write(::pg::params::LogLevel::level, __VA_ARGS__);           \
  } while (0)
