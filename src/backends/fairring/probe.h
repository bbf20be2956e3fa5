// Timing ways of running one call against each other when a strategy is
// made, the same on every rank: how blocks pass between cores and where
// allreduces split (handoff.cpp), and where the fast path stops
// (fairring_backend.cpp).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "core/backend.h"
#include "util/status.h"

namespace pg::fairring {

constexpr int kProbeRounds = 7;  // of each way, after one to warm up; the median decides
constexpr int kProbeCalls = 4;   // calls per round and way

inline double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The way to keep after time_turns: the first (the default) unless another's
// median is below the first's by more than `margin` (1: the fastest).
inline std::size_t keep_first_unless(const std::vector<double> &medians, double margin) {
  const auto fastest = static_cast<std::size_t>(std::min_element(medians.begin(), medians.end()) - medians.begin());
  return medians[0] <= margin * medians[fastest] ? 0 : fastest;
}

// A float32 sum allreduce of `bytes`, out of place, from buffers of the probe's own.
struct ProbeAllreduce {
  explicit ProbeAllreduce(std::size_t bytes) : send(bytes / sizeof(float), 1.0f), recv(send.size()) {}
  CollArgs args() {
    return CollArgs::reduction(Coll::allreduce, send.data(), recv.data(), send.size(), PG_FLOAT32, PG_SUM);
  }
  std::vector<float> send, recv;
};

// For each of `ways` ways, the median over kProbeRounds rounds of the slowest
// rank's time (over comm) for kProbeCalls calls of `run(way)`, the ways taken
// in turns, each round starting with the next. Collective over comm.
template <class Run>
pg_status time_turns(MPI_Comm comm, std::size_t ways, Run run, std::vector<double> *medians) {
  std::vector<double> took(static_cast<std::size_t>(kProbeRounds) * ways);
  for (int round = -1; round < kProbeRounds; ++round)
    for (std::size_t turn = 0; turn < ways; ++turn) {
      const std::size_t w = (turn + static_cast<std::size_t>(round + 1)) % ways;
      const auto start = std::chrono::steady_clock::now();
      for (int call = 0; call < kProbeCalls; ++call) PG_CHECK(run(w));
      const std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
      if (round >= 0) took[static_cast<std::size_t>(round) * ways + w] = t.count();
    }
  PG_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, took.data(), static_cast<int>(took.size()), MPI_DOUBLE, MPI_MAX, comm));
  medians->assign(ways, 0);
  for (std::size_t w = 0; w < ways; ++w) {
    std::vector<double> each;
    for (int round = 0; round < kProbeRounds; ++round) each.push_back(took[static_cast<std::size_t>(round) * ways + w]);
    (*medians)[w] = median(each);
  }
  return PG_OK;
}

}  // namespace pg::fairring
