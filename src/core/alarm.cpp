#include "core/alarm.h"

#include <new>

#include "core/memory.h"
#include "core/runtime.h"
#include "util/status.h"

namespace pg {
namespace {

constexpr int kNoticeTag = 1;  // the alarm's communicator carries nothing else

}  // namespace

pg_status Alarm::create(MPI_Comm comm, const topology::Layout &layout, std::unique_ptr<Alarm> *out) {
  std::unique_ptr<Alarm> a(new Alarm());
  int size = 1;
  PG_MPI_CHECK(MPI_Comm_rank(comm, &a->rank_));
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size == 1) {
    *out = std::move(a);
    return PG_OK;
  }
  // The node's word, in local rank 0's part of a window, where the node's
  // ranks share memory (virtual nodes that span hosts do not).
  if (layout.local_size > 1) {
    NodeWindow window;
    const pg_status st =
        allocate_node_window(layout.node_comm, layout.local_rank == 0 ? 64 : 0, "the failure alarm", &window);
    if (st == PG_OK) {
      a->win_ = window.win;
      if (layout.local_rank == 0) new (window.base) std::atomic<std::uint64_t>(0);
      a->word_ = reinterpret_cast<std::atomic<std::uint64_t> *>(window.parts[0]);
      PG_MPI_CHECK(MPI_Barrier(layout.node_comm));  // the word is made before any peer reads it
    } else if (st != PG_ERR_UNSUPPORTED) {
      return st;
    }
  }
  // Which word each rank reads (its node's first rank), or none (-1 - rank):
  // notices go to the ranks that do not read this rank's.
  int first = a->rank_;
  PG_MPI_CHECK(MPI_Bcast(&first, 1, MPI_INT, 0, layout.node_comm));
  const int mine = a->word_ ? first : -1 - a->rank_;
  std::vector<int> words(static_cast<std::size_t>(size));
  PG_MPI_CHECK(MPI_Allgather(&mine, 1, MPI_INT, words.data(), 1, MPI_INT, comm));
  bool everyone_shares = words[0] >= 0;
  for (int r = 0; r < size; ++r) {
    everyone_shares = everyone_shares && words[static_cast<std::size_t>(r)] == words[0];
    if (words[static_cast<std::size_t>(r)] != mine) a->notified_ranks_.push_back(r);
  }
  if (!everyone_shares) {
    PG_MPI_CHECK(MPI_Comm_dup(comm, &a->control_));
    PG_MPI_CHECK(MPI_Comm_set_errhandler(a->control_, MPI_ERRORS_RETURN));
    PG_MPI_CHECK(MPI_Irecv(&a->received_, 1, MPI_UINT64_T, MPI_ANY_SOURCE, kNoticeTag, a->control_, &a->posted_));
  }
  *out = std::move(a);
  return PG_OK;
}

Alarm::~Alarm() {
  if (!runtime::mpi_alive()) return;
  if (posted_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&posted_);
    MPI_Wait(&posted_, MPI_STATUS_IGNORE);
  }
  if (control_ != MPI_COMM_NULL) MPI_Comm_free(&control_);
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

void Alarm::raise(Cause cause, bool notify) {
  const std::uint64_t value = encode(rank_, cause);
  if (word_) {  // a node peer that failed first may have made this rank fail: its alarm stands
    const std::uint64_t before = word_->load(std::memory_order_acquire);
    if (before != 0) learn(before);
  }
  std::uint64_t none = 0;
  known_.compare_exchange_strong(none, value);
  if (!raised_here()) return;  // a peer's alarm came first: its notices are out
  none = 0;
  if (word_) word_->compare_exchange_strong(none, value);
  if (notify && control_ != MPI_COMM_NULL && !notices_sent_.exchange(true)) send_notices();
}

void Alarm::send_notices() {
  sent_ = known_.load();
  for (int r : notified_ranks_) {
    // A notice is one small message; the request is freed at once and MPI
    // finishes the send by itself (sent_ lives as long as the raised alarm).
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(&sent_, 1, MPI_UINT64_T, r, kNoticeTag, control_, &request) == MPI_SUCCESS)
      MPI_Request_free(&request);
  }
}

bool Alarm::raised_here() const {
  const std::uint64_t value = known_.load(std::memory_order_acquire);
  return value != 0 && static_cast<int>(value >> 2) - 1 == rank_;
}

std::uint64_t Alarm::learn(std::uint64_t value) {
  std::uint64_t none = 0;
  return known_.compare_exchange_strong(none, value) ? value : none;
}

pg_status Alarm::check_node() {
  std::uint64_t value = known_.load(std::memory_order_acquire);
  if (value == 0 && word_) value = word_->load(std::memory_order_acquire);
  return value == 0 ? PG_OK : report(learn(value));
}

pg_status Alarm::check() {
  PG_CHECK(check_node());
  if (control_ == MPI_COMM_NULL) return PG_OK;
  std::unique_lock<std::mutex> lock(testing_, std::try_to_lock);
  if (!lock.owns_lock() || posted_ == MPI_REQUEST_NULL) return PG_OK;  // another thread is testing
  int arrived = 0;
  if (MPI_Test(&posted_, &arrived, MPI_STATUS_IGNORE) != MPI_SUCCESS || !arrived) return PG_OK;
  return report(learn(received_));
}

pg_status Alarm::report(std::uint64_t value) {
  const int rank = static_cast<int>(value >> 2) - 1;
  const bool abort = static_cast<Cause>(value & 3) == Cause::aborted;
  // This rank's own abort, seen by a wait that read the abort flag just before
  // pg_strategy_abort set it: the call was aborted, as if it had seen the flag.
  if (rank == rank_ && abort) return aborted();
  if (rank == rank_)
    return fail(PG_ERR_BACKEND, "this rank's strategy failed earlier; nothing more can run on it");
  if (abort)
    return fail(PG_ERR_BACKEND,
                "rank %d aborted the strategy (pg_strategy_abort): this call cannot finish and the strategy is "
                "unusable; destroy it",
                rank);
  return fail(PG_ERR_BACKEND,
              "rank %d failed a call on the strategy (its own error says why): this call cannot finish and the "
              "strategy is unusable; destroy it",
              rank);
}

}  // namespace pg
