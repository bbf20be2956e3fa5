#include "core/watchdog.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "core/runtime.h"
#include "core/strategy.h"

namespace pg::watchdog {
namespace {

void watch_loop() {
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Aborting under the lock keeps the strategy from being destroyed meanwhile.
    runtime::for_each_live([](pg_strategy *s) {
      if (expired(s)) abort_job(s);
    });
  }
}

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool overdue(const pg_strategy *s, const Watch &watch) {
  return watch.started_ns != 0 && s->settings.timeout_s > 0 &&
         static_cast<double>(now_ns() - watch.started_ns) * 1e-9 > s->settings.timeout_s;
}

void abort_job(pg_strategy *s, const Watch &watch) {
  s->watch_coll = static_cast<int>(watch.coll);
  s->watch_sequence = watch.sequence;
  abort_job(s);
}

void begin(pg_strategy *s, Coll coll) {
  if (s->settings.timeout_s <= 0) return;
  s->watch_coll = static_cast<int>(coll);
  s->watch_sequence = s->sequence;
  s->watch_started_ns = now_ns();
  if (runtime::thread_level() == MPI_THREAD_MULTIPLE) {
    static std::once_flag once;
    std::call_once(once, [] { std::thread(watch_loop).detach(); });
  }
}

void end(pg_strategy *s) { s->watch_started_ns = 0; }

bool expired(const pg_strategy *s) {
  std::int64_t started = s->watch_started_ns;
  return started != 0 && s->settings.timeout_s > 0 &&
         static_cast<double>(now_ns() - started) * 1e-9 > s->settings.timeout_s;
}

void abort_job(pg_strategy *s) {
  log::write(params::LogLevel::error,
             "watchdog: %s #%llu on backend '%s' (device '%s', rank %d of %d) has not finished "
             "after %g s (PGS_TIMEOUT); ranks that did not arrive are not known%s; aborting the job",
             coll_name(static_cast<Coll>(s->watch_coll.load())),
             static_cast<unsigned long long>(s->watch_sequence.load()), s->selection.backend.c_str(),
             s->device_name.c_str(), s->rank, s->size, s->settings.timeout_s,
             s->settings.debug_detail ? "" : " (PGS_DEBUG=detail checks arrival before each collective)");
  s->poisoned = true;
  if (s->primary) s->primary->backend->abort();
  if (s->fallback) s->fallback->backend->abort();
  // MPI_COMM_WORLD: MPICH 4.0.2 ends only the calling process when MPI_Abort
  // gets any other communicator, and the job would stay hung.
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; this is for an MPI that does
}

}  // namespace pg::watchdog
