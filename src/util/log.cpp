#include "util/log.h"

#include <mpi.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace pg::log {
namespace {
std::atomic<int> g_level{static_cast<int>(params::LogLevel::error)};
thread_local Capture *t_capture = nullptr;
// Set at most a few times per process; the strings are never freed, so a line
// being written on another thread can still read the previous one.
std::atomic<const std::string *> g_tag{nullptr};

// Once known, kept: a thread that logs while another is inside MPI_Finalize
// (the bootstrap's PMI relay answers its "finalize") must not ask MPI, which
// aborts on a world it is tearing down.
std::atomic<int> g_rank{-1};

int world_rank() {
  const int known = g_rank.load();
  if (known >= 0) return known;
  int initialized = 0, finalized = 0, rank = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank >= 0) g_rank.store(rank);
  return rank;
}
}  // namespace

void set_level(params::LogLevel level) { g_level.store(static_cast<int>(level)); }

void set_world_rank(int rank) { g_rank.store(rank); }

void set_process_tag(const std::string &tag) { g_tag.store(new std::string(", " + tag)); }

bool enabled(params::LogLevel level) { return static_cast<int>(level) <= g_level.load(); }

void write(params::LogLevel level, const char *fmt, ...) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  char message[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  // One fprintf per line, so lines of different threads do not interleave.
  const std::string *tag = g_tag.load();
  std::fprintf(stderr, "[pgstrategy %d%s] %s: %s\n", world_rank(), tag ? tag->c_str() : "",
               names[static_cast<int>(level)], message);
}

void from_backend(int level, const char *message) {
  if (level < 0) level = 0;
  if (level > 3) level = 3;
  auto l = static_cast<params::LogLevel>(level);
  if (enabled(l)) write(l, "%s", message ? message : "(null)");
  if (t_capture && l == params::LogLevel::error && message)
    t_capture->text_ += (t_capture->text_.empty() ? "" : "; ") + std::string(message);
}

Capture::Capture() : outer_(t_capture) { t_capture = this; }

Capture::~Capture() { t_capture = outer_; }

}  // namespace pg::log
