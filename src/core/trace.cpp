#include "core/trace.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <thread>

#include "core/strategy.h"
#include "core/watchdog.h"
#include "util/dtype.h"
#include "util/log.h"
#include "util/status.h"

namespace pg::trace {
namespace {

// Recorders of destroyed strategies kept for the dumps that follow (a job that
// makes and drops sub-groups in a loop would otherwise grow without bound).
constexpr std::size_t kRetired = 16;
constexpr int kClockRounds = 5, kClockRoundsMax = 100;
constexpr std::int64_t kClockGoodNs = 20000, kClockBudgetNs = 100000000;
constexpr int kClockTag = 3;  // s->comm's point-to-point tags: 1 is the PGS_DEBUG check

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<Recorder>> live;
  std::deque<std::shared_ptr<Recorder>> retired;
  std::map<std::string, int> created;  // strategies made on each group of world ranks
  std::string job;
  int world_rank = 0, world_size = 1;
  int wake_fd = -1;  // SIGUSR1 writes here; the writer thread reads
};

Registry &registry() {
  static Registry *r = new Registry;  // never destroyed: dumps may come at exit
  return *r;
}

thread_local Recorder *t_recorder = nullptr;
thread_local std::uint64_t t_seq = 0;

std::string quote(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (u < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", u);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

const char *what_name(std::uint8_t what) {
  static const char *const events[] = {"create", "split", "destroy", "mem_alloc", "mem_free"};
  if (what < kCollCount) return coll_name(static_cast<Coll>(what));
  const unsigned e = what - kCollCount;
  return e < sizeof events / sizeof *events ? events[e] : "unknown";
}

std::string entry_json(const Entry &e, std::int64_t offset) {
  const bool op = e.what < kCollCount;
  std::string j = "{\"seq\":" + std::to_string(e.seq) + ",\"op\":" + quote(what_name(e.what));
  if (e.coll_seq) j += ",\"coll_seq\":" + std::to_string(e.coll_seq);
  if (op && e.what != static_cast<std::uint8_t>(Coll::barrier)) {
    j += ",\"dtype\":" + quote(dtype_name(static_cast<pg_dtype>(e.dtype)));
    if (is_reduction(static_cast<Coll>(e.what))) j += ",\"redop\":" + quote(op_name(static_cast<pg_op>(e.op)));
  }
  // The uneven collectives' counts differ by rank: "elements" (this rank's
  // share) rather than the "count" every rank must agree on.
  const bool uneven = op && is_uneven(static_cast<Coll>(e.what));
  if (e.what != static_cast<std::uint8_t>(Coll::barrier) && e.what != static_cast<std::uint8_t>(Event::create) &&
      e.what != static_cast<std::uint8_t>(Event::destroy))
    j += std::string(uneven ? ",\"elements\":" : ",\"count\":") + std::to_string(e.count) +
         ",\"bytes\":" + std::to_string(e.bytes);
  if (e.root >= 0) j += ",\"root\":" + std::to_string(e.root);
  j += ",\"start_ns\":" + std::to_string(e.start_ns + offset);
  if (e.end_ns) j += ",\"end_ns\":" + std::to_string(e.end_ns + offset);
  j += ",\"status\":" + (e.status < 0 ? std::string("null") : quote(status_name(static_cast<pg_status>(e.status))));
  if (e.flags & kNonblocking) j += ",\"nonblocking\":true";
  if (e.flags & kInPlace) j += ",\"in_place\":true";
  if (e.flags & kFallback) j += ",\"fallback\":true";
  if (e.algorithm) j += ",\"algorithm\":" + quote(e.algorithm);
  if (e.slices) j += ",\"slices\":" + std::to_string(e.slices);
  return j + "}";
}

// The bytes an operation moves from this rank's buffers (nccl-tests' sizes).
std::uint64_t bytes_of(const CollArgs &a, int size) {
  const std::uint64_t one = a.count * dtype_size(a.dtype);
  switch (a.coll) {
    case Coll::allgather:
    case Coll::reduce_scatter:
    case Coll::alltoall:
    case Coll::gather:
    case Coll::scatter: return one * static_cast<std::uint64_t>(size);
    case Coll::barrier: return 0;
    // The uneven collectives: what this rank's buffers hold (the whole
    // receive buffer of allgatherv, the root's of gatherv and scatterv,
    // reduce_scatterv's send buffer, alltoallv's send blocks).
    case Coll::allgatherv:
    case Coll::reduce_scatterv: return a.v ? a.v->recv_total * dtype_size(a.dtype) : 0;
    case Coll::alltoallv: return a.v ? a.v->send_total * dtype_size(a.dtype) : 0;
    case Coll::gatherv: return a.v && !a.v->recv_counts.empty() ? a.v->recv_total * dtype_size(a.dtype) : one;
    case Coll::scatterv: return a.v && !a.v->send_counts.empty() ? a.v->send_total * dtype_size(a.dtype) : one;
    default: return one;
  }
}

// The job's name in the dump's file name: the launcher's job id where there
// is one, else a value rank 0 of the first traced strategy gives everyone.
pg_status agree_job(MPI_Comm comm, std::string *job) {
  for (const char *var : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"})
    if (const char *v = params::env(var)) {
      *job = v;
      for (char &c : *job)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
      return PG_OK;
    }
  char mine[32] = "";
  std::snprintf(mine, sizeof mine, "%lld-%ld", static_cast<long long>(time(nullptr)), static_cast<long>(getpid()));
  PG_MPI_CHECK(MPI_Bcast(mine, sizeof mine, MPI_CHAR, 0, comm));
  *job = mine;
  return PG_OK;
}

// This rank's clock against rank 0's: round trips to rank 0, keeping the
// offset of the shortest (Cristian's method), whose half round trip bounds the
// error. At least kClockRounds; more while the best is above kClockGoodNs, up
// to kClockRoundsMax or kClockBudgetNs (ranks sharing cores wait for one:
// round trips of milliseconds). Each peer tells rank 0 when it is done.
pg_status measure_clock(MPI_Comm comm, int rank, int size, std::int64_t *offset, std::int64_t *uncertainty) {
  constexpr std::int64_t kDone = INT64_MIN;
  *offset = 0;
  *uncertainty = 0;
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      while (true) {
        std::int64_t asked = 0;
        PG_MPI_CHECK(MPI_Recv(&asked, 1, MPI_INT64_T, r, kClockTag, comm, MPI_STATUS_IGNORE));
        if (asked == kDone) break;
        const std::int64_t now = watchdog::now_ns();
        PG_MPI_CHECK(MPI_Send(&now, 1, MPI_INT64_T, r, kClockTag, comm));
      }
    return PG_OK;
  }
  std::int64_t best = INT64_MAX;
  const std::int64_t until = watchdog::now_ns() + kClockBudgetNs;
  for (int i = 0; i < kClockRounds || (best > kClockGoodNs && i < kClockRoundsMax && watchdog::now_ns() < until);
       ++i) {
    const std::int64_t sent = watchdog::now_ns();
    std::int64_t theirs = 0;
    PG_MPI_CHECK(MPI_Send(&sent, 1, MPI_INT64_T, 0, kClockTag, comm));
    PG_MPI_CHECK(MPI_Recv(&theirs, 1, MPI_INT64_T, 0, kClockTag, comm, MPI_STATUS_IGNORE));
    const std::int64_t back = watchdog::now_ns(), round = back - sent;
    if (round < best) {
      best = round;
      *offset = theirs - (sent + back) / 2;
      *uncertainty = round / 2;
    }
  }
  PG_MPI_CHECK(MPI_Send(&kDone, 1, MPI_INT64_T, 0, kClockTag, comm));
  return PG_OK;
}

// SIGUSR1: the handler only writes a byte and passes the signal on to the
// handler that was there before (MPICH installs one at MPI_Init); a thread of
// the library's writes the dumps.
struct sigaction g_previous {};

void on_signal(int sig, siginfo_t *info, void *context) {
  const int fd = registry().wake_fd;
  if (fd >= 0) {
    const char one = 1;
    ssize_t ignored = write(fd, &one, 1);
    static_cast<void>(ignored);
  }
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  }
}

void writer(int fd) {
  char byte;
  while (true) {
    const ssize_t n = read(fd, &byte, 1);
    if (n == 1) dump("signal");
    else if (n < 0 && errno == EINTR) continue;
    else return;
  }
}

// Once per process: the SIGUSR1 handler and its writer thread, and a dump at
// exit. A process that ignores SIGUSR1 keeps ignoring it.
void install_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    int fds[2];
    if (sigaction(SIGUSR1, nullptr, &g_previous) == 0 && !(g_previous.sa_flags & SA_SIGINFO) &&
        g_previous.sa_handler == SIG_IGN) {
      PG_LOG(warn, "PGS_TRACE: this process ignores SIGUSR1; dumps come at the watchdog, a poisoned "
                   "strategy, destroy, exit and pg_trace_dump");
    } else if (pipe2(fds, O_CLOEXEC) == 0) {
      registry().wake_fd = fds[1];
      std::thread(writer, fds[0]).detach();
      struct sigaction act {};
      act.sa_sigaction = on_signal;
      sigemptyset(&act.sa_mask);
      act.sa_flags = SA_RESTART | SA_SIGINFO;
      sigaction(SIGUSR1, &act, nullptr);
    }
    std::atexit([] { dump("exit"); });
  });
}

bool write_file(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return false;
  return std::rename(tmp.c_str(), path.c_str()) == 0;  // readers never see half a file
}

}  // namespace

Recorder::Recorder(std::string folder, std::size_t entries) : dir(std::move(folder)), ring_(entries) {}

std::uint64_t Recorder::begin(std::uint8_t what, const CollArgs *a, std::uint64_t coll_seq, std::uint8_t flags) {
  const std::int64_t now = watchdog::now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t seq = next_++;
  Entry &e = ring_[(seq - 1) % ring_.size()];
  e = Entry{};
  e.seq = seq;
  e.coll_seq = coll_seq;
  e.start_ns = now;
  e.what = what;
  e.flags = flags;
  if (a) {
    e.count = a->count;
    e.bytes = what < kCollCount ? bytes_of(*a, size) : a->count;
    e.dtype = static_cast<std::uint8_t>(a->dtype);
    e.op = static_cast<std::uint8_t>(a->op);
    if (is_rooted(a->coll)) e.root = a->root;
    else if (is_point_to_point(a->coll)) e.root = a->peer;
    if (a->in_place) e.flags |= kInPlace;
  }
  return seq;
}

void Recorder::end(std::uint64_t seq, pg_status status) {
  const std::int64_t now = watchdog::now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  Entry &e = ring_[(seq - 1) % ring_.size()];
  if (e.seq != seq) return;
  e.end_ns = now;
  e.status = static_cast<std::int16_t>(status);
}

void Recorder::annotate(std::uint64_t seq, const char *algorithm, std::uint32_t slices, bool fallback) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry &e = ring_[(seq - 1) % ring_.size()];
  if (e.seq != seq) return;
  if (algorithm) e.algorithm = algorithm;
  if (slices) e.slices = slices;
  if (fallback) e.flags |= kFallback;
}

std::string Recorder::json() const {
  std::string j = "{\"id\":" + quote(identity) + ",\"rank\":" + std::to_string(rank) +
                  ",\"size\":" + std::to_string(size) + ",\"world_ranks\":[";
  for (std::size_t i = 0; i < world_ranks.size(); ++i) j += (i ? "," : "") + std::to_string(world_ranks[i]);
  j += "],\"backend\":" + quote(backend) + ",\"fallback_backend\":" + quote(fallback) + ",\"device\":" +
       quote(device) + ",\"clock_offset_ns\":" + std::to_string(clock_offset_ns) +
       ",\"clock_uncertainty_ns\":" + std::to_string(clock_uncertainty_ns) +
       ",\"entries_max\":" + std::to_string(ring_.size()) + ",\"entries\":[";
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t first = next_ > ring_.size() ? next_ - ring_.size() : 1;
  for (std::uint64_t seq = first; seq < next_; ++seq)
    j += (seq == first ? "\n" : ",\n") + entry_json(ring_[(seq - 1) % ring_.size()], clock_offset_ns);
  return j + "]}";
}

pg_status start(pg_strategy *s) {
  auto rec = std::make_shared<Recorder>(s->settings.trace_dir, s->settings.trace_entries);
  rec->rank = s->rank;
  rec->size = s->size;
  rec->backend = s->selection.backend;
  rec->fallback = default_backend(s->device);
  rec->device = s->device_name;
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  PG_MPI_CHECK(MPI_Comm_group(s->comm, &group));
  PG_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  std::vector<int> mine(static_cast<std::size_t>(s->size));
  for (int r = 0; r < s->size; ++r) mine[static_cast<std::size_t>(r)] = r;
  rec->world_ranks.resize(mine.size());
  const int translated = MPI_Group_translate_ranks(group, s->size, mine.data(), world, rec->world_ranks.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  if (translated != MPI_SUCCESS) return mpi_failure(translated, "MPI_Group_translate_ranks", __FILE__, __LINE__);
  PG_CHECK(measure_clock(s->comm, s->rank, s->size, &rec->clock_offset_ns, &rec->clock_uncertainty_ns));

  Registry &r = registry();
  std::string job;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    job = r.job;
  }
  if (job.empty()) {
    PG_CHECK(agree_job(s->comm, &job));
    MPI_Comm_rank(MPI_COMM_WORLD, &r.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.world_size);
  }
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.job.empty()) r.job = job;
    // Strategies over the same ranks are told apart by the order every rank made them in.
    std::string group_key;
    for (int w : rec->world_ranks) group_key += std::to_string(w) + ",";
    const int n = r.created[group_key]++;
    std::uint64_t hash = 1469598103934665603ull;  // FNV-1a of the ranks
    for (char c : group_key) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char id[64];
    std::snprintf(id, sizeof id, "%d-of-%d-%016llx", n, s->size, static_cast<unsigned long long>(hash));
    rec->identity = id;
    r.live.push_back(rec);
  }
  s->trace = rec;
  install_once();
  return PG_OK;
}

void retire(const std::shared_ptr<Recorder> &recorder) {
  Registry &r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.live.erase(std::remove(r.live.begin(), r.live.end(), recorder), r.live.end());
    r.retired.push_back(recorder);
    if (r.retired.size() > kRetired) r.retired.pop_front();
  }
  dump("destroy");
}

bool dump(const char *reason) {
  Registry &r = registry();
  std::map<std::string, std::vector<std::shared_ptr<Recorder>>> by_dir;
  std::string job;
  int world_rank = 0, world_size = 1;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto &rec : r.retired) by_dir[rec->dir].push_back(rec);
    for (const auto &rec : r.live) by_dir[rec->dir].push_back(rec);
    job = r.job;
    world_rank = r.world_rank;
    world_size = r.world_size;
  }
  if (by_dir.empty()) return false;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  bool all = true;
  for (const auto &[dir, recorders] : by_dir) {
    std::string text = "{\"format\":\"pgstrategy-trace\",\"version\":1,\"job\":" + quote(job) +
                       ",\"rank\":" + std::to_string(world_rank) + ",\"world_size\":" + std::to_string(world_size) +
                       ",\"host\":" + quote(host) + ",\"pid\":" + std::to_string(getpid()) +
                       ",\"reason\":" + quote(reason) + ",\"written_ns\":" + std::to_string(watchdog::now_ns()) +
                       ",\"strategies\":[";
    for (std::size_t i = 0; i < recorders.size(); ++i) text += (i ? ",\n" : "\n") + recorders[i]->json();
    text += "]}\n";
    const std::string path = dir + "/pgstrategy-" + job + "-rank" + std::to_string(world_rank) + ".json";
    if (!write_file(path, text)) {
      all = false;
      PG_LOG(error, "PGS_TRACE: cannot write %s: %s", path.c_str(), std::strerror(errno));
    }
  }
  return all;
}

Op::Op(pg_strategy *s, std::uint8_t what, const CollArgs *args, std::uint64_t coll_seq, std::uint8_t flags) {
  if (!s || !s->trace) return;
  recorder_ = s->trace.get();
  seq_ = recorder_->begin(what, args, coll_seq, flags);
}

Op::~Op() {
  if (recorder_) recorder_->end(seq_, PG_ERR_INTERNAL);  // left by an exception
}

void Op::keep() { recorder_ = nullptr; }

pg_status Op::end(pg_status status) {
  if (recorder_) recorder_->end(seq_, status);
  recorder_ = nullptr;
  return status;
}

Current::Current(Recorder *recorder, std::uint64_t seq) : previous_(t_recorder), previous_seq_(t_seq) {
  t_recorder = recorder;
  t_seq = seq;
}

Current::~Current() {
  t_recorder = previous_;
  t_seq = previous_seq_;
}

void annotate(const char *algorithm, std::uint32_t slices) {
  if (t_recorder) t_recorder->annotate(t_seq, algorithm, slices, false);
}

void annotate_fallback() {
  if (t_recorder) t_recorder->annotate(t_seq, nullptr, 0, true);
}

}  // namespace pg::trace
