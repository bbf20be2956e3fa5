#include "core/runtime.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>
#include <thread>

#include "core/strategy.h"
#include "launch/bootstrap.h"
#include "util/log.h"
#include "util/owned_comm.h"
#include "util/status.h"

namespace pg::runtime {
namespace {

std::mutex g_mutex;
std::atomic<bool> g_finalizing{false};
std::vector<pg_strategy *> g_live;  // in the order they were made
int g_level = MPI_THREAD_SINGLE;

// Runs inside MPI_Finalize (an attribute on MPI_COMM_SELF is deleted first
// thing): progress threads must stop while MPI still works.
int on_finalize(MPI_Comm, int, void *, void *) {
  g_finalizing = true;
  std::vector<pg_strategy *> live;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    live = g_live;
  }
  for (pg_strategy *s : live) s->engine.stop();
  return MPI_SUCCESS;
}

// MPICH 4.0.2's ch4/ucx MPI_Finalize can deadlock when ranks on different
// nodes talk over TCP (docs/known-issues.md): one rank still waits for its
// endpoints to close while the others already sit in a PMI barrier, where they
// no longer answer. Leaving together, after a barrier and a pause for the last
// messages to land, made it rare: 0 hangs in 32 runs of 2 hosts x 2 ranks,
// against 11 in 32 without (7 of 16 with the barrier alone). The pause costs
// 100 ms at exit, and only jobs that span nodes pay it.
void settle_before_finalize() {
  int size = 1, node_size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) return;
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
      MPI_SUCCESS)
    return;
  mark_owned(node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  if (node_size == size) return;  // one node: shared memory only
  MPI_Barrier(MPI_COMM_WORLD);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// The process that initialized MPI: a child it forks (a DataLoader worker,
// os.fork) runs its exit handlers too, on a copy of its state.
pid_t g_owner = 0;

// When the library initialized MPI it also finalizes it, at exit; not in a
// forked child, whose destroy and MPI_Finalize would be collective calls on
// the parent's communicators, windows and PMI connection.
void finalize_owned() {
  if (getpid() != g_owner) return;
  std::vector<pg_strategy *> live;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    live = g_live;
  }
  // Every rank destroys them in one order (each destroy may wait for its
  // peers): the last made first, so a split goes before its parent.
  for (auto s = live.rbegin(); s != live.rend(); ++s) pg_strategy_destroy(*s);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  settle_before_finalize();
  MPI_Finalize();
}

void check_mpi_library() {
  char running[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(running, &len);
#if defined(MPICH_VERSION) && defined(PGS_MPI_AT_RUNTIME)
  // Built to run on whichever library of the MPICH ABI the process loaded.
  const char *built = "the MPICH ABI (libmpi.so.12)";
  bool same = std::strstr(running, "MPICH") != nullptr || std::strstr(running, "Intel(R) MPI") != nullptr;
#elif defined(MPICH_VERSION)
  const char *built = "MPICH Version:\t" MPICH_VERSION;
  bool same = std::strstr(running, MPICH_VERSION) != nullptr && std::strstr(running, "MPICH") != nullptr;
#elif defined(OMPI_MAJOR_VERSION)
  char built_buf[64];
  std::snprintf(built_buf, sizeof built_buf, "Open MPI v%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION);
  const char *built = built_buf;
  bool same = std::strstr(running, built_buf) != nullptr;
#else
  const char *built = "unknown";
  bool same = true;
#endif
  if (!same) {
    const char *newline = std::strchr(running, '\n');
    int first_line = newline ? static_cast<int>(newline - running) : len;
    // Printed whatever PGS_LOG says: a mismatched MPI breaks in obscure ways later.
    log::write(params::LogLevel::warn,
           "pgstrategy was built against %s but runs with '%.*s'; rebuild it against the MPI "
           "the application uses",
           built, first_line, running);
  }
}

}  // namespace

pg_status ensure_mpi() {
  std::lock_guard<std::mutex> lock(g_mutex);
  static bool checked = false;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return fail(PG_ERR_STATE, "MPI has been finalized; no strategy can be created any more");
  if (!initialized) {
    // Without an MPI launcher, a job of N > 1 processes comes up through the
    // library's bootstrap (docs/launch.md): it arranges PMI for MPI_Init.
    PG_CHECK(launch::before_mpi_init());
    int provided = 0;
    PG_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    launch::after_mpi_init();
    g_owner = getpid();
    std::atexit(finalize_owned);
  }
  if (!checked) {
    checked = true;
    MPI_Query_thread(&g_level);
    int keyval = MPI_KEYVAL_INVALID;
    PG_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_finalize, &keyval, nullptr));
    PG_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr));
    check_mpi_library();
  }
  // A world of 1 while the launcher says N: every process would run alone.
  return launch::check_world();
}

int thread_level() { return g_level; }

bool finalizing() { return g_finalizing.load(std::memory_order_relaxed); }

bool mpi_alive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void track(pg_strategy *s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_live.push_back(s);
}

void untrack(pg_strategy *s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_live.erase(std::remove(g_live.begin(), g_live.end(), s), g_live.end());
}

void with_live(pg_strategy *s, const std::function<void(pg_strategy *)> &fn) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (std::find(g_live.begin(), g_live.end(), s) != g_live.end()) fn(s);
}

void for_each_live(const std::function<void(pg_strategy *)> &fn) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (pg_strategy *s : g_live) fn(s);
}

}  // namespace pg::runtime
