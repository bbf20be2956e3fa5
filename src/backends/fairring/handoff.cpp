#include "backends/fairring/handoff.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "backends/fairring/fast_path.h"
#include "backends/fairring/probe.h"
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
  out->timed = why.empty();
  const bool time_split = why.empty() && local_size == 2 && nodes == 1 && settings.fast_path_on() &&
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
    ProbeAllreduce call(kProbeBytes);
    std::vector<double> medians;
    path->set_split_bytes(0);  // the probe is of split allreduces
    PG_CHECK(time_turns(node_comm, ways.size(), [&](std::size_t w) {
      path->set_handoff(ways[w].reduce_in_buffer, ways[w].pages ? up_to : 0);
      return path->run(call.args());
    }, &medians));
    chosen = keep_first_unless(medians, kMargin);
    const bool fastest = medians[chosen] == *std::min_element(medians.begin(), medians.end());
    std::vector<std::string> others;
    for (std::size_t w = 0; w < ways.size(); ++w) {
      if (w == chosen) continue;
      char ratio[64];
      std::snprintf(ratio, sizeof ratio, "%s and %s %.2f", ways[w].reduce_in_buffer ? "buffer" : "slot",
                    ways[w].pages ? "pages" : "memcpy", medians[w] / medians[chosen]);
      others.emplace_back(ratio);
    }
    why = std::string(fastest ? "the fastest" : "the first, within 5 % of the fastest,") + " of " +
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
    ProbeAllreduce call(Settings::kSplitBytes);
    std::vector<double> medians;
    path->set_handoff(out->reduce_in_buffer, out->pages_up_to);
    PG_CHECK(time_turns(node_comm, 2, [&](std::size_t v) {
      path->set_split_bytes(sizes[v]);
      return path->run(call.args());
    }, &medians));
    const bool split = keep_first_unless(medians, kMargin) == 1;
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
