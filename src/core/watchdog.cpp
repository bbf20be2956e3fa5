#include "core/watchdog.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/runtime.h"
#include "core/strategy.h"
#include "core/trace.h"
#include "util/log.h"

namespace pg::watchdog {
namespace {

bool watching(const pg_strategy *s) { return s->settings.timeout_s > 0; }

// At MPI_THREAD_MULTIPLE every watched collective; below it, those the
// calling thread cannot poll (Unpolled).
void watch_loop() {
  const bool multiple = runtime::thread_level() == MPI_THREAD_MULTIPLE;
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Aborting under the lock keeps the strategy from being destroyed meanwhile.
    runtime::for_each_live([multiple](pg_strategy *s) {
      for (const Marks &marks : s->marks) {
        const Watch w = marks.current();
        if ((multiple || w.unpolled) && overdue(s, w)) abort_job(s, w);
      }
    });
  }
}

void start_thread() {
  static std::once_flag once;
  std::call_once(once, [] { std::thread(watch_loop).detach(); });
}

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Marks::begin(std::uint64_t sequence, Coll coll) {
  coll_ = static_cast<int>(coll);
  sequence_ = sequence;
  started_ns_ = now_ns();  // last: the watchdog reads the others once this is set
}

void Marks::end() {
  started_ns_ = 0;
  set_missing({});
}

void Marks::set_missing(std::string ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  missing_ = std::move(ranks);
}

std::string Marks::missing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return missing_;
}

Watch Marks::current() const {
  Watch w;
  w.started_ns = started_ns_;
  w.sequence = sequence_;
  w.coll = static_cast<Coll>(coll_.load());
  w.unpolled = unpolled_;
  return w;
}

bool overdue(const pg_strategy *s, const Watch &watch) {
  return watch.started_ns != 0 && watching(s) &&
         static_cast<double>(now_ns() - watch.started_ns) * 1e-9 > s->settings.timeout_s;
}

Marks &own_marks(pg_strategy *s) { return s->marks[s->engine.lane(LaneKind::collectives).on_worker() ? 1 : 0]; }

Scope::Scope(pg_strategy *s, Coll coll, std::uint64_t sequence) {
  if (!watching(s) || is_point_to_point(coll)) return;
  marks_ = &own_marks(s);
  marks_->begin(sequence, coll);
  if (runtime::thread_level() == MPI_THREAD_MULTIPLE) start_thread();
}

Scope::~Scope() {
  if (marks_) marks_->end();
}

Unpolled::Unpolled(pg_strategy *s) : marks_(&own_marks(s)) {
  marks_->set_unpolled(true);
  start_thread();
}

Unpolled::~Unpolled() { marks_->set_unpolled(false); }

void abort_job(pg_strategy *s, const Watch &watch) {
  const std::string missing = s->marks[0].missing();  // the debug check runs on the caller's thread
  const std::string arrival =
      !missing.empty() ? "ranks that did not arrive: " + missing
      : s->settings.debug_detail ? std::string("every rank arrived (the hang is inside the backend)")
                                 : std::string("ranks that did not arrive are not known (PGS_DEBUG=detail "
                                               "records arrival before each collective)");
  log::write(params::LogLevel::error,
             "watchdog: %s #%llu on backend '%s' (device '%s', rank %d of %d) has not finished "
             "after %g s (PGS_TIMEOUT); %s; %s",
             coll_name(watch.coll), static_cast<unsigned long long>(watch.sequence),
             s->selection.backend.c_str(), s->device_name.c_str(), s->rank, s->size,
             s->settings.timeout_s, arrival.c_str(),
             watch.unpolled ? "ending this process, whose MPI call cannot be interrupted below "
                              "MPI_THREAD_MULTIPLE (its launcher ends the job)"
                            : "aborting the job");
  // The one line a user needs after a hang must reach the job's output: it is
  // flushed, and the launcher gets time to forward it before the abort ends
  // every process (without the pause it was lost in about one run of three).
  std::fflush(stderr);
  trace::dump("watchdog");  // what every strategy of this rank did last, before the job ends
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  s->health.poison("the watchdog aborted the job");
  if (s->routes.selected) s->routes.selected->backend->abort();
  if (s->routes.device_default) s->routes.device_default->backend->abort();
  // MPI_COMM_WORLD: MPICH 4.0.2 ends only the calling process when MPI_Abort
  // gets any other communicator, and the job would stay hung. Not from the
  // watchdog's thread below MPI_THREAD_MULTIPLE, while the caller is in MPI.
  if (!watch.unpolled) MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; this is for an MPI that does
}

void abort_if_overdue(pg_strategy *s, const Watch &watch) {
  if (overdue(s, watch)) abort_job(s, watch);
}

}  // namespace pg::watchdog
