// What the mpi backend's operations share: how one operation's MPI calls are
// issued (blocking, or nonblocking with requests kept), and the group they
// run on. The regular collectives are in mpi_backend.cpp, the uneven ones in
// uneven.cpp.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "util/keep_alive.h"
#include "util/status.h"

namespace pg::mpi {

// The MPI requests of one started operation, the staging buffers they use,
// and what is left to do once they complete (PG_AVG's division, a copy out).
class Pending final : public Request {
 public:
  MPI_Request *add() {
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }
  std::vector<char> &stage(std::size_t bytes) {
    stages_.emplace_back(bytes);
    return stages_.back();
  }
  void then(std::function<void()> step) { finish_.push_back(std::move(step)); }
  // An array MPI reads until the operation completes (a nonblocking call's counts).
  template <typename T>
  const T *keep(std::vector<T> values) {
    auto held = std::make_shared<std::vector<T>>(std::move(values));
    kept_.push_back(held);
    return held->data();
  }

  // Blocking use: the steps run at once.
  void finish_now() {
    for (auto &step : finish_) step();
    finish_.clear();
  }

  // A receive: its first request's sender is reported (source()).
  void report_source() { report_source_ = true; }
  int source() const override { return source_; }

  pg_status test(bool *done) override {
    int flag = 1;
    if (!requests_.empty()) {
      if (report_source_) statuses_.resize(requests_.size());
      PG_MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                               report_source_ ? statuses_.data() : MPI_STATUSES_IGNORE));
      if (flag && report_source_) source_ = statuses_[0].MPI_SOURCE;
    }
    *done = flag != 0;
    if (*done) finish_now();
    return PG_OK;
  }


  // Requests are left unfinished only when issuing failed halfway, or a wait
  // ended early (pg_strategy_abort, a failed peer) or a strategy is torn down
  // after a failure. MPI forbids freeing an active collective request, and
  // waiting could hang: they are left to MPI_Finalize, and the buffers MPI
  // may still write into (staging, kept arrays) are kept until the process exits.
  ~Pending() override {
    const bool active = std::any_of(requests_.begin(), requests_.end(), [](MPI_Request r) { return r != MPI_REQUEST_NULL; });
    if (!active) return;
    keep_until_exit(std::make_shared<std::vector<std::vector<char>>>(std::move(stages_)));
    for (auto &kept : kept_) keep_until_exit(std::move(kept));
  }

 private:
  // MPI only reads a request handle at the call that fills it, so the vector may grow.
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<char>> stages_;
  std::vector<std::shared_ptr<void>> kept_;
  std::vector<std::function<void()>> finish_;
  bool report_source_ = false;
  std::vector<MPI_Status> statuses_;  // a receive's, kept between tests
  int source_ = -1;
};

// Derived datatypes made for one call, freed when it has been issued (MPI
// lets pending operations that use them complete normally).
class MadeTypes {
 public:
  MadeTypes() = default;
  MadeTypes(const MadeTypes &) = delete;
  MadeTypes &operator=(const MadeTypes &) = delete;
  ~MadeTypes() {
    for (MPI_Datatype &t : types_) MPI_Type_free(&t);
  }
  void add(MPI_Datatype t) { types_.push_back(t); }

 private:
  std::vector<MPI_Datatype> types_;
};

// Issues the MPI calls of one operation: blocking, or nonblocking with their
// requests added to `pending`. Either way the staging buffers and the steps
// that finish the operation (PG_AVG's division, a copy out) go to `pending`.
struct Issue {
  Pending &pending;
  bool nonblocking;
};

// One MPI call of an operation, as `issue` says: Blocking(args...) or
// Nonblocking(args..., request).
#define PG_MPI_CALL(issue, Blocking, Nonblocking, ...)                                   \
  PG_MPI_CHECK((issue).nonblocking ? Nonblocking(__VA_ARGS__, (issue).pending.add())    \
                                   : Blocking(__VA_ARGS__))

// The backend's communicator and its chunk limit (INT_MAX elements, or
// PGS_MPI_CHUNK_COUNT): the most elements one MPI call moves.
struct Group {
  MPI_Comm comm;
  int rank, size;
  std::size_t chunk;

  // Elements of the chunk that starts at `off` of `count`.
  int len(std::size_t count, std::size_t off) const {
    return static_cast<int>(count - off < chunk ? count - off : chunk);
  }
};

// PG_AVG's division of `count` elements at `buf`, once the sum is complete.
void average(const Group &g, const CollArgs &a, void *buf, std::size_t count, Issue io);

// allgatherv, reduce_scatterv, alltoallv, gatherv and scatterv.
pg_status issue_uneven(const Group &g, const CollArgs &a, Issue io);

}  // namespace pg::mpi
