// The flight recorder (PGS_TRACE, docs/trace.md): each strategy keeps a ring
// buffer of its last PGS_TRACE_ENTRIES operations — collectives, point to
// point, creation, split, destroy and the communication buffers — with their
// arguments, the backend and algorithm that ran them, start and end times on
// a clock aligned to the strategy's rank 0, and their final status. Each rank
// writes every recorder it holds to one JSON file, pgstrategy-<job>-rank<R>.json,
// when the watchdog fires, when a strategy is poisoned, on SIGUSR1, at
// pg_strategy_destroy and at exit; pg-trace reads the files of many ranks.
//
// Off (PGS_TRACE unset) a strategy has no recorder and every hook is one
// test of a null pointer.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"

struct pg_strategy;

namespace pg::trace {

// What an entry is, beyond the operations of Coll.
enum class Event : std::uint8_t { create = kCollCount, split, destroy, mem_alloc, mem_free };

// One recorded operation (72 bytes).
struct Entry {
  std::uint64_t seq = 0;       // this strategy's recorded operations, from 1
  std::uint64_t coll_seq = 0;  // collectives: the number every rank gives the same call; 0 otherwise
  std::int64_t start_ns = 0;   // this rank's monotonic clock
  std::int64_t end_ns = 0;     // 0 while in flight
  std::uint64_t count = 0;     // elements (bytes for the communication buffers)
  std::uint64_t bytes = 0;     // bytes this rank's operation moves from its buffers
  const char *algorithm = nullptr;  // the backend's algorithm where it says (a static name)
  std::int32_t root = -1;      // root, peer or split color; -1 where none
  std::uint32_t slices = 0;    // pieces the algorithm cut it into, where it says
  std::int16_t status = -1;    // pg_status once finished; -1 in flight
  std::uint8_t what = 0;       // Coll or Event
  std::uint8_t dtype = 0, op = 0;
  std::uint8_t flags = 0;      // kNonblocking | kDeviceDefault | kInPlace | kSharedSend | kSharedRecv
};
// kSharedSend, kSharedRecv: the buffer lies in pg_mem_alloc memory, which the
// node's other ranks read in place (the backend says so: annotate_shared).
constexpr std::uint8_t kNonblocking = 1, kDeviceDefault = 2, kInPlace = 4, kSharedSend = 8, kSharedRecv = 16;

class Recorder {
 public:
  Recorder(std::string dir, std::size_t entries);

  // Records the start of an operation; returns its number for end().
  std::uint64_t begin(std::uint8_t what, const CollArgs *args, std::uint64_t coll_seq, std::uint8_t flags);
  // Its end (nothing when the ring has moved past it).
  void end(std::uint64_t seq, pg_status status);
  // What the backend says it ran (the thread's current operation; see Annotate).
  void annotate(std::uint64_t seq, const char *algorithm, std::uint32_t slices, bool device_default);
  // Flags the backend adds to it (kSharedSend, kSharedRecv).
  void annotate_flags(std::uint64_t seq, std::uint8_t flags);

  // Set at creation, fixed afterwards.
  std::string dir;
  std::string identity;        // the same on every rank of the strategy
  std::vector<int> world_ranks;  // its ranks' ranks in MPI_COMM_WORLD
  int rank = 0, size = 1;
  std::string backend, device_default, device;
  std::int64_t clock_offset_ns = 0;       // add to this rank's clock for rank 0's
  std::int64_t clock_uncertainty_ns = 0;  // half the best round trip of the measurement

  // The entries in order, oldest first, as JSON (with the fields above).
  std::string json() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Entry> ring_;
  std::uint64_t next_ = 1;
};

// PGS_TRACE is set for this strategy: its recorder, identity and clock
// alignment. Collective over s->comm (the clock measurement).
pg_status start(pg_strategy *s);
// Its strategy is gone: the recorder is kept for the dumps that follow, and
// written now.
void retire(const std::shared_ptr<Recorder> &recorder);

// Writes this process's dumps now (every recorder, in each one's folder).
// `reason`: "watchdog", "poison", "signal", "destroy", "exit", "request".
// False when nothing is recorded. Never allocates in a signal handler: SIGUSR1
// only wakes a writer thread.
bool dump(const char *reason);

// The recorder's hooks around one operation of a strategy (no-ops without one).
class Op {
 public:
  Op(pg_strategy *s, std::uint8_t what, const CollArgs *args, std::uint64_t coll_seq, std::uint8_t flags = 0);
  ~Op();
  // The status, recorded as the operation's end (once).
  pg_status end(pg_status status);
  // The operation goes on after this scope (a nonblocking work): its end is
  // recorded when it completes (Recorder::end with seq()).
  void keep();
  std::uint64_t seq() const { return seq_; }
  Op(const Op &) = delete;
  Op &operator=(const Op &) = delete;

 private:
  Recorder *recorder_ = nullptr;
  std::uint64_t seq_ = 0;
};

// Marks the operation `seq` of `recorder` as the one this thread runs, so
// that a backend deep inside can say which algorithm it chose (annotate).
class Current {
 public:
  Current(Recorder *recorder, std::uint64_t seq);
  ~Current();
  Current(const Current &) = delete;
  Current &operator=(const Current &) = delete;

 private:
  Recorder *previous_;
  std::uint64_t previous_seq_;
  bool marks_;  // this scope changed the thread's mark
};

// Called by a backend: the algorithm (a static name) and the slices of the
// operation this thread runs; nothing when it is not recorded.
void annotate(const char *algorithm, std::uint32_t slices = 0);
// Called by a backend: which of the operation's buffers lie in pg_mem_alloc
// memory that the node's ranks read in place.
void annotate_shared(bool send, bool recv);
// Called by routing: the operation runs on the device default.
void annotate_device_default();

}  // namespace pg::trace
