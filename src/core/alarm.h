// How the ranks of a strategy learn that one of them failed or aborted
// (docs/errors.md, "When a peer fails or aborts").
//
// A rank whose call fails with PG_ERR_BACKEND, or whose strategy is aborted,
// raises the alarm: it writes its rank into a word of its node's shared
// memory, which every node peer's waits read, and sends a notice to every
// rank that does not share that word, over a communicator of the alarm's own
// on which each rank keeps one receive posted. A wait (util/poll.h) checks
// the alarm every PeerWatch::kWatchRounds rounds: the word is one load, the
// posted receive one MPI_Test. A wait that learns of a raised alarm ends with
// PG_ERR_BACKEND naming the rank; every call entering the strategy after that
// does too (the word alone is read there: an entry pays one load).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "topology/layout.h"
#include "util/poll.h"

namespace pg {

class Alarm final : public PeerWatch {
 public:
  enum class Cause : std::uint64_t { failed = 1, aborted = 2 };

  // Collective over comm (`layout`: its nodes). Every rank gets an alarm or
  // none does.
  static pg_status create(MPI_Comm comm, const topology::Layout &layout, std::unique_ptr<Alarm> *out);
  // Collective over the node, and only where no alarm was raised: every rank
  // must be there (the strategy's destroy checks that first). A raised alarm
  // is kept until the process exits instead.
  ~Alarm() override;
  Alarm(const Alarm &) = delete;
  Alarm &operator=(const Alarm &) = delete;

  // This rank failed or was aborted. Its node learns at once (any thread, no
  // MPI); the other nodes when `notify` (the caller may call MPI: the thread
  // level allows it from this thread), or at a later raise that may. The
  // first alarm a rank learned of stays.
  void raise(Cause cause, bool notify);
  // PG_ERR_BACKEND naming the rank when a peer (or this rank, failing)
  // raised the alarm, as far as this rank knows; PG_ERR_ABORTED when this
  // rank's strategy was aborted; PG_OK otherwise. Thread-safe.
  pg_status check() override;
  // The same without MPI: the node's word and what this rank already knew.
  pg_status check_node();
  // Whether this rank knows of a raised alarm, and whether it raised it itself.
  bool raised() const { return known_.load(std::memory_order_acquire) != 0; }
  bool raised_here() const;

 private:
  Alarm() = default;
  static std::uint64_t encode(int rank, Cause cause) {
    return (static_cast<std::uint64_t>(rank) + 1) << 2 | static_cast<std::uint64_t>(cause);
  }
  // `value`, the first alarm this rank learns of, as a status.
  pg_status report(std::uint64_t value);
  // The first alarm this rank learned of: kept in known_, the node's word
  // updated if it held none.
  std::uint64_t learn(std::uint64_t value);
  void send_notices();

  int rank_ = 0;
  MPI_Win win_ = MPI_WIN_NULL;
  std::atomic<std::uint64_t> *word_ = nullptr;  // in the node's shared memory; null on a node of one rank
  MPI_Comm control_ = MPI_COMM_NULL;            // notices; null where every rank shares the word
  std::vector<int> notified_ranks_;             // the ranks of control_ that do not share this rank's word
  MPI_Request posted_ = MPI_REQUEST_NULL;       // the receive of a peer's notice
  std::uint64_t received_ = 0, sent_ = 0;       // the notice received and the one sent (MPI owns them)
  std::mutex testing_;                          // one thread tests posted_ at a time
  std::atomic<std::uint64_t> known_{0};         // the first alarm this rank learned of, 0: none
  std::atomic<bool> notices_sent_{false};
};

}  // namespace pg
