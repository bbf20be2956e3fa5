#include "core/trace.h"

#include <cstdio>

#include "core/strategy.h"
#include "core/trace_parts.h"
#include "util/dtype.h"
#include "util/status.h"

namespace pg::trace {
namespace {

// The operation this thread runs (Current), one thread-local: in a shared
// library each is reached through a call.
struct Marked {
  Recorder *recorder = nullptr;
  std::uint64_t seq = 0;
};
thread_local Marked t_current;

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
  if (e.flags & kDeviceDefault) j += ",\"device_default\":true";
  if (e.flags & (kSharedSend | kSharedRecv))
    j += std::string(",\"shared\":") +
         ((e.flags & kSharedSend) && (e.flags & kSharedRecv) ? "\"send,recv\"" : (e.flags & kSharedSend) ? "\"send\"" : "\"recv\"");
  if (e.algorithm) j += ",\"algorithm\":" + quote(e.algorithm);
  if (e.slices) j += ",\"slices\":" + std::to_string(e.slices);
  return j + "}";
}

}  // namespace

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
    e.bytes = what < kCollCount ? buffer_bytes(*a, size) : a->count;
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

void Recorder::annotate(std::uint64_t seq, const char *algorithm, std::uint32_t slices, bool device_default) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry &e = ring_[(seq - 1) % ring_.size()];
  if (e.seq != seq) return;
  if (algorithm) e.algorithm = algorithm;
  if (slices) e.slices = slices;
  if (device_default) e.flags |= kDeviceDefault;
}

void Recorder::annotate_flags(std::uint64_t seq, std::uint8_t flags) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry &e = ring_[(seq - 1) % ring_.size()];
  if (e.seq == seq) e.flags |= flags;
}

std::string Recorder::json() const {
  std::string j = "{\"id\":" + quote(identity) + ",\"rank\":" + std::to_string(rank) +
                  ",\"size\":" + std::to_string(size) + ",\"world_ranks\":[";
  for (std::size_t i = 0; i < world_ranks.size(); ++i) j += (i ? "," : "") + std::to_string(world_ranks[i]);
  j += "],\"backend\":" + quote(backend) + ",\"device_default\":" + quote(device_default) + ",\"device\":" +
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
  rec->device_default = default_backend(s->device);
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

  PG_CHECK(enlist(s, rec));
  s->trace = rec;
  return PG_OK;
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

Current::Current(Recorder *recorder, std::uint64_t seq) {
  Marked &now = t_current;
  previous_ = now.recorder;
  previous_seq_ = now.seq;
  // Unrecorded inside unrecorded (the common case): nothing to mark or restore.
  marks_ = recorder || previous_;
  if (marks_) now = {recorder, seq};
}

Current::~Current() {
  if (marks_) t_current = {previous_, previous_seq_};
}

void annotate(const char *algorithm, std::uint32_t slices) {
  const Marked &now = t_current;
  if (now.recorder) now.recorder->annotate(now.seq, algorithm, slices, false);
}

void annotate_shared(bool send, bool recv) {
  const Marked &now = t_current;
  const std::uint8_t flags = (send ? kSharedSend : 0) | (recv ? kSharedRecv : 0);
  if (now.recorder && flags) now.recorder->annotate_flags(now.seq, flags);
}

void annotate_device_default() {
  const Marked &now = t_current;
  if (now.recorder) now.recorder->annotate(now.seq, nullptr, 0, true);
}

}  // namespace pg::trace
