// A strategy for each communicator of the program that has a routed call,
// kept in an attribute of the communicator: made on the first routed call,
// destroyed by the attribute's delete callback when the program frees the
// communicator, and before MPI finalizes for those never freed.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "layer.h"

namespace pgs_mpi {
namespace {

// What the attribute holds: a strategy, or why the communicator has none.
struct Entry {
  MPI_Comm comm = MPI_COMM_NULL;
  pg_strategy *strategy = nullptr;
  Why why = Why::no_strategy;
};

// Entries without a strategy are shared: one for the library's communicators
// (and the program's while the library makes its strategy), one per reason.
Entry library_entry;

Entry *declined_for(Why why) {
  static std::array<Entry, static_cast<std::size_t>(Why::count_)> declined = [] {
    std::array<Entry, static_cast<std::size_t>(Why::count_)> all;
    for (std::size_t i = 0; i < all.size(); ++i) all[i].why = static_cast<Why>(i);
    return all;
  }();
  return &declined[static_cast<std::size_t>(why)];
}

std::atomic<bool> finalizing{false};

// The entries with a strategy, oldest first, for destroy_all.
std::mutex made_mutex;
std::vector<Entry *> made;

int on_free(MPI_Comm, int, void *value, void *) {
  auto *e = static_cast<Entry *>(value);
  if (!e->strategy) return MPI_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(made_mutex);
    made.erase(std::remove(made.begin(), made.end(), e), made.end());
  }
  // Collective over the communicator, as its MPI_Comm_free is.
  InLibrary inside;
  pg_strategy_destroy(e->strategy);
  delete e;
  return MPI_SUCCESS;
}

int keyval() {
  static const int k = [] {
    int key = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_free, &key, nullptr);
    return key;
  }();
  return k;
}

void set(MPI_Comm comm, Entry *e) { PMPI_Comm_set_attr(comm, keyval(), e); }

// Whether a communicator of the program can have a strategy; if not, why.
bool routable(MPI_Comm comm, Why *why) {
  int is_inter = 0, size = 1;
  PMPI_Comm_test_inter(comm, &is_inter);
  if (!is_inter) PMPI_Comm_size(comm, &size);
  *why = is_inter ? Why::intercommunicator : size == 1 ? Why::one_rank : Why::backend_mpi;
  return !is_inter && size > 1 && std::strcmp(backend(), "mpi") != 0;
}

Entry *make(MPI_Comm comm) {
  Why why;
  if (!routable(comm, &why)) {
    set(comm, declined_for(why));
    return declined_for(why);
  }
  // Calls the library makes on this communicator while it makes the strategy
  // are its own.
  set(comm, &library_entry);
  pg_strategy *s = nullptr;
  pg_status st;
  {
    InLibrary inside;
    st = pg_strategy_create_comm("cpu", backend(), comm, &s);
  }
  if (st != PG_OK) {
    // Every rank has the same status (creation agrees), so every rank passes.
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rank == 0)
      std::fprintf(stderr, "pgs-mpi: no strategy (backend %s) for a communicator: %s: %s; its collectives go to MPI\n",
                   backend(), pg_status_name(st), pg_last_error());
    set(comm, declined_for(Why::no_strategy));
    return declined_for(Why::no_strategy);
  }
  auto *e = new Entry{comm, s, Why::no_strategy};
  {
    std::lock_guard<std::mutex> lock(made_mutex);
    made.push_back(e);
  }
  set(comm, e);
  return e;
}

}  // namespace

const char *backend() {
  static const std::string name = [] {
    const char *value = std::getenv("PGS_BACKEND");
    const std::string v = value ? value : "";
    if (v.find(':') == std::string::npos) return v.empty() ? std::string("fairring") : v;
    // A list, device:name[,device:name]: the CPU's.
    for (std::size_t at = 0; at <= v.size();) {
      const std::size_t end = std::min(v.find(',', at), v.size());
      if (v.compare(at, 4, "cpu:") == 0) return v.substr(at + 4, end - at - 4);
      at = end + 1;
    }
    return std::string("fairring");
  }();
  return name.c_str();
}

void *lookup(MPI_Comm comm, bool *library) {
  if (finalizing.load(std::memory_order_relaxed)) {
    *library = true;
    return nullptr;
  }
  void *value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, keyval(), &value, &found);
  if (found) {
    *library = value == &library_entry;
    return value;
  }
  // First sight of this communicator: the library's own ones are remembered
  // as such (one lookup from then on).
  if (pg_mpi_comm_owned(comm)) {
    set(comm, &library_entry);
    *library = true;
    return &library_entry;
  }
  *library = false;
  return nullptr;
}

pg_strategy *strategy_of(MPI_Comm comm, void **entry, Why *why) {
  auto *e = static_cast<Entry *>(*entry);
  if (!e) *entry = e = make(comm);
  if (!e->strategy) *why = e->why;
  return e->strategy;
}

void destroy_all() {
  std::vector<Entry *> left;
  {
    std::lock_guard<std::mutex> lock(made_mutex);
    left = made;
  }
  // Newest first: each rank destroys the strategies of the communicators it
  // shares with others in the order it made them, backwards, as they do.
  for (auto it = left.rbegin(); it != left.rend(); ++it) PMPI_Comm_delete_attr((*it)->comm, keyval());
  finalizing.store(true);
}

}  // namespace pgs_mpi
