// The random-program conformance test: every rank draws the same program of
// operations from a seed and runs it on several strategies at once, checking
// every result exactly. Arguments, entries and the soak: the comment at the
// top of tests/random/CMakeLists.txt.
#include <mpi.h>
#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "calls.h"
#include "pg_strategy.h"
#include "pg_test.h"
#include "program.h"
#include "schedule.h"
#include "table_backend.h"

namespace pgr {
namespace {

double now() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void sleep_for(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

struct Options {
  std::string backend = "mpi";
  std::uint64_t seed = 1;
  bool seed_given = false;
  std::size_t ops = 200;
  std::size_t seeds = 1;         // programs run one after the other (seed, seed + 1, ...)
  double minutes = 0;            // soak: fresh seeds until this time has passed
  int threads = 1;
  std::size_t max_bytes = 64 << 10;
  unsigned large_percent = 0;    // sizes drawn above every threshold, in percent
  unsigned in_flight = 6;
  double hang_bound = 30;        // a wait or blocking call longer than this is a hang
  unsigned skew_percent = 8;     // operations a rank starts late
  double skew_ms = 20;           // by up to this
  bool big = false;              // one operation above 2 GiB per program (soak)
  bool fault = false;            // a drawn rank aborts at a drawn operation
  double fault_bound = 10;       // the survivors' calls must return within this
  bool fault_backend = false;    // ... with PG_ERR_BACKEND naming the aborted rank
  bool fault_late = false;       // the aborting rank enters the collective, its peers come late
  bool fault_destroy = false;    // a rank of each strategy destroys it while aborting it from a second thread
  bool end_exit = false;         // end the job by exit after a barrier instead of MPI_Finalize
  long stall_at = -1;            // the last rank stops before this operation (the hang report's check)
  bool point_to_point = true;
  bool reorder = true;           // each rank places its point-to-point calls itself (schedule.h)
  bool list = false;             // print the program (each thread's) and run nothing
  std::vector<int> strategies;   // --strategies: the ones a one-thread program uses (default: all)
  bool same_order = false;       // --wait-order same: every rank settles works in one drawn order
  bool mem_alloc = false;        // --mem-alloc: most buffers in pg_mem_alloc memory of their strategy
  std::vector<Kind> kinds;       // --kinds: only these operations
};

const char *const kUsage =
    "usage: test_random [--backend mpi|fairring|gloo|table|plain|NAME] [--seed S] [--ops N] [--seeds K]\n"
    "       [--minutes M] [--threads 1|2] [--max-bytes B] [--large PERCENT] [--in-flight N] [--hang-bound SECONDS]\n"
    "       [--skew PERCENT,MS] [--big] [--fault] [--fault-late] [--fault-destroy] [--fault-bound SECONDS]\n"
    "       [--fault-expect any|backend] [--end finalize|exit] [--stall-at OP] [--no-p2p] [--reorder on|off] [--list]\n"
    "       [--strategies world,duplicate,split] [--wait-order own|same] [--kinds allreduce,barrier,...]\n"
    "       [--mem-alloc]\n";

// A comma-separated list of names, each one of the `count` that name(k)
// gives, into their indices (as T).
template <typename T>
bool names(const char *text, int count, const char *(*name)(T), std::vector<T> *out) {
  out->clear();
  for (std::string list = text; !list.empty();) {
    const std::string item = list.substr(0, list.find(','));
    list = item.size() < list.size() ? list.substr(item.size() + 1) : "";
    int found = -1;
    for (int k = 0; k < count; ++k)
      if (item == name(static_cast<T>(k))) found = k;
    if (found < 0) return false;
    out->push_back(static_cast<T>(found));
  }
  return !out->empty();
}

bool parse(int argc, char **argv, Options *o, std::string *error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char **out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    const char *v = nullptr;
    char *end = nullptr;
    auto number = [&](double *out) {
      if (!value(&v)) return false;
      *out = std::strtod(v, &end);
      return end != v && *end == '\0' && *out >= 0;
    };
    auto whole = [&](std::uint64_t *out) {
      if (!value(&v)) return false;
      *out = std::strtoull(v, &end, 0);
      return end != v && *end == '\0';
    };
    // One of two words; *out: whether it is `yes`.
    auto either = [&](const char *no, const char *yes, bool *out) {
      if (!value(&v) || (std::strcmp(v, no) != 0 && std::strcmp(v, yes) != 0)) return false;
      *out = std::strcmp(v, yes) == 0;
      return true;
    };
    std::uint64_t u = 0;
    double d = 0;
    bool ok = true;
    if (a == "--backend") ok = value(&v) && (o->backend = v, true);
    else if (a == "--seed") ok = whole(&o->seed) && (o->seed_given = true);
    else if (a == "--ops") ok = whole(&u) && u > 0 && (o->ops = u, true);
    else if (a == "--seeds") ok = whole(&u) && u > 0 && (o->seeds = u, true);
    else if (a == "--minutes") ok = number(&o->minutes);
    else if (a == "--threads") ok = whole(&u) && (u == 1 || u == 2) && (o->threads = int(u), true);
    else if (a == "--max-bytes") ok = whole(&u) && u > 0 && (o->max_bytes = u, true);
    else if (a == "--large") ok = whole(&u) && u <= 100 && (o->large_percent = unsigned(u), true);
    else if (a == "--in-flight") ok = whole(&u) && u > 0 && (o->in_flight = unsigned(u), true);
    else if (a == "--hang-bound") ok = number(&d) && d > 0 && (o->hang_bound = d, true);
    else if (a == "--skew") ok = value(&v) && std::sscanf(v, "%u,%lf", &o->skew_percent, &o->skew_ms) == 2;
    else if (a == "--big") o->big = true;
    else if (a == "--fault") o->fault = true;
    else if (a == "--fault-late") o->fault = o->fault_late = true;
    else if (a == "--fault-destroy") o->fault = o->fault_destroy = true;
    else if (a == "--fault-bound") ok = number(&d) && d > 0 && (o->fault_bound = d, true);
    else if (a == "--fault-expect") ok = either("any", "backend", &o->fault_backend);
    else if (a == "--end") ok = either("finalize", "exit", &o->end_exit);
    else if (a == "--stall-at") ok = whole(&u) && (o->stall_at = long(u), true);
    else if (a == "--no-p2p") o->point_to_point = false;
    else if (a == "--reorder") ok = either("off", "on", &o->reorder);
    else if (a == "--list") o->list = true;
    else if (a == "--kinds") ok = value(&v) && names(v, static_cast<int>(Kind::count), kind_name, &o->kinds);
    else if (a == "--wait-order") ok = either("own", "same", &o->same_order);
    else if (a == "--mem-alloc") o->mem_alloc = true;
    else if (a == "--strategies") ok = value(&v) && names(v, kStrategies, strategy_name, &o->strategies);
    else ok = false;
    if (!ok) {
      *error = "bad argument '" + a + "'" + (v ? std::string(" '") + v + "'" : std::string());
      return false;
    }
  }
  if (o->fault && o->threads != 1) {
    *error = "--fault runs one thread";
    return false;
  }
  if (o->fault && o->mem_alloc) {  // MPI may still write into an aborted call's buffers after destroy frees them
    *error = "--mem-alloc does not go with the fault modes";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Everything the runners share: options, strategies, reporting, the monitor.

struct Shared {
  Options options;
  int world_rank = 0, world_size = 1;
  std::string command;  // the command line, for the failure messages
  std::vector<Group> groups = std::vector<Group>(kStrategies);
  Layout layout;          // every rank's place in each strategy, for the placements
  Reordering reordering;
  std::size_t mpi_chunk = 0;  // PGS_MPI_CHUNK_COUNT (0: unset), for the senders of receives from any source
  std::mutex report_mutex;
  int failures_printed = 0;
  std::atomic<long> failures{0};
  std::atomic<std::uint64_t> ops_run{0};
};

// Prints one failure (rank-prefixed, with the seed) and counts it for the
// verdict; the first 20 of a rank are printed.
void fail(Shared &sh, std::uint64_t seed, const char *fmt, ...) {
  char message[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  std::lock_guard<std::mutex> lock(sh.report_mutex);
  ++sh.failures;
  if (sh.failures_printed++ < 20)
    pg_test_check(0, __FILE__, __LINE__, "seed %" PRIu64 ": %s\n  reproduce: %s --seed %" PRIu64, seed, message,
                  sh.command.c_str(), seed);
  else
    pg_test_check(0, __FILE__, __LINE__, "seed %" PRIu64 ": (more failures)", seed);
}

// The flight recorder's dump of this rank (docs/trace.md): whether one of its
// entries is `name` (count or elements `count`) still in flight ("status":
// null). `found` gets the entry.
bool dump_names(int world_rank, const char *name, std::size_t count, std::string *found) {
  const char *dir = std::getenv("PGS_TRACE");
  if (!dir || !*dir) return false;
  const std::string suffix = "-rank" + std::to_string(world_rank) + ".json";
  std::string newest;
  double newest_time = -1;
  if (DIR *d = opendir(dir)) {
    while (dirent *e = readdir(d)) {
      const std::string file = e->d_name;
      if (file.rfind("pgstrategy-", 0) != 0 || file.size() < suffix.size() ||
          file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      const std::string path = std::string(dir) + "/" + file;
      struct stat st;
      if (stat(path.c_str(), &st) == 0 && double(st.st_mtime) >= newest_time) {
        newest_time = double(st.st_mtime);
        newest = path;
      }
    }
    closedir(d);
  }
  if (newest.empty()) return false;
  std::ifstream in(newest);
  std::stringstream text;
  text << in.rdbuf();
  // Whitespace outside strings out, then the entries: objects without nested
  // objects that start with "seq".
  std::string json;
  bool quoted = false;
  for (char c : text.str()) {
    if (c == '"') quoted = !quoted;
    if (quoted || !std::isspace(static_cast<unsigned char>(c))) json += c;
  }
  const std::string op = std::string("\"op\":\"") + name + "\"", c1 = "\"count\":" + std::to_string(count),
                    c2 = "\"elements\":" + std::to_string(count);
  for (std::size_t at = json.find("{\"seq\":"); at != std::string::npos; at = json.find("{\"seq\":", at + 1)) {
    const std::size_t end = json.find('}', at);
    if (end == std::string::npos) break;
    const std::string entry = json.substr(at, end - at + 1);
    auto has = [&](const std::string &s) {
      const std::size_t k = entry.find(s);
      return k != std::string::npos && (k + s.size() >= entry.size() || !std::isdigit(entry[k + s.size()]));
    };
    if (has(op) && has("\"status\":null") && (has(c1) || has(c2) || count == 0)) {
      *found = entry;
      return true;
    }
  }
  return false;
}

// A call that has not returned in time: said with the operation, the
// flight recorder's dump written and read back (it must name the call), and
// the job ended (a hung job cannot agree on anything).
[[noreturn]] void hang(Shared &sh, std::uint64_t seed, const std::string &what, const char *trace_name,
                       std::size_t trace_count, double seconds) {
  {
    std::lock_guard<std::mutex> lock(sh.report_mutex);
    std::fprintf(stderr, "[rank %d] HANG seed %" PRIu64 ": %s has not finished after %.1f s\n  reproduce: %s --seed %" PRIu64 "\n",
                 sh.world_rank, seed, what.c_str(), seconds, sh.command.c_str(), seed);
    const char *dir = std::getenv("PGS_TRACE");
    if (dir && *dir) {
      const pg_status st = pg_trace_dump();
      std::string entry;
      if (st != PG_OK)
        std::fprintf(stderr, "[rank %d] pg_trace_dump: %s: %s\n", sh.world_rank, pg_status_name(st), pg_last_error());
      else if (dump_names(sh.world_rank, trace_name, trace_count, &entry))
        std::fprintf(stderr, "[rank %d] hang reported: the flight recorder's dump names it: %s\n", sh.world_rank,
                     entry.c_str());
      else
        std::fprintf(stderr, "[rank %d] FAIL: the flight recorder's dump in %s does not name %s (count %zu) in flight\n",
                     sh.world_rank, dir, trace_name, trace_count);
    }
    std::fflush(stderr);
    std::fflush(stdout);
  }
  sleep_for(2);  // the other ranks' reports first, before the launcher ends the job
  _exit(3);
}

// Watches the blocking calls of every runner: one slot per thread.
class Monitor {
 public:
  struct Slot {
    bool active = false;
    double since = 0, bound = 0;
    std::uint64_t seed = 0;
    std::string what;
    const char *trace_name = "";
    std::size_t trace_count = 0;
    pg_strategy *abort_on_expiry = nullptr;  // fault mode: the survivor's own abort ends the call
    bool expired = false;
  };

  explicit Monitor(Shared &sh) : sh_(sh), thread_([this] { loop(); }) {}
  ~Monitor() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void begin(int slot, std::uint64_t seed, const Call &call, double bound, pg_strategy *abort_on_expiry = nullptr) {
    begin(slot, seed, call.what(), call.trace_name(), call.trace_count(), bound, abort_on_expiry);
  }
  // A call that is not an operation (a destroy): what it is, and its name in the flight recorder.
  void begin(int slot, std::uint64_t seed, const std::string &what, const char *trace_name, std::size_t trace_count,
             double bound, pg_strategy *abort_on_expiry = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot &s = slots_[slot];
    s.active = true;
    s.since = now();
    s.bound = bound;
    s.seed = seed;
    s.what = what;
    s.trace_name = trace_name;
    s.trace_count = trace_count;
    s.abort_on_expiry = abort_on_expiry;
    s.expired = false;
  }
  // Whether the call ran past its bound (fault mode: it was then aborted).
  bool end(int slot) {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[slot].active = false;
    return slots_[slot].expired;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(50));
      const double t = now();
      for (Slot &s : slots_) {
        if (!s.active || t - s.since < s.bound) continue;
        if (!s.abort_on_expiry) {
          const Slot copy = s;
          lock.unlock();
          hang(sh_, copy.seed, copy.what, copy.trace_name, copy.trace_count, t - copy.since);
        }
        if (!s.expired) {
          s.expired = true;
          pg_strategy_abort(s.abort_on_expiry);
        } else if (t - s.since > s.bound + 10) {
          std::fprintf(stderr, "[rank %d] %s: still blocked 10 s after this rank's own pg_strategy_abort\n",
                       sh_.world_rank, s.what.c_str());
          const Slot copy = s;
          lock.unlock();
          hang(sh_, copy.seed, copy.what, copy.trace_name, copy.trace_count, t - copy.since);
        }
      }
    }
  }

  Shared &sh_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  Slot slots_[2];
  std::thread thread_;
};

// ---------------------------------------------------------------------------
// One program on one thread.

// Buffers and works the library may still use after an abort (MPI cannot
// cancel a collective): kept until the process exits (pg_strategy_abort).
std::vector<std::unique_ptr<Call>> &kept() {
  static auto *calls = new std::vector<std::unique_ptr<Call>>;
  return *calls;
}

// The tag of the receive nobody sends to (the fault modes').
constexpr int kNeverSent = 32001;

class Runner {
 public:
  Runner(Shared &sh, Monitor &monitor, int slot, std::uint64_t seed, const Limits &limits, std::vector<Step> steps)
      : sh_(sh),
        monitor_(monitor),
        slot_(slot),
        seed_(seed),
        steps_(std::move(steps)),
        local_(hash(seed, static_cast<std::uint64_t>(sh.world_rank), static_cast<std::uint64_t>(slot), 0x10ca1)),
        limits_(limits) {
    if (limits.fault_index >= 0) {
      Rng draw(seed ^ 0xfa17);
      aborter_ = static_cast<int>(draw.below(static_cast<std::uint64_t>(sh.world_size)));
    }
  }

  // Runs this rank's steps (in fault mode, up to the fault, where it ends).
  void run() {
    for (const Step &step : steps_) {
      const Op &op = step.op;
      if (!step.start) {
        settle(step.anchor, step.works);
      } else if (static_cast<long>(op.index) == limits_.fault_index) {
        if (sh_.options.fault_destroy)
          destroy_racing_abort(op);
        else
          fault(op);
        return;
      } else {
        if (static_cast<long>(op.index) == limits_.forced_index && sh_.world_rank == sh_.world_size - 1) {
          std::fprintf(stderr, "[rank %d] stopping before %s (--stall-at)\n", sh_.world_rank, describe(op).c_str());
          std::fflush(stderr);
          sleep_for(3 * sh_.options.hang_bound + 30);
        }
        skew();
        execute(op);
        ++sh_.ops_run;
      }
      if (told_) {
        end_all("survivor");
        return;
      }
    }
  }

 private:
  struct Pending {
    std::unique_ptr<Call> call;
    int strategy = 0;
    bool collective = false;
    std::vector<pg_status> statuses;  // one per work
    std::vector<bool> settled;
  };

  void skew() {
    if (sh_.options.skew_percent && local_.chance(sh_.options.skew_percent))
      sleep_for(local_.uniform() * sh_.options.skew_ms * 1e-3);
  }

  const Group &group(int strategy) const { return sh_.groups[static_cast<std::size_t>(strategy)]; }

  // After a call returned: its status and its results.
  void verify(const Call &call, pg_status st) {
    if (told_early(call, st)) return;
    if (st != call.expected_status()) {
      fail(sh_, seed_, "%s: returned %s, expected %s: %s", call.what().c_str(), pg_status_name(st),
           pg_status_name(call.expected_status()), pg_last_error());
      if (st != PG_OK && call.expected_status() == PG_OK) stop_job(call);
      return;
    }
    const std::string diff = call.check();
    if (!diff.empty()) fail(sh_, seed_, "%s: %s", call.what().c_str(), diff.c_str());
  }

  // A call failed where it should not: the strategy may be poisoned and the
  // peers wait for this rank, so the job ends here (the dump first).
  [[noreturn]] void stop_job(const Call &call) {
    if (std::getenv("PGS_TRACE")) pg_trace_dump();
    std::fprintf(stderr, "[rank %d] ending the job after the failure of %s\n", sh_.world_rank, call.what().c_str());
    std::fflush(stderr);
    sleep_for(1);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
  }

  void execute(const Op &op) {
    auto call = std::make_unique<Call>(op, group(op.strategy));
    if (!call->involved()) return;
    if (!op.nonblocking) {
      monitor_.begin(slot_, seed_, *call, sh_.options.hang_bound);
      const pg_status st = call->start();
      monitor_.end(slot_);
      verify(*call, st);
      if (told_) kept().push_back(std::move(call));  // MPI may still use its buffers
      return;
    }
    const pg_status st = call->start();
    if (told_early(*call, st)) {
      kept().push_back(std::move(call));
      return;
    }
    if (st != PG_OK) {
      fail(sh_, seed_, "%s: the start returned %s: %s", call->what().c_str(), pg_status_name(st), pg_last_error());
      stop_job(*call);
    }
    Pending p;
    p.strategy = op.strategy;
    p.collective = is_collective(op.kind);
    p.statuses.assign(call->works().size(), PG_OK);
    p.settled.assign(call->works().size(), false);
    p.call = std::move(call);
    pending_[op.index] = std::move(p);
  }

  // Waits for a work in one of the ways a user does, bounded: a wait with
  // the bound, a test loop, a zero-time wait first, short waits repeated.
  // A work that does not finish in time is a hang.
  pg_status wait(pg_work *w, const Call &call) {
    const double bound = sh_.options.hang_bound, start = now();
    pg_status st = PG_OK;
    switch (local_.below(4)) {
      case 0: st = pg_work_wait(w, bound); break;
      case 1: {
        int done = 0;
        while ((st = pg_work_test(w, &done)) == PG_OK && !done) {
          if (now() - start > bound) {
            st = PG_ERR_TIMEOUT;
            break;
          }
          if (local_.chance(50))
            sched_yield();
          else
            sleep_for(1e-6 * static_cast<double>(local_.below(200)));
        }
        break;
      }
      case 2:
        st = pg_work_wait(w, 0);
        if (st == PG_ERR_TIMEOUT) st = pg_work_wait(w, bound);
        break;
      default:
        do st = pg_work_wait(w, 1e-3);
        while (st == PG_ERR_TIMEOUT && now() - start < bound);
        break;
    }
    if (st == PG_ERR_TIMEOUT) hang(sh_, seed_, call.what(), call.trace_name(), call.trace_count(), now() - start);
    return st;
  }

  // Settles the outstanding operations `indices`, their works in a random
  // order of this rank's own (a later one first, at times), or with
  // --wait-order same in one order every rank draws alike (from the
  // operation `anchor` they follow); after a collective work, every
  // collective work started before it on its strategy must be finished too;
  // a receive from any source must name its sender.
  void settle(std::size_t anchor, const std::vector<std::size_t> &indices) {
    std::vector<std::pair<std::size_t, std::size_t>> works;  // (operation, work)
    for (std::size_t index : indices) {
      auto it = pending_.find(index);
      if (it == pending_.end()) continue;  // not involved on this rank
      for (std::size_t k = 0; k < it->second.call->works().size(); ++k) works.push_back({index, k});
    }
    if (sh_.options.same_order) {
      // The same order on every rank: drawn over every work of the operations
      // (a rank that is not involved in one skips it).
      std::vector<std::pair<std::size_t, std::size_t>> all;
      for (std::size_t index : indices)
        for (std::size_t k = 0; k < 2; ++k) all.push_back({index, k});
      Rng order(hash(seed_, anchor, 0x0bde, 0));
      for (std::size_t k = all.size(); k > 1; --k) std::swap(all[k - 1], all[order.below(k)]);
      std::vector<std::pair<std::size_t, std::size_t>> mine;
      for (const auto &w : all)
        if (std::find(works.begin(), works.end(), w) != works.end()) mine.push_back(w);
      works = mine;
    } else {
      for (std::size_t k = works.size(); k > 1; --k) std::swap(works[k - 1], works[local_.below(k)]);
    }
    for (const auto &[index, k] : works) {
      Pending &p = pending_[index];
      pg_work *w = p.call->works()[k];
      // Now and then a free before the end: PG_ERR_STATE while unfinished.
      if (local_.chance(5)) {
        int done = 0;
        if (pg_work_test(w, &done) == PG_OK && !done) {
          const pg_status freed = pg_work_free(w);
          if (freed == PG_OK) {  // it finished in between: freed, its status gone
            p.settled[k] = true;
            p.statuses[k] = PG_OK;
            continue;
          }
          if (freed != PG_ERR_STATE)
            fail(sh_, seed_, "%s: pg_work_free of unfinished work returned %s", p.call->what().c_str(),
                 pg_status_name(freed));
        }
      }
      p.statuses[k] = wait(w, *p.call);
      p.settled[k] = true;
      if (p.collective && p.statuses[k] == PG_OK && !p.call->empty()) check_order(index, p.strategy, p.call->what());
      const std::string source = p.statuses[k] == PG_OK ? p.call->check_source(w, sh_.mpi_chunk) : "";
      if (!source.empty()) fail(sh_, seed_, "%s: %s", p.call->what().c_str(), source.c_str());
      const pg_status freed = pg_work_free(w);
      if (freed != PG_OK)
        fail(sh_, seed_, "%s: pg_work_free of finished work returned %s", p.call->what().c_str(), pg_status_name(freed));
    }
    for (std::size_t index : indices) {
      auto it = pending_.find(index);
      if (it == pending_.end()) continue;
      pg_status st = PG_OK;
      for (pg_status s : it->second.statuses)
        if (s != PG_OK) st = s;
      verify(*it->second.call, st);
      if (told_) kept().push_back(std::move(it->second.call));
      pending_.erase(it);
    }
  }

  // Collective works on one strategy complete in start order (pg_strategy.h).
  void check_order(std::size_t index, int strategy, const std::string &what) {
    for (auto &[other, p] : pending_) {
      if (other >= index) break;
      if (!p.collective || p.strategy != strategy) continue;
      for (std::size_t k = 0; k < p.call->works().size(); ++k) {
        if (p.settled[k]) continue;
        int done = 0;
        const pg_status st = pg_work_test(p.call->works()[k], &done);
        if (st == PG_OK && !done)
          fail(sh_, seed_, "%s finished while %s, started before it on the same strategy, has not", what.c_str(),
               p.call->what().c_str());
      }
    }
  }

  // Fault mode: this operation is where the drawn rank aborts (pg_strategy_abort)
  // and where its peers go on, into a collective it never joins.
  void fault(const Op &op);
  // --fault-destroy: this operation is where every strategy is destroyed, a
  // drawn rank of each group racing its destroy with its abort.
  void destroy_racing_abort(const Op &op);
  // Fault mode: every strategy aborted, its works waited for, then destroyed
  // (local after an abort, never blocking); `who` for the messages.
  void end_all(const char *who);

  // Fault mode: a call before the fault that failed because the aborting rank,
  // ahead of this one, has aborted already (it finished its part of the call
  // and went on; the alarm ends the call here: docs/errors.md). True when
  // that is why `st` is a failure; the program then ends here.
  bool told_early(const Call &call, pg_status st) {
    if (aborter_ < 0 || st == PG_OK) return false;
    const std::string message = pg_last_error();
    if (!told_ && !(st == PG_ERR_BACKEND && message.find("rank " + std::to_string(aborter_)) != std::string::npos))
      return false;
    if (!told_)
      std::printf("[rank %d] survivor: %s returned %s before the fault: %s\n", sh_.world_rank, call.what().c_str(),
                  pg_status_name(st), message.c_str());
    told_ = true;
    return true;
  }

  Shared &sh_;
  Monitor &monitor_;
  int slot_;
  std::uint64_t seed_;
  std::vector<Step> steps_;
  Rng local_;  // this rank's own stream: skew, wait order and manner
  Limits limits_;
  std::map<std::size_t, Pending> pending_;
  int aborter_ = -1;     // fault mode: the rank that aborts
  bool told_ = false;    // fault mode: this rank learned of the abort before the fault
};

// ---------------------------------------------------------------------------
// Fault mode.


void Runner::end_all(const char *who) {
  const Options &o = sh_.options;
  // Every strategy aborted (each rank stops at its own abort), its works
  // waited for, then destroyed: local after an abort, never blocking.
  for (Group &g : sh_.groups)
    if (g.s) pg_strategy_abort(g.s);
  for (auto &[index, p] : pending_) {
    for (std::size_t k = 0; k < p.call->works().size(); ++k) {
      if (p.settled[k]) continue;
      const double start = now();
      const pg_status st = pg_work_wait(p.call->works()[k], o.fault_bound);
      if (st != PG_OK && st != PG_ERR_ABORTED && st != PG_ERR_BACKEND && st != PG_ERR_STATE)
        fail(sh_, seed_, "%s: %s after the abort: %s returned %s", who, p.call->what().c_str(), "pg_work_wait",
             pg_status_name(st));
      if (now() - start > 1.0)
        fail(sh_, seed_, "%s: %s: its wait took %.2f s after the abort", who, p.call->what().c_str(), now() - start);
      if (st != PG_ERR_TIMEOUT) pg_work_free(p.call->works()[k]);
    }
    kept().push_back(std::move(p.call));
  }
  pending_.clear();
  for (Group &g : sh_.groups) {
    if (!g.s) continue;
    const double start = now();
    const pg_status st = pg_strategy_destroy(g.s);
    g.s = nullptr;
    if (st != PG_OK) fail(sh_, seed_, "%s: destroy after the abort returned %s: %s", who, pg_status_name(st), pg_last_error());
    if (now() - start > 1.0) fail(sh_, seed_, "%s: destroy after the abort took %.2f s", who, now() - start);
  }
}

void Runner::fault(const Op &op) {
  const Options &o = sh_.options;
  const int aborter = aborter_;
  pg_strategy *s = group(op.strategy).s;
  const int me = sh_.world_rank;
  if (me == 0)
    std::printf("fault: rank %d aborts the %s at operation %s\n", aborter, strategy_name(op.strategy),
                describe(op).c_str());
  std::fflush(stdout);

  if (me == aborter && o.fault_late) {
    // The collective itself, aborted from another thread while it waits for
    // the peers, which come 0.3 s later: MPI may still write into its buffers
    // then (kept to the end), and nothing else of the call's may be freed
    // under it (what AddressSanitizer would see).
    auto call = std::make_unique<Call>(op, group(op.strategy));
    std::atomic<double> aborted_at{0};
    std::thread aborter_thread([&] {
      sleep_for(0.02 + local_.uniform() * 0.03);
      aborted_at = now();
      pg_strategy_abort(s);
    });
    pg_status st = call->start();
    if (st == PG_OK && !call->works().empty()) {
      st = pg_work_wait(call->works()[0], o.fault_bound);
      if (st != PG_ERR_TIMEOUT) pg_work_free(call->works()[0]);
    }
    const double returned = now();
    aborter_thread.join();
    // PG_OK where this rank's part needs no peer (a root's broadcast or
    // scatter, gather to another rank: MPI's sends may complete alone).
    if (st != PG_ERR_ABORTED && st != PG_OK)
      fail(sh_, seed_, "aborting rank: %s returned %s, expected PG_ERR_ABORTED: %s", call->what().c_str(),
           pg_status_name(st), pg_last_error());
    else if (returned - aborted_at > 1.0)
      fail(sh_, seed_, "aborting rank: %s returned %.2f s after the abort", call->what().c_str(), returned - aborted_at);
    std::printf("[rank %d] aborted the %s in %s\n", me, strategy_name(op.strategy), call->what().c_str());
    kept().push_back(std::move(call));
    end_all("aborting rank");
    return;
  }
  if (me == aborter) {
    // A receive nobody sends to, then the abort from another thread while
    // this one waits: the work ends PG_ERR_ABORTED, soon.
    const int peer = (me + 1) % sh_.world_size;
    static char never[8];
    pg_work *w = nullptr;
    pg_status st = pg_irecv(s, never, sizeof never, PG_UINT8, peer, kNeverSent, &w);
    if (st != PG_OK) fail(sh_, seed_, "aborting rank: pg_irecv returned %s: %s", pg_status_name(st), pg_last_error());
    const double delay = local_.uniform() * 0.03;
    std::atomic<double> aborted_at{0};
    std::thread aborter_thread([&] {
      sleep_for(delay);
      aborted_at = now();
      const pg_status a = pg_strategy_abort(s);
      if (a != PG_OK) fail(sh_, seed_, "pg_strategy_abort returned %s: %s", pg_status_name(a), pg_last_error());
    });
    if (w) {
      st = pg_work_wait(w, o.fault_bound);
      const double returned = now();
      aborter_thread.join();
      if (st != PG_ERR_ABORTED)
        fail(sh_, seed_, "aborting rank: the receive in flight returned %s, expected PG_ERR_ABORTED: %s",
             pg_status_name(st), pg_last_error());
      else if (returned - aborted_at > 1.0)
        fail(sh_, seed_, "aborting rank: the receive returned %.2f s after the abort", returned - aborted_at);
      if (st != PG_ERR_TIMEOUT) pg_work_free(w);
    } else {
      aborter_thread.join();
    }
    // The works of this strategy started before: finished, or ended aborted.
    for (auto &[index, p] : pending_) {
      if (p.strategy != op.strategy) continue;
      for (std::size_t k = 0; k < p.call->works().size(); ++k) {
        const pg_status ws = pg_work_wait(p.call->works()[k], o.fault_bound);
        if (ws != PG_OK && ws != PG_ERR_ABORTED)
          fail(sh_, seed_, "aborting rank: %s returned %s, expected PG_OK or PG_ERR_ABORTED", p.call->what().c_str(),
               pg_status_name(ws));
        if (ws != PG_ERR_TIMEOUT) pg_work_free(p.call->works()[k]);
        p.settled[k] = true;
      }
    }
    st = pg_barrier(s);
    if (st != PG_ERR_STATE) fail(sh_, seed_, "aborting rank: a call after the abort returned %s, expected PG_ERR_STATE", pg_status_name(st));
    std::printf("[rank %d] aborted the %s at %s\n", me, strategy_name(op.strategy), describe(op).c_str());
    end_all("aborting rank");
    return;
  }

  // A survivor: into the collective the aborting rank never joins (or, late,
  // one it left aborted).
  if (o.fault_late) sleep_for(0.3);
  auto call = std::make_unique<Call>(op, group(op.strategy));
  const double start = now();
  pg_status st = PG_OK;
  bool expired = false;
  if (!op.nonblocking) {
    monitor_.begin(slot_, seed_, *call, o.fault_bound, s);
    st = call->start();
    expired = monitor_.end(slot_);
  } else {
    st = call->start();
    if (st == PG_OK && !call->works().empty()) {
      pg_work *w = call->works()[0];
      st = pg_work_wait(w, o.fault_bound);
      if (st == PG_ERR_TIMEOUT) {
        expired = true;
        pg_strategy_abort(s);
        st = pg_work_wait(w, 10);
      }
      if (st != PG_ERR_TIMEOUT) pg_work_free(w);
    }
  }
  const double took = now() - start;
  const std::string message = pg_last_error();
  std::printf("[rank %d] survivor: %s returned %s after %.3f s%s: %s\n", me, call->what().c_str(), pg_status_name(st),
              took, expired ? " (only after this rank's own abort at the bound)" : "", st == PG_OK ? "" : message.c_str());
  std::fflush(stdout);
  if (expired)
    fail(sh_, seed_, "survivor: %s did not return within the bound of %.1f s although rank %d aborted (it returned %s after this rank's own abort)",
         call->what().c_str(), o.fault_bound, aborter, pg_status_name(st));
  else if (st == PG_OK && !o.fault_late)  // late, MPI may match what the aborted call had posted
    fail(sh_, seed_, "survivor: %s returned PG_OK although rank %d never joined it", call->what().c_str(), aborter);
  else if (o.fault_backend && st != PG_OK &&
           (st != PG_ERR_BACKEND || message.find("rank " + std::to_string(aborter)) == std::string::npos))
    fail(sh_, seed_, "survivor: %s returned %s (\"%s\"), expected PG_ERR_BACKEND naming rank %d", call->what().c_str(),
         pg_status_name(st), message.c_str(), aborter);
  kept().push_back(std::move(call));
  end_all("survivor");
}

// Every strategy destroyed, in the order of every rank, once every rank has
// settled its works (a barrier on MPI_COMM_WORLD, which the library never
// uses, then: an abort would end what a peer still has in flight). On each,
// one rank of each group, drawn alike, races: its destroy on this thread and
// pg_strategy_abort on a second one, in a drawn order, the second call up to
// 5 ms after the first. A receive nobody sends to, posted first, keeps that
// destroy from returning before the abort has begun (destroy completes
// unfinished works first, and nothing but the abort ends that one): never is
// a strategy aborted after its destroy. Its peers destroy as usual, and learn
// of the abort. Every destroy must return within --fault-bound (else it is a
// hang: the monitor ends the job): the racer's with PG_OK or PG_ERR_ABORTED
// (its wait for the receive was aborted), its peers' with PG_OK; the receive
// ends PG_ERR_ABORTED.
void Runner::destroy_racing_abort(const Op &op) {
  const Options &o = sh_.options;
  std::vector<std::size_t> in_flight;
  for (const auto &entry : pending_) in_flight.push_back(entry.first);
  settle(op.index, in_flight);
  MPI_Barrier(MPI_COMM_WORLD);
  if (sh_.world_rank == 0) std::printf("destroy racing abort at operation %s\n", describe(op).c_str());
  std::fflush(stdout);
  Rng racers(seed_ ^ 0xde57);
  for (int strategy = 0; strategy < kStrategies; ++strategy) {
    Group &g = sh_.groups[static_cast<std::size_t>(strategy)];
    const bool racing = racers.next() % static_cast<std::uint64_t>(g.size) == static_cast<std::uint64_t>(g.rank);
    auto destroy = [&] {
      monitor_.begin(slot_, seed_, std::string("pg_strategy_destroy of the ") + strategy_name(strategy) +
                     (racing ? ", racing its abort" : ", a peer racing its own with its abort"), "destroy", 0,
                     o.fault_bound);
      const pg_status st = pg_strategy_destroy(g.s);
      monitor_.end(slot_);
      return st;
    };
    pg_status destroyed = PG_OK;
    if (!racing) {
      destroyed = destroy();
      if (destroyed != PG_OK)
        fail(sh_, seed_, "destroy of the %s while a peer races its own with its abort returned %s: %s",
             strategy_name(strategy), pg_status_name(destroyed), pg_last_error());
    } else {
      static char never[kStrategies][8];
      pg_work *receive = nullptr;
      pg_status st = pg_irecv(g.s, never[strategy], sizeof never[strategy], PG_UINT8, (g.rank + 1) % g.size,
                              kNeverSent, &receive);
      if (st != PG_OK) fail(sh_, seed_, "racing rank: pg_irecv returned %s: %s", pg_status_name(st), pg_last_error());
      // Drawn from the seed alone (this rank's stream moves with the waits' timing).
      Rng race(hash(seed_, static_cast<std::uint64_t>(sh_.world_rank), 0xde57, static_cast<std::uint64_t>(strategy)));
      const bool destroy_first = race.chance(50);
      const double delay = race.uniform() * 5e-3;
      pg_status aborted = PG_OK;
      std::thread aborter([&] {
        if (destroy_first) sleep_for(delay);
        aborted = pg_strategy_abort(g.s);
      });
      if (!destroy_first) sleep_for(delay);
      destroyed = destroy();
      aborter.join();
      std::printf("[rank %d] destroy of the %s raced its abort (%s first, the other %.1f ms later): %s\n",
                  sh_.world_rank, strategy_name(strategy), destroy_first ? "destroy" : "abort", delay * 1e3,
                  pg_status_name(destroyed));
      if (aborted != PG_OK) fail(sh_, seed_, "racing rank: pg_strategy_abort returned %s", pg_status_name(aborted));
      if (destroyed != PG_OK && destroyed != PG_ERR_ABORTED)
        fail(sh_, seed_, "racing rank: destroy of the %s returned %s: %s", strategy_name(strategy),
             pg_status_name(destroyed), pg_last_error());
      if (receive) {
        st = pg_work_wait(receive, o.fault_bound);
        if (st != PG_ERR_ABORTED)
          fail(sh_, seed_, "racing rank: the receive nobody sends to ended %s, expected PG_ERR_ABORTED",
               pg_status_name(st));
        if (st != PG_ERR_TIMEOUT) pg_work_free(receive);
      }
    }
    g.s = nullptr;
  }
}

// ---------------------------------------------------------------------------

// --list: the program as every rank draws it, with the settling after each
// operation (the counts a group runs depend on its size: not shown); with
// reordering, each rank's placement of its point-to-point calls (which
// settles them itself) and how many blocking ones come before a collective
// that their peer starts first.
void list_program(std::uint64_t seed, int slot, const std::vector<Op> &ops, const std::vector<std::vector<Step>> &steps,
                  const Layout &layout, bool reorder) {
  for (const Op &op : ops) {
    std::string settle;
    for (std::size_t index : op.settle) settle += " #" + std::to_string(index);
    const std::string tag = is_point_to_point(op.kind) ? ", tag " + std::to_string(op.tag) : "";
    std::printf("thread %d seed %" PRIu64 " %s%s, %zu bytes, root draw %u%s%s\n", slot, seed, describe(op).c_str(),
                tag.c_str(), op.bytes, op.root_draw, settle.empty() ? "" : "; then settle", settle.c_str());
  }
  if (!reorder) return;
  for (int r = 0; r < layout.ranks(); ++r)
    std::printf("thread %d seed %" PRIu64 " rank %d: %s\n", slot, seed, r,
                describe_placement(steps[static_cast<std::size_t>(r)], layout, r).c_str());
  std::printf("thread %d seed %" PRIu64 ": %zu blocking point-to-point call(s) before a collective their peer starts first\n",
              slot, seed, crossings(steps, layout));
}

std::string command_line(int argc, char **argv, int ranks) {
  std::string text;
  for (const char *name : {"PGS_RANKS_PER_NODE", "PGS_FAIRRING_FAST_BYTES", "PGS_FAIRRING_SPLIT_BYTES",
                           "PGS_FAIRRING_TREE_RANKS", "PGS_FAIRRING_MIN_BYTES", "PGS_FAIRRING_SLICE_BYTES",
                           "PGS_FAIRRING_INFLIGHT", "PGS_FAIRRING_ALGO", "PGS_MPI_CHUNK_COUNT", "PGS_MPI_WAIT",
                           "PGS_BACKEND", "PGS_TRACE", "PGS_PLUGIN_PATH"})
    if (const char *v = std::getenv(name)) text += std::string(name) + "=" + v + " ";
  text += "mpiexec -n " + std::to_string(ranks) + " " + argv[0];
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seed") == 0 || std::strcmp(argv[i], "--seeds") == 0 ||
        std::strcmp(argv[i], "--minutes") == 0) {
      ++i;
      continue;
    }
    text += std::string(" ") + argv[i];
  }
  return text;
}

int run(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Shared sh;
  MPI_Comm_rank(MPI_COMM_WORLD, &sh.world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &sh.world_size);
  pg_test_watchdog("test_random");
  const bool root = sh.world_rank == 0;
  auto skip = [&](const std::string &why) {
    if (root) std::printf("test_random: skipped: %s\n", why.c_str());
    MPI_Finalize();
    return PG_TEST_SKIP;
  };
  std::string error;
  if (!parse(argc, argv, &sh.options, &error)) {
    if (root) std::fprintf(stderr, "test_random: %s\n%s", error.c_str(), kUsage);
    MPI_Finalize();
    return 2;
  }
  Options &o = sh.options;
  const std::uint16_t one = 1;
  if (*reinterpret_cast<const unsigned char *>(&one) != 1) return skip("the element writers assume a little-endian host");
  if ((o.threads > 1 || o.fault) && provided < MPI_THREAD_MULTIPLE)
    return skip("MPI gives no MPI_THREAD_MULTIPLE (two threads and the abort from a thread need it)");
  if (o.fault && sh.world_size < 2) return skip("--fault needs two ranks or more");
  sh.command = command_line(argc, argv, sh.world_size);

  // Fresh seeds for a soak without --seed: rank 0's clock, for everyone.
  if (!o.seed_given) {
    std::uint64_t s = o.minutes > 0 ? splitmix(static_cast<std::uint64_t>(now() * 1e6) ^ std::uint64_t(getpid())) : 1;
    MPI_Bcast(&s, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    o.seed = s;
  }

  const char *backend = o.backend.c_str();
  if (o.backend == "table") {
    PG_TEST_STATUS(random_table_register(), PG_OK);
    backend = RANDOM_TABLE_NAME;
  } else if (o.backend == "blocking") {
    PG_TEST_STATUS(random_blocking_register(), PG_OK);
    backend = RANDOM_BLOCKING_NAME;
  } else if (o.backend == "plain") {
    PG_TEST_STATUS(pg_test_register_plain(), PG_OK);
  }
  pg_strategy *world = nullptr;
  pg_status st = pg_strategy_create("cpu", backend, &world);
  if ((st == PG_ERR_UNKNOWN_BACKEND || st == PG_ERR_PLUGIN) && o.backend == "gloo")
    return skip(std::string("the gloo plugin is not available: ") + pg_last_error());
  if (st != PG_OK) {
    std::fprintf(stderr, "[rank %d] pg_strategy_create(cpu, %s): %s: %s\n", sh.world_rank, backend, pg_status_name(st),
                 pg_last_error());
    MPI_Finalize();
    return 1;
  }
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  pg_strategy *duplicate = nullptr, *split = nullptr;
  PG_TEST_STATUS(pg_strategy_create_comm("cpu", backend, dup, &duplicate), PG_OK);
  // Two groups (even and odd ranks), each in reverse order of rank.
  const int color = sh.world_rank % 2;
  PG_TEST_STATUS(pg_strategy_split(world, color, sh.world_size - sh.world_rank, &split), PG_OK);
  if (!duplicate || !split) {
    MPI_Finalize();
    return 1;
  }
  for (auto [index, s] : {std::pair<int, pg_strategy *>{kWorld, world}, {kDuplicate, duplicate}, {kSplit, split}}) {
    const Group g{s, pg_strategy_size(s), pg_strategy_rank(s)};
    sh.groups[static_cast<std::size_t>(index)] = g;
    // Every rank's place in it: each rank draws every rank's placement.
    const int mine[2] = {index == kSplit ? color : 0, g.rank};
    std::vector<int> every(2 * static_cast<std::size_t>(sh.world_size));
    MPI_Allgather(mine, 2, MPI_INT, every.data(), 2, MPI_INT, MPI_COMM_WORLD);
    sh.layout.group.emplace_back();
    sh.layout.rank.emplace_back();
    for (std::size_t q = 0; q < every.size(); q += 2) {
      sh.layout.group.back().push_back(every[q]);
      sh.layout.rank.back().push_back(every[q + 1]);
    }
  }
  // --mem-alloc: each strategy's pool, 16 blocks that hold any buffer of the
  // program up to 1 MiB (a larger one is the call's own).
  std::vector<std::unique_ptr<Pool>> pools;
  if (o.mem_alloc)
    for (Group &g : sh.groups) {
      const std::size_t block = std::min<std::size_t>(static_cast<std::size_t>(g.size) * o.max_bytes, 1 << 20) + 128;
      pools.emplace_back();
      PG_TEST_STATUS(Pool::create(g.s, block, 16, &pools.back()), PG_OK);
      g.pool = pools.back().get();
    }
  sh.reordering.on = o.reorder;
  // mpi receives from any source, and so do the backends whose point-to-point it serves (pg_strategy.h).
  sh.reordering.any_source = o.backend == "mpi" || o.backend == "fairring" || o.backend == "gloo" || o.backend == "plain";

  Sizes sizes = Sizes::from_environment(o.max_bytes, sh.world_size);
  sizes.large_percent = o.large_percent;
  sh.mpi_chunk = sizes.mpi_chunk;
  if (root) {
    char text[2048] = "";
    pg_strategy_describe(world, text, sizeof text);
    std::printf("test_random: backend %s, %d ranks, %zu ops per program, %d thread(s), first seed %" PRIu64
                ", reordering %s%s%s\n  %s\n  %s\n",
                o.backend.c_str(), sh.world_size, o.ops, o.threads, o.seed, o.reorder ? "on" : "off",
                o.mem_alloc ? ", buffers from pg_mem_alloc" : "",
                o.fault_destroy ? ", destroy racing abort" : o.fault ? ", fault mode" : "", sizes.describe().c_str(), text);
    std::fflush(stdout);
  }

  std::size_t programs = 0;
  const double started = now();
  {
    Monitor monitor(sh);
    for (std::uint64_t seed = o.seed;; ++seed) {
      // Each thread its own sub-program on its own strategy: the world on the
      // first, the duplicate on the second.
      std::vector<std::thread> threads;
      auto program = [&](int slot) {
        Limits limits;
        limits.ops = o.ops;
        limits.max_in_flight = o.in_flight;
        limits.point_to_point = o.point_to_point;
        limits.ranks = sh.world_size;
        limits.kinds = o.kinds;
        limits.shared_tags = o.reorder;
        if (o.threads == 1)
          limits.strategies = o.strategies.empty() ? std::vector<int>{kWorld, kDuplicate, kSplit} : o.strategies;
        else
          limits.strategies = {slot == 0 ? kWorld : kDuplicate};
        const std::uint64_t thread_seed = slot == 0 ? seed : hash(seed, 0x7ead, std::uint64_t(slot), 0);
        Rng draw(thread_seed ^ 0xfa17);
        draw.next();  // the aborting rank's draw (Runner::fault)
        limits.fault_any = o.fault_late || o.fault_destroy;
        if (o.fault) limits.fault_index = static_cast<long>(o.ops / 4 + draw.below(o.ops - o.ops / 4));
        // The operation above 2 GiB and the stalled one run on the world: the
        // first thread's.
        if (o.big && slot == 0) limits.big_index = static_cast<long>(draw.below(o.ops));
        if (o.stall_at >= 0 && slot == 0) limits.forced_index = o.stall_at;
        const std::vector<Op> ops = draw_program(thread_seed, sizes, limits);
        std::vector<std::vector<Step>> steps = schedule(ops, limits, sh.layout, thread_seed, sh.reordering);
        if (o.list) {
          if (root) list_program(thread_seed, slot, ops, steps, sh.layout, o.reorder);
          return;
        }
        Runner runner(sh, monitor, slot, thread_seed, limits, std::move(steps[static_cast<std::size_t>(sh.world_rank)]));
        runner.run();
      };
      for (int t = 1; t < o.threads; ++t) threads.emplace_back(program, t);
      program(0);
      for (auto &t : threads) t.join();
      ++programs;
      // Every rank agrees whether to go on: no failure anywhere, and time or
      // seeds left (rank 0's clock decides).
      long failed = sh.failures.load(), any = 0;
      MPI_Allreduce(&failed, &any, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
      int more = !o.fault && any == 0 &&
                 (o.minutes > 0 ? now() - started < o.minutes * 60 : programs < o.seeds);
      MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (root && (o.minutes > 0 || o.seeds > 1)) {
        std::printf("seed %" PRIu64 ": %s; %zu programs, %" PRIu64 " operations on rank 0 so far, %.0f s\n", seed,
                    any ? "FAILED" : "passed", programs, sh.ops_run.load(), now() - started);
        std::fflush(stdout);
      }
      if (!more) break;
    }
  }
  if (!o.fault) {
    pools.clear();  // pg_mem_free on each strategy, in one order on every rank
    for (Group &g : sh.groups) {
      PG_TEST_STATUS(pg_strategy_destroy(g.s), PG_OK);
      g.s = nullptr;
    }
  }
  if (root)
    std::printf("test_random: %zu program(s), seeds %" PRIu64 " to %" PRIu64 ", %" PRIu64 " operations on rank 0, %.1f s\n",
                programs, o.seed, o.seed + programs - 1, sh.ops_run.load(), now() - started);
  const int verdict = pg_test_verdict(MPI_COMM_WORLD, "test_random");
  MPI_Comm_free(&dup);
  if (o.end_exit) {
    // After an abort MPI may still hold requests of the aborted strategies:
    // a barrier on the world (which the library never used), then out
    // without MPI_Finalize.
    MPI_Barrier(MPI_COMM_WORLD);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(verdict);
  }
  MPI_Finalize();
  return verdict;
}

}  // namespace
}  // namespace pgr

int main(int argc, char **argv) { return pgr::run(argc, argv); }
