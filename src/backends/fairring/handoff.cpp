#include "backends/fairring/handoff.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "backends/fairring/fast_path.h"
#include "topology/machine.h"
#include "util/copy.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::fairring {
namespace {

// A 128 KiB float32 allreduce, split: on two ranks each reduces 64 KiB and
// pulls 64 KiB: a size where both choices changed the time on both CPUs of
// docs/performance.md.
constexpr std::size_t kProbeBytes = std::size_t(128) << 10;
constexpr int kRounds = 7;  // of each way, after one to warm up; the median decides
constexpr int kCalls = 4;   // allreduces per round and way
// The first way timed (reduced in the buffer and pulled with memcpy, where
// the settings leave it) is kept unless another is faster by more than this:
// ways closer than the probe's run-to-run spread (up to a tenth on the AMD
// EPYC of docs/performance.md) would take turns from one run of a job to the
// next.
constexpr double kMargin = 1.05;

struct Way {
  bool reduce_in_buffer;
  bool pages;
};

std::string describe_way(const Way &way, std::size_t up_to, std::size_t l2_per_core) {
  return std::string(way.reduce_in_buffer ? "blocks reduced in the user's buffer, then copied to the slot"
                                          : "blocks reduced in the slot") +
         (way.pages ? ", pulled four pages at a time up to " + text::format_bytes(up_to) +
                          " (an input and a result fit a core's " + text::format_bytes(l2_per_core) + " of L2 cache)"
                    : ", pulled with memcpy");
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The median over kRounds rounds (after one to warm up) of the node's
// slowest rank's time for kCalls runs of `a` on `path`, for each of
// `variants`, in turns (each round starts with the next); `use(v)` sets
// variant v on the path before its turn.
template <class Use>
pg_status time_turns(MPI_Comm node_comm, FastPath &path, const CollArgs &a, std::size_t variants, Use use,
                     std::vector<double> *medians) {
  const std::size_t n = variants;
  std::vector<double> took(static_cast<std::size_t>(kRounds) * n);
  for (int round = -1; round < kRounds; ++round)
    for (std::size_t turn = 0; turn < n; ++turn) {
      const std::size_t v = (turn + static_cast<std::size_t>(round + 1)) % n;
      use(v);
      const auto start = std::chrono::steady_clock::now();
      for (int call = 0; call < kCalls; ++call) PG_CHECK(path.run(a));
      const std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
      if (round >= 0) took[static_cast<std::size_t>(round) * n + v] = t.count();
    }
  PG_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, took.data(), static_cast<int>(took.size()), MPI_DOUBLE, MPI_MAX, node_comm));
  medians->assign(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    std::vector<double> each;
    for (int round = 0; round < kRounds; ++round) each.push_back(took[static_cast<std::size_t>(round) * n + v]);
    (*medians)[v] = median(each);
  }
  return PG_OK;
}

// A float32 allreduce of `bytes` from buffers of this probe's own.
struct ProbeCall {
  explicit ProbeCall(std::size_t bytes) : send(bytes / sizeof(float), 1.0f), recv(send.size()) {}
  CollArgs args() { return CollArgs::reduction(Coll::allreduce, send.data(), recv.data(), send.size(), PG_FLOAT32, PG_SUM); }
  std::vector<float> send, recv;
};

}  // namespace

pg_status choose_handoff(MPI_Comm node_comm, const Settings &settings, int nodes, bool shares, std::size_t l1d,
                         std::size_t l2_per_core, Handoff *out) {
  int local_size = 1;
  MPI_Comm_size(node_comm, &local_size);
  const std::size_t up_to = l2_per_core / 2;
  // The same on every rank of the node: its CPU, its agreed caches, the settings.
  std::string no_pages;
  if (!pulls_by_pages_here()) no_pages = "no AVX2";
  else if (up_to < kProbeBytes)
    no_pages = l2_per_core == 0 ? "hwloc reports no L2 cache"
                                : "a core's L2 cache holds no " + text::format_bytes(2 * kProbeBytes) +
                                      " message and its result";
  // The ways the settings and the CPU leave, the untimed default first
  // (PGS_FAIRRING_PULL=pages where the CPU cannot: memcpy).
  const bool pages_allowed = no_pages.empty() && settings.pull != Pull::memcpy;
  const bool memcpy_allowed = settings.pull != Pull::pages || !no_pages.empty();
  std::vector<Way> ways;
  for (bool in_buffer : {true, false})
    for (bool pages : {false, true})
      if ((settings.reduce == Reduce::measure || in_buffer == (settings.reduce == Reduce::buffer)) &&
          (pages ? pages_allowed : memcpy_allowed))
        ways.push_back({in_buffer, pages});
  std::string why;  // why nothing is timed
  if (local_size < 2) {
    why = "a node of one rank";
  } else if (!shares) {
    why = "no shared-memory path on this layout";
  } else {
    topology::HostShare share;  // ranks that wait for a core time the scheduler, not the copies
    PG_CHECK(topology::host_share(node_comm, &share));
    if (share.oversubscribed())
      why = "not timed: " + std::to_string(share.ranks) + " ranks share " + std::to_string(share.cpus) +
            " CPUs of this host";
  }
  const bool time_split = why.empty() && local_size == 2 && nodes == 1 && settings.fast_bytes > 0 &&
                          !settings.split_bytes;
  if (why.empty() && ways.size() == 1) why = "the only way PGS_FAIRRING_REDUCE and PGS_FAIRRING_PULL leave";
  std::unique_ptr<FastPath> path;  // the probe's own
  if (why.empty() || time_split) {
    FastPath::Config config;
    config.slot_bytes = kProbeBytes;
    MPI_Comm_size(node_comm, &config.size);
    MPI_Comm_rank(node_comm, &config.rank);
    config.cycle_bytes = l1d;
    PG_CHECK(FastPath::create(node_comm, config, nullptr, &path));
  }
  std::size_t chosen = 0;
  if (why.empty()) {
    ProbeCall call(kProbeBytes);
    std::vector<double> medians;
    path->set_split_bytes(0);  // the probe is of split allreduces
    PG_CHECK(time_turns(node_comm, *path, call.args(), ways.size(), [&](std::size_t w) {
      path->set_handoff(ways[w].reduce_in_buffer, ways[w].pages ? up_to : 0);
    }, &medians));
    const std::size_t fastest =
        static_cast<std::size_t>(std::min_element(medians.begin(), medians.end()) - medians.begin());
    chosen = medians[0] <= kMargin * medians[fastest] ? 0 : fastest;
    std::vector<std::string> others;
    for (std::size_t w = 0; w < ways.size(); ++w) {
      if (w == chosen) continue;
      char ratio[64];
      std::snprintf(ratio, sizeof ratio, "%s and %s %.2f", ways[w].reduce_in_buffer ? "buffer" : "slot",
                    ways[w].pages ? "pages" : "memcpy", medians[w] / medians[chosen]);
      others.emplace_back(ratio);
    }
    why = std::string(chosen == fastest ? "the fastest" : "the first, within 5 % of the fastest,") + " of " +
          std::to_string(ways.size()) + " ways timed here on a " + text::format_bytes(kProbeBytes) +
          " allreduce (the others' time over its: " + text::join(others, ", ") + ")";
  }
  if (!no_pages.empty() && settings.pull != Pull::memcpy) why += "; by pages: " + no_pages;
  out->reduce_in_buffer = ways[chosen].reduce_in_buffer;
  out->pages_up_to = ways[chosen].pages ? up_to : 0;
  out->why = describe_way(ways[chosen], up_to, l2_per_core) + ": " + why;
  if (time_split) {
    // Whole, as Settings::split_bytes_for has it untimed, against split, with the way chosen.
    const std::size_t sizes[2] = {Settings::kPairSplitBytes, Settings::kSplitBytes};
    ProbeCall call(Settings::kSplitBytes);
    std::vector<double> medians;
    path->set_handoff(out->reduce_in_buffer, out->pages_up_to);
    PG_CHECK(time_turns(node_comm, *path, call.args(), 2, [&](std::size_t v) { path->set_split_bytes(sizes[v]); },
                        &medians));
    const bool split = medians[0] > kMargin * medians[1];
    char text[200];
    std::snprintf(text, sizeof text,
                  "one node of two ranks: a %s allreduce split took %.2f of its time whole, timed here%s",
                  text::format_bytes(Settings::kSplitBytes).c_str(), medians[1] / medians[0],
                  split ? "" : ", not 5 % less");
    out->split_bytes = sizes[split ? 1 : 0];
    out->split_why = text;
  }
  return PG_OK;
}

}  // namespace pg::fairring
