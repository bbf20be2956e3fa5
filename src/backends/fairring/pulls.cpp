#include "backends/fairring/pulls.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "topology/machine.h"
#include "util/copy.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::fairring {
namespace {

// A 256 KiB allreduce's block on two ranks: a size where both ways were
// measured on both CPUs (64 KiB-1 MiB messages all went the same way).
constexpr std::size_t kProbeBytes = std::size_t(128) << 10;
constexpr int kRounds = 7;  // of each way; the median decides
constexpr int kTag = 0x7011;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Local rank 0 writes its part of the window, then local rank 1 pulls it,
// timed, by memcpy and by pages in turns (each round in the other order, so
// that neither always runs right after the write). On rank 1: by pages'
// median time over memcpy's; elsewhere 0.
pg_status time_pulls(MPI_Comm node_comm, int local, double *ratio) {
  NodeWindow window;
  PG_CHECK(allocate_node_window(node_comm, local == 0 ? kProbeBytes : 0, "fairring's pull probe", &window));
  std::vector<char> to(local == 1 ? kProbeBytes : 0, 0);
  std::vector<double> took[2];  // [by pages]
  bool sent = true;             // every message between the two went through
  for (int round = 0; round <= kRounds && sent; ++round)  // round 0 warms both up
    for (int turn = 0; turn < 2 && sent; ++turn) {
      const bool pages = (round + turn) % 2 == 1;
      if (local == 0) {
        std::memset(window.base, 2 * round + turn, kProbeBytes);
        sent = MPI_Send(nullptr, 0, MPI_BYTE, 1, kTag, node_comm) == MPI_SUCCESS &&
               MPI_Recv(nullptr, 0, MPI_BYTE, 1, kTag, node_comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
      } else if (local == 1) {
        sent = MPI_Recv(nullptr, 0, MPI_BYTE, 0, kTag, node_comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        const auto start = std::chrono::steady_clock::now();
        if (pages)
          pull_pages(to.data(), window.parts[0], kProbeBytes);
        else
          std::memcpy(to.data(), window.parts[0], kProbeBytes);
        const std::chrono::duration<double> t = std::chrono::steady_clock::now() - start;
        if (round > 0) took[pages].push_back(t.count());
        sent = sent && MPI_Send(nullptr, 0, MPI_BYTE, 0, kTag, node_comm) == MPI_SUCCESS;
      }
    }
  MPI_Win_free(&window.win);
  if (!sent) return fail(PG_ERR_BACKEND, "fairring's pull probe: a message between the node's first two ranks failed");
  *ratio = local == 1 ? median(took[1]) / median(took[0]) : 0;
  return PG_OK;
}

}  // namespace

pg_status choose_pulls(MPI_Comm node_comm, Pull given, std::size_t l2_per_core, PullRule *out) {
  int local = 0, local_size = 1;
  MPI_Comm_rank(node_comm, &local);
  MPI_Comm_size(node_comm, &local_size);
  const std::size_t up_to = l2_per_core / 2;
  *out = {};
  // The same on every rank of the node: its CPU and its agreed L2.
  if (!pulls_by_pages_here()) {
    out->why = "peers' blocks pulled with memcpy: no AVX2";
    return PG_OK;
  }
  if (up_to < kProbeBytes) {
    out->why = l2_per_core == 0 ? "peers' blocks pulled with memcpy: hwloc reports no L2 cache"
                                : "peers' blocks pulled with memcpy: a core's L2 cache holds no " +
                                      text::format_bytes(2 * kProbeBytes) + " message and its result";
    return PG_OK;
  }
  const std::string where = " up to " + text::format_bytes(up_to) + " (an input and a result fit a core's " +
                            text::format_bytes(l2_per_core) + " of L2 cache)";
  if (given != Pull::measure || local_size < 2) {
    const bool pages = given == Pull::pages;
    out->pages_up_to = pages ? up_to : 0;
    out->why = pages ? "peers' blocks pulled four pages at a time" + where + ": PGS_FAIRRING_PULL"
               : given == Pull::memcpy ? std::string("peers' blocks pulled with memcpy: PGS_FAIRRING_PULL")
                                       : std::string("peers' blocks pulled with memcpy: a node of one rank");
    return PG_OK;
  }
  // Ranks that wait for a core time the scheduler, not the copies.
  topology::HostShare share;
  PG_CHECK(topology::host_share(node_comm, &share));
  if (share.oversubscribed()) {
    out->why = "peers' blocks pulled with memcpy: not timed, " + std::to_string(share.ranks) + " ranks share " +
               std::to_string(share.cpus) + " CPUs of this host";
    return PG_OK;
  }
  double ratio = 0;
  PG_CHECK(time_pulls(node_comm, local, &ratio));
  PG_MPI_CHECK(MPI_Bcast(&ratio, 1, MPI_DOUBLE, 1, node_comm));
  char measured[96];
  std::snprintf(measured, sizeof measured, "by pages took %.2f of memcpy's time on %s here", ratio,
                text::format_bytes(kProbeBytes).c_str());
  out->pages_up_to = ratio < 1 ? up_to : 0;
  out->why = (ratio < 1 ? "peers' blocks pulled four pages at a time" + where : "peers' blocks pulled with memcpy") +
             ": " + measured;
  return PG_OK;
}

}  // namespace pg::fairring
