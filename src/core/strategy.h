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
#include "core/progress.h"
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

}  // namespace pg

// The object behind the opaque handle. Its parts are set at creation by
// strategy.cpp and then owned as commented.
struct pg_strategy {
  pg::Device device;
  std::string device_name;  // "cpu", "cuda:1"
  pg::Selection selection;
  pg::Settings settings;             // the library's PGS_* values, agreed at creation
  pg::SettingsMap backend_settings;  // the built-in backends' own, agreed at creation
  MPI_Comm comm = MPI_COMM_NULL;  // the library's own duplicate: agreement, checks
  // Backend instances are duplicated from this one: a fallback may be created on
  // the progress thread while the caller's thread runs checks on `comm`.
  MPI_Comm instance_comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_ub = 32767;              // MPI_TAG_UB of comm
  pg::topology::Layout layout;     // the library's own node/rail communicators
  std::string placement;           // binding/GPU/NIC summary from the topology
  std::string waiting;             // the wait rule chosen at creation, and why
  void *stream = nullptr;          // set by pg_strategy_set_stream

  // Routing (route.cpp) picks between these; the fallback is made there on first need.
  std::unique_ptr<pg::Instance> primary;
  std::unique_ptr<pg::Instance> fallback;  // the device default
  std::bitset<pg::kCollCount> lacks;       // operations the backend has no entry for
  std::bitset<pg::kCollCount> delegated;   // operations the backend declined at least once
  bool primary_polls = true;               // primary->backend->polls(), read by every blocking call

  pg::Progress progress;           // queued nonblocking work (route.cpp)
  // Works not yet freed, by start number; destroy finishes them first, in order.
  std::map<std::uint64_t, pg_work *> works;
  // Held while `works` changes, and while another thread's wait walks it.
  std::mutex works_mutex;
  // The thread that called into the strategy last: its waits on anything
  // else move the strategy's works too (complete.cpp).
  std::atomic<std::thread::id> driver{};
  std::uint64_t works_started = 0;
  pg::Memory memory;               // pg_mem_alloc's buffers (c_api.cpp)
  std::uint64_t sequence = 0;      // collectives issued (check.cpp), for the checks and the watchdog

  pg::Health health;               // poisoned by route.cpp and the watchdog
  // How this rank learns that a peer failed or aborted, and tells them when it
  // does (core/alarm.h); raised by route.cpp and pg_strategy_abort.
  std::unique_ptr<pg::Alarm> alarm;
  // Set by pg_strategy_abort, from any thread: the waits of every call in
  // flight on the strategy end (util/poll.h, CancelScope).
  std::atomic<bool> aborted{false};
  // pg_strategy_abort calls under way: destroy, which an abort may end while
  // it waits for the peers, frees nothing before they returned.
  std::atomic<int> aborting{0};
  std::shared_ptr<pg::trace::Recorder> trace;  // the flight recorder (PGS_TRACE), or null
  // The collective in flight on the caller's thread [0] and on the progress
  // thread [1] (watchdog.cpp): each thread writes only its own.
  pg::watchdog::Marks marks[2];

  // Stops the progress thread (called while MPI is finalizing).
  void quiesce();
};

struct pg_work {
  pg_strategy *strategy = nullptr;               // NULL once its strategy is gone
  std::unique_ptr<pg::Request> native;           // a backend's own request, or
  std::mutex mutex;                              // ... a task on the progress thread
  std::condition_variable finished_cv;
  std::atomic<bool> finished{false};             // set under `mutex`; read by the waits without it
  // A native work that a queued task adopted: the progress thread moves it
  // to its end (complete.cpp); the caller's thread no longer tests it.
  bool adopted = false;
  // A thread is polling its request: no other (a progress hook) tests it meanwhile.
  std::atomic<bool> driving{false};
  pg_status status = PG_OK;
  std::string error;
  int source = -1;                               // a finished receive's sender, when known
  std::vector<char> stage;                       // staging for in-place alltoall
  pg::watchdog::Watch watch;                     // a native collective under PGS_TIMEOUT
  std::uint64_t order = 0;                       // start number on its strategy
  bool collective = false;                       // not point-to-point
  std::uint64_t trace_seq = 0;                   // its entry in the flight recorder, 0 when off
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
// The device default instance, created on first need (collective).
pg_status ensure_fallback(pg_strategy *s);
// Whether `coll` always runs on the device default (the backend lacks it); a
// backend that declines single calls is asked again each time.
bool delegates(const pg_strategy *s, Coll coll);

}  // namespace pg
