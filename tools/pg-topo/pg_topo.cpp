// pg-topo — prints what pgstrategy sees, run under the job's launcher:
//
//   mpiexec -n 4 pg-topo            srun --mpi=pmi2 -n 8 pg-topo
//
// 1. one line per rank, in rank order: host, node, local rank, binding, GPU,
//    nearest NIC, launcher;
// 2. per device (cpu, cuda): the backend a strategy would get, by which rule,
//    and whether a strategy for it can be created here;
// 3. the hierarchical plan: nodes x ranks per node, the rails, regular or not;
// 4. the settings: every PGS_* variable, as set or with its default.
//
// A client of the installed library like any other: what it prints comes from
// pg_strategy_info.
//
// Exit status: 0; 1 when the environment is bad (a PGS_* value, an unreadable
// PGS_TOPOLOGY_XML) or no CPU strategy can be created — every rank agrees, so
// nothing hangs.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "pg_strategy.h"
#include "util/text.h"  // header-only string helpers

namespace {

const char kUsage[] =
    "usage: pg-topo [--no-probe]\n"
    "  Run under mpiexec or srun. Prints each rank's host, node, local rank, binding,\n"
    "  GPU, nearest NIC and launcher; the backend each device would get and why; and\n"
    "  the hierarchical plan (nodes x ranks per node, rails).\n"
    "  --no-probe  do not create strategies to test whether each device is available\n"
    "  Environment: PGS_* as in docs/env.md (PGS_RANKS_PER_NODE, PGS_TOPOLOGY_XML,\n"
    "  PGS_BIND, PGS_BACKEND, ...).\n";

// Gathers one string per rank to rank 0 (empty vector elsewhere).
std::vector<std::string> gather(const std::string &mine, int rank, int size) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int total = 0;
    for (int i = 0; i < size; ++i) {
      displs[i] = total;
      total += lens[i];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, rank == 0 ? &all[0] : nullptr, lens.data(),
              displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int i = 0; rank == 0 && i < size; ++i) out.push_back(all.substr(displs[i], lens[i]));
  return out;
}

// A failure every rank agrees on: the lowest failing rank says why (and how
// many failed), then every rank exits 1. Returns 0 when all ranks are fine.
int fail_all(bool ok, int rank, const std::string &what) {
  int in[2] = {ok ? INT_MAX : rank, ok ? 0 : 1}, first = 0, failed = 0;
  MPI_Allreduce(&in[0], &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&in[1], &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (failed == 0) return 0;
  if (rank == first)
    std::fprintf(stderr, "pg-topo: rank %d: %s%s\n", rank, what.c_str(),
                 failed > 1 ? (" (" + std::to_string(failed) + " ranks failed)").c_str() : "");
  std::fflush(stderr);
  MPI_Finalize();
  return 1;
}

// One pg_strategy_info answer.
std::string info(const pg_strategy *s, const char *key) {
  char text[4096] = "";
  if (pg_strategy_info(s, key, text, sizeof text) != PG_OK) return std::string("? (") + pg_last_error() + ")";
  return text;
}

// "available (cuda:1)" or "unavailable: <why>", by creating a strategy with
// the backend the rules choose (collective).
std::string probe(const char *device) {
  pg_strategy *s = nullptr;
  pg_status st = pg_strategy_create(device, nullptr, &s);
  if (st != PG_OK)
    return std::string("unavailable: ") + pg_status_name(st) + ": " + pg_last_error();
  std::string out = std::string("available (") + pg_strategy_device(s) + ")";
  pg_strategy_destroy(s);
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  bool run_probe = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-probe")) {
      run_probe = false;
    } else if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "pg-topo: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }

  int provided = 0;
  // As the library would: also without an MPI launcher. A world of 1 while the
  // launcher says N is reported by the strategy's creation below, like every rank's.
  if (pg_mpi_init(MPI_THREAD_MULTIPLE, &provided) != PG_OK) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      std::fprintf(stderr, "pg-topo: cannot start MPI: %s\n", pg_last_error());
      return 1;
    }
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // The layout and what the library sees, through the public API ("mpi"
  // always serves cpu). A bad PGS_* value fails the create on every rank,
  // with the variable named.
  pg_strategy *s = nullptr;
  pg_status st = pg_strategy_create("cpu", "mpi", &s);
  if (int rc = fail_all(st == PG_OK, rank,
                        std::string("cannot create a cpu strategy: ") + pg_last_error()))
    return rc;
  int local_rank = pg_strategy_local_rank(s), local_size = pg_strategy_local_size(s);
  int node = pg_strategy_node_rank(s), nodes = pg_strategy_node_count(s);

  // This rank's line.
  char line[8192];
  std::snprintf(line, sizeof line, "rank %d: host=%s node=%d local=%d/%d bind=%s gpu=%s nic=%s launcher=%s", rank,
                info(s, "host").c_str(), node, local_rank, local_size, info(s, "binding").c_str(),
                info(s, "gpu").c_str(), info(s, "nic").c_str(), info(s, "launcher").c_str());
  std::vector<std::string> lines = gather(line, rank, size);
  std::vector<std::string> warnings = gather(info(s, "launcher_warning"), rank, size);
  if (rank == 0) {
    std::printf("pg-topo: %d rank%s; topology of rank 0 from %s\n", size, size == 1 ? "" : "s",
                info(s, "machine").c_str());
    for (const std::string &l : lines) std::printf("%s\n", l.c_str());
    // The launcher and MPI disagree: say so here, whatever PGS_LOG is.
    int first = -1, count = 0;
    for (int r = 0; r < size; ++r)
      if (!warnings[r].empty()) {
        if (first < 0) first = r;
        ++count;
      }
    if (first >= 0)
      std::printf("launcher warning (rank %d%s): %s\n", first,
                  count > 1 ? (" and " + std::to_string(count - 1) + " more").c_str() : "",
                  warnings[first].c_str());
  }

  // Devices: the rule is evaluated on every rank (same environment); the
  // probes are collective.
  for (const char *device : {"cpu", "cuda"}) {
    const std::string chosen = info(s, (std::string("backend:") + device).c_str());
    std::string avail = run_probe ? probe(device) : std::string("not probed");
    if (rank == 0) std::printf("device %s: backend %s: %s\n", device, chosen.c_str(), avail.c_str());
  }

  // The plan.
  int mine[2] = {node, local_rank};
  std::vector<int> all(rank == 0 ? 2 * size : 0);
  MPI_Gather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::map<int, std::vector<std::string>> by_node, by_rail;  // ranks, as text
    for (int r = 0; r < size; ++r) {
      by_node[all[2 * r]].push_back(std::to_string(r));
      by_rail[all[2 * r + 1]].push_back(std::to_string(r));
    }
    std::vector<int> counts;
    std::vector<std::string> count_texts;
    for (auto &n : by_node) {
      counts.push_back(static_cast<int>(n.second.size()));
      count_texts.push_back(std::to_string(counts.back()));
    }
    bool regular = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; });
    const std::string how = info(s, "nodes");
    if (regular) {
      std::printf("plan: %d node%s x %d rank%s per node (regular; %s)\n", nodes,
                  nodes == 1 ? "" : "s", counts[0], counts[0] == 1 ? "" : "s", how.c_str());
    } else {
      std::printf("plan: %d nodes with %s ranks (irregular: fairring uses its leader-based "
                  "fallback; %s)\n", nodes, pg::text::join(count_texts, "+").c_str(), how.c_str());
    }
    for (auto &n : by_node)
      std::printf("  node %d: ranks %s\n", n.first, pg::text::join(n.second, " ").c_str());
    for (auto &r : by_rail)
      std::printf("  rail %d: ranks %s\n", r.first, pg::text::join(r.second, " ").c_str());
    // The settings in effect: every PGS_* variable the library reads.
    std::printf("settings:\n");
    for (const std::string &l : pg::text::split(info(s, "settings"), '\n'))
      if (!l.empty()) std::printf("  %s\n", l.c_str());
    std::fflush(stdout);
  }

  pg_strategy_destroy(s);
  MPI_Finalize();
  return 0;
}
