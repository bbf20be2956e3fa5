// The strategy object and the work object behind the opaque C handles.
#pragma once

#include <atomic>
#include <bitset>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/alarm.h"
#include "core/backend.h"
#include "core/instance.h"
#include "core/memory.h"
#include "core/engine.h"
#include "core/selection.h"
#include "core/settings.h"
#include "core/watchdog.h"
#include "topology/layout.h"

namespace pg::trace {
class Recorder;
}

namespace pg {

// Whether a strategy can still be used: poisoned for good after a backend
// failure or a watchdog timeout (every call but destroy is then PG_ERR_STATE).
class Health {
 public:
  bool poisoned() const { return poisoned_; }
  std::string reason() const;
  // The first reason stays.
  void poison(const std::string &reason);

 private:
  std::atomic<bool> poisoned_{false};
  mutable std::mutex mutex_;
  std::string reason_;
};

// Which instance runs a call (route.cpp): the selected backend, or the device
// default (pg_default_backend's for the device) for the operations delegated
// to it, which the selected backend has no entry for, and for single calls
// the selected backend declines (PG_ERR_UNSUPPORTED before communicating).
struct Routes {
  std::unique_ptr<Instance> selected;
  // Made at creation when an operation is delegated, else at the first
  // declined call (on the collectives lane: every rank declines alike).
  std::unique_ptr<Instance> device_default;
  std::bitset<kCollCount> delegated;  // set at creation
  std::bitset<kCollCount> declined;   // a call was declined (pg_strategy_describe says so)
};

}  // namespace pg

// The object behind the opaque handle. Its parts are grouped by the one part
// of the library that writes each after creation.
struct pg_strategy {
  // What it is: set at creation (strategy.cpp), read-only afterwards.
  pg::Device device;
  std::string device_name;  // "cpu", "cuda:1"
  pg::Selection selection;
  pg::Settings settings;             // the library's PGS_* values, agreed at creation
  pg::SettingsMap backend_settings;  // the built-in backends' own, agreed at creation
  MPI_Comm comm = MPI_COMM_NULL;  // the library's own duplicate: agreement, checks
  // Backend instances are duplicated from this one, which no check uses: the
  // device default may be made on a lane's worker while the caller checks on `comm`.
  MPI_Comm instance_comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_ub = 32767;              // MPI_TAG_UB of comm
  pg::topology::Layout layout;     // the library's own node/rail communicators
  std::string placement;           // binding/GPU/NIC summary from the topology
  std::string waiting;             // the wait rule chosen at creation, and why
  void *stream = nullptr;          // set by pg_strategy_set_stream

  pg::Routes routes;               // which instance runs a call (route.cpp)
  pg::Engine engine{this};         // the works of its operations (engine.cpp)
  std::uint64_t sequence = 0;      // collectives issued (check.cpp), for the checks and the watchdog
  pg::Memory memory;               // pg_mem_alloc's buffers (c_api.cpp)

  // Its health. Poisoned by route.cpp, the watchdog and pg_strategy_abort.
  pg::Health health;
  // How this rank learns that a peer failed or aborted, and tells them when it
  // does (core/alarm.h); raised by route.cpp and pg_strategy_abort.
  std::unique_ptr<pg::Alarm> alarm;
  // Set by pg_strategy_abort, from any thread: the waits of every call in
  // flight on the strategy end (util/poll.h, CancelScope).
  std::atomic<bool> aborted{false};
  std::shared_ptr<pg::trace::Recorder> trace;  // the flight recorder (PGS_TRACE), or null
  // The collective in flight on the caller's thread [0] and on the
  // collectives lane's worker [1] (watchdog.cpp): each thread writes only its own.
  pg::watchdog::Marks marks[2];
};

namespace pg {

// The one usability check of every entry point that uses a strategy (and of
// queued work when it runs): PG_ERR_STATE, the message starting with `fn`,
// once MPI is finalized or the strategy is poisoned.
pg_status check_usable(const char *fn, const pg_strategy *s);

// Creation (collective over comm). Every rank returns the same status.
pg_status create_strategy(const char *device, const char *backend, MPI_Comm comm, pg_strategy **out);
pg_status split_strategy(pg_strategy *s, int color, int key, pg_strategy **out);
pg_status destroy_strategy(pg_strategy *s);
// pg_strategy_abort: local, callable from any thread.
void abort_strategy(pg_strategy *s);
pg_status describe_strategy(const pg_strategy *s, std::string *out);
// The device default instance, made on first need (collective).
pg_status make_device_default(pg_strategy *s);

}  // namespace pg
