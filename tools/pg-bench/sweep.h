// The interleaved sweep: for each repetition, collective and size, every
// backend runs its out-of-place and in-place rows back to back, so slow
// phases of a noisy machine hit all backends alike and ratios stay fair.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "check.h"
#include "collectives.h"
#include "options.h"

namespace pgbench {

// One measured row of one repetition.
struct Measurement {
  bool ran = false;
  double time_us = 0;   // median over iterations of the slowest rank's time
  bool checked = false;
  unsigned long long wrong = 0;  // wrong elements over all ranks (-c 1)
};

// Everything measured, indexed by repetition, collective, size, backend and
// placement (0 out-of-place, 1 in-place).
struct Results {
  std::vector<Collective> collectives;
  std::vector<std::vector<Layout>> layouts;  // per collective, increasing sizes
  std::vector<std::string> backends;
  std::vector<bool> copies_only;  // per backend: Backend::copies_only()
  int repetitions = 1;
  int nranks = 1;
  // Per collective: "backend: reason" for the backends that skip it.
  std::vector<std::vector<std::string>> skipped;
  std::vector<std::vector<std::vector<std::vector<std::vector<Measurement>>>>> data;

  Measurement &at(int rep, size_t coll, size_t size, size_t backend, int in_place) {
    return data[static_cast<size_t>(rep)][coll][size][backend][static_cast<size_t>(in_place)];
  }
  const Measurement &at(int rep, size_t coll, size_t size, size_t backend, int in_place) const {
    return data[static_cast<size_t>(rep)][coll][size][backend][static_cast<size_t>(in_place)];
  }
  // busbw = algbw * this: the collective's factor, or 1 for a copy baseline.
  double busbw_factor(size_t coll, size_t backend) const {
    return copies_only[backend] ? 1.0 : pgbench::busbw_factor(collectives[coll], nranks);
  }
};

// The sizes of each collective (nccl-tests conventions; sizes that round to
// the same layout are measured once), and the largest buffer they need.
std::vector<std::vector<Layout>> plan_layouts(const Options &opts, int nranks, size_t *max_bytes);

// A failure in the middle of timed calls: peers may be stuck in the same
// call, so the caller reports it and aborts the job.
struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs the sweep. `on_rows_done(coll, size)` is called on every rank when the
// last repetition of a (collective, size) has finished, so rows can be
// printed as they complete. Collective over `comm`.
Results run_sweep(const Options &opts, MPI_Comm comm, std::vector<std::unique_ptr<Backend>> &backends,
                  const std::function<void(const Results &, size_t, size_t)> &on_rows_done);

}  // namespace pgbench
