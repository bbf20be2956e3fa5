// What the layer did, counted per entry point: calls routed and their bytes,
// calls passed to MPI and why. PGS_MPI_SUMMARY=1 prints the table at
// MPI_Finalize on rank 0, summed over the ranks of MPI_COMM_WORLD.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "layer.h"

namespace pgs_mpi {
namespace {

constexpr int kKinds = static_cast<int>(Kind::count_);
constexpr int kWhys = static_cast<int>(Why::count_);

// Per kind: routed calls, routed bytes, then passed calls by reason.
constexpr int kColumns = 2 + kWhys;
std::atomic<unsigned long long> counts[kKinds][kColumns];

void add(Kind kind, int column, unsigned long long n) {
  counts[static_cast<int>(kind)][column].fetch_add(n, std::memory_order_relaxed);
}

// PGS_MPI_SUMMARY on rank 0: "1" prints, unset, empty or "0" does not;
// anything else is said and read as 0.
bool wanted() {
  const char *v = std::getenv("PGS_MPI_SUMMARY");
  if (!v || !*v || std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  std::fprintf(stderr, "pgs-mpi: PGS_MPI_SUMMARY='%s' is not 0 or 1: no summary printed\n", v);
  return false;
}

std::string human_bytes(unsigned long long b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return out;
}

}  // namespace

const char *kind_name(Kind kind) {
  static const char *names[] = {
      "MPI_Allreduce", "MPI_Reduce", "MPI_Bcast", "MPI_Allgather", "MPI_Allgatherv", "MPI_Gather", "MPI_Gatherv",
      "MPI_Scatter", "MPI_Scatterv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Reduce_scatter",
      "MPI_Reduce_scatter_block", "MPI_Barrier", "MPI_Iallreduce", "MPI_Ireduce", "MPI_Ibcast",
      "MPI_Iallgather", "MPI_Iallgatherv", "MPI_Igather", "MPI_Igatherv", "MPI_Iscatter", "MPI_Iscatterv",
      "MPI_Ialltoall", "MPI_Ialltoallv", "MPI_Ireduce_scatter", "MPI_Ireduce_scatter_block", "MPI_Ibarrier"};
  static_assert(sizeof names / sizeof names[0] == kKinds, "a name for every entry point");
  return names[static_cast<int>(kind)];
}

const char *why_name(Why why) {
  static const char *names[] = {"datatype", "operation", "intercommunicator", "one rank",
                                "nonblocking", "PGS_BACKEND=mpi", "no strategy"};
  static_assert(sizeof names / sizeof names[0] == kWhys, "a name for every reason");
  return names[static_cast<int>(why)];
}

void count_routed(Kind kind, std::size_t bytes) {
  add(kind, 0, 1);
  add(kind, 1, bytes);
}

void count_passed(Kind kind, Why why) { add(kind, 2 + static_cast<int>(why), 1); }

void print_summary() {
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every rank reduces, whatever its own environment says: the collective
  // must not hang on a rank launched with other settings. Rank 0 decides.
  std::vector<unsigned long long> mine(kKinds * kColumns), sum(mine.size());
  for (int k = 0; k < kKinds; ++k)
    for (int c = 0; c < kColumns; ++c) mine[k * kColumns + c] = counts[k][c].load(std::memory_order_relaxed);
  PMPI_Reduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0,
              MPI_COMM_WORLD);
  if (rank != 0 || !wanted()) return;
  std::string out = "pgs-mpi summary: " + std::to_string(size) + " ranks, backend " + backend() +
                    ", calls summed over ranks\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-26s %10s %12s %10s  %s\n", "collective", "routed", "bytes", "to MPI",
                "why to MPI");
  out += line;
  unsigned long long routed = 0, bytes = 0, passed = 0;
  for (int k = 0; k < kKinds; ++k) {
    const unsigned long long *row = &sum[k * kColumns];
    unsigned long long to_mpi = 0;
    std::string why;
    for (int w = 0; w < kWhys; ++w) {
      if (!row[2 + w]) continue;
      to_mpi += row[2 + w];
      why += (why.empty() ? "" : ", ") + std::string(why_name(static_cast<Why>(w))) + " " +
             std::to_string(row[2 + w]);
    }
    if (!row[0] && !to_mpi) continue;
    std::snprintf(line, sizeof line, "  %-26s %10llu %12s %10llu  %s\n", kind_name(static_cast<Kind>(k)), row[0],
                  human_bytes(row[1]).c_str(), to_mpi, why.c_str());
    out += line;
    routed += row[0];
    bytes += row[1];
    passed += to_mpi;
  }
  std::snprintf(line, sizeof line, "pgs-mpi summary: routed %llu calls (%llu bytes), passed %llu calls to MPI\n",
                routed, bytes, passed);
  out += line;
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace pgs_mpi
