// Measuring one row: an untimed first call (checked with -c 1, and where all
// ranks agree whether the backend can run it), warm-up calls, then timed
// calls, each after the backend's own barrier, each timed as the slowest
// rank's time (one MPI max-reduction of all the times after the last call).
#pragma once

#include <mpi.h>

#include <vector>

#include "backend.h"
#include "check.h"
#include "sweep.h"

namespace pgbench {

// A backend's two buffers, each of the sweep's largest buffer size: `a` holds
// the input of out-of-place calls, `b` their result and both sides of
// in-place calls.
struct BufferPair {
  void *a = nullptr;
  void *b = nullptr;
};

// Measures one row. Returns ran == false (with `why_not` set, the same on
// every rank) when the first call failed on some rank; throws Fatal when a
// later call fails. `stage` is host scratch for backends whose buffers the
// host cannot touch. Collective over `comm`.
Measurement measure_row(Backend &backend, const BufferPair &buffers, const Layout &layout,
                        bool in_place, const Options &opts, const Checker *checker, MPI_Comm comm,
                        std::vector<unsigned char> &stage, std::string *why_not);

// The median of `v` (the mean of the two middle values for an even count).
double median(std::vector<double> v);

}  // namespace pgbench
