#include "backends/fairring/settings.h"

#include <cstdint>

#include "util/status.h"
#include "util/text.h"

namespace pg::fairring {
namespace {

std::string size_or_default(const std::optional<std::size_t> &bytes) {
  return bytes ? std::to_string(*bytes) : std::string("default");
}

// A size whose default depends on the device or the node (for_device, or
// timed when the strategy is made), set: at most `max`.
pg_status parse_given_size(const char *name, const char *value, std::optional<std::size_t> *out,
                           std::size_t max = SIZE_MAX) {
  std::size_t bytes = 0;
  PG_CHECK(params::parse_size(name, value, 0, max, &bytes));
  *out = bytes;
  return PG_OK;
}

pg_status parse_fault(const char *name, const char *value, std::vector<int> *ranks) {
  const std::string_view text(value), prefix = "across:";
  bool ok = text.substr(0, prefix.size()) == prefix;
  ranks->clear();
  if (ok)
    for (const std::string &item : text::split(text.substr(prefix.size()), ',')) {
      int rank = -1;
      ok = ok && text::parse_number(item, &rank) && rank >= 0;
      ranks->push_back(rank);
    }
  return ok ? PG_OK
            : fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: expected across:<rank>[,<rank>...]", name,
                   text::printable(value).c_str());
}

const params::Param<Settings> kRows[] = {
    // Bounded so that the shared slots (2 x inflight x slice per rank) stay sane.
    {"PGS_FAIRRING_SLICE_BYTES", "on CPU by the L2 cache (256K where unknown), 4M on CUDA",
     "bytes per slice of the pipeline (one shared-memory slot on CPU)",
     [](const char *n, const char *v, Settings *s) {
       std::size_t bytes = 0;
       PG_CHECK(params::parse_size(n, v, 1, Settings::kMaxSliceBytes, &bytes));
       s->slice_bytes = bytes;
       return PG_OK;
     },
     [](const Settings &s) { return size_or_default(s.slice_bytes); }},
    {"PGS_FAIRRING_INFLIGHT", "4", "slices on the rails at once, and slots per rank",
     [](const char *n, const char *v, Settings *s) { return params::parse_int(n, v, 1, Settings::kMaxInflight, &s->inflight); },
     [](const Settings &s) { return std::to_string(s.inflight); }},
    {"PGS_FAIRRING_MIN_BYTES", "32K on CPU, 8M on CUDA", "messages below this take the flat path",
     [](const char *n, const char *v, Settings *s) { return parse_given_size(n, v, &s->min_bytes); },
     [](const Settings &s) { return size_or_default(s.min_bytes); }},
    {"PGS_FAIRRING_ALGO", "auto", "auto, or one algorithm at every size (fast, flat, hierarchical, leaders)",
     [](const char *n, const char *v, Settings *s) {
       int index = 0;
       PG_CHECK(params::parse_choice(n, v, algorithm_choices(), &index));
       s->algorithm = index == 0 ? std::nullopt : algorithm_named(v);
       return PG_OK;
     },
     [](const Settings &s) { return std::string(s.algorithm ? info(*s.algorithm).name : "auto"); }},
    // Two slots of this size per rank (the fast path's shared memory).
    {"PGS_FAIRRING_FAST_BYTES", "1M or 256K, as timed when the strategy is made (256K where nothing is timed)",
     "calls whose input and output are each up to this take the fast path on CPU nodes of several ranks; 0 turns "
     "it off",
     [](const char *n, const char *v, Settings *s) {
       return parse_given_size(n, v, &s->fast_bytes, Settings::kMaxFastBytes);
     },
     [](const Settings &s) { return size_or_default(s.fast_bytes); }},
    {"PGS_FAIRRING_SPLIT_BYTES", "4K; on one node of two ranks 4K or 8K, as timed when the strategy is made (8K where nothing is timed)",
     "fast-path allreduces from this size up: each rank reduces one block (across nodes: over its rail), then all "
     "copy the blocks",
     [](const char *n, const char *v, Settings *s) { return parse_given_size(n, v, &s->split_bytes); },
     [](const Settings &s) { return size_or_default(s.split_bytes); }},
    {"PGS_FAIRRING_TREE_RANKS", "32",
     "nodes of at least this many ranks reduce small allreduces and barriers up a 4-ary tree; 0: never",
     [](const char *n, const char *v, Settings *s) { return params::parse_int(n, v, 0, 1 << 20, &s->tree_ranks); },
     [](const Settings &s) { return std::to_string(s.tree_ranks); }},
    // How, not what: the same bytes either way (handoff.h).
    {"PGS_FAIRRING_REDUCE", "auto",
     "where a rank reduces its block of a split allreduce or its shard on CPU: auto (timed when the strategy is "
     "made), buffer (the user's, then copied to its shared slot) or slot",
     [](const char *n, const char *v, Settings *s) {
       return params::parse_choice(n, v, {"auto", "buffer", "slot"}, &s->reduce);
     },
     nullptr},
    {"PGS_FAIRRING_PULL", "auto",
     "how a rank copies its peers' blocks on CPU: auto (timed when the strategy is made), pages (four pages at a "
     "time, with AVX2, up to half a core's L2 cache) or memcpy",
     [](const char *n, const char *v, Settings *s) {
       return params::parse_choice(n, v, {"auto", "pages", "memcpy"}, &s->pull);
     },
     nullptr},
    // Fault injection for the tests: a failure the way an MPI error would
    // come, after the rank's part of the step (so no other node waits for it).
    {"PGS_FAIRRING_FAULT", "unset",
     "testing: across:<rank>[,<rank>...] makes the step across nodes (the fast path's, the leaders') fail on "
     "these ranks",
     [](const char *n, const char *v, Settings *s) { return parse_fault(n, v, &s->fail_across); }, nullptr},
};

}  // namespace

std::size_t Settings::cpu_slice_bytes(std::size_t l2_per_core, int inflight) {
  constexpr std::size_t kLeast = std::size_t(64) << 10, kMost = std::size_t(1) << 20;
  if (l2_per_core == 0) return kCpuSliceBytes;
  const std::size_t fits = l2_per_core / (2 * static_cast<std::size_t>(inflight));
  std::size_t slice = kLeast;
  while (slice * 2 <= fits && slice * 2 <= kMost) slice *= 2;
  return slice;
}

std::size_t Settings::split_bytes_for(int local_size, int nodes) {
  return local_size == 2 && nodes == 1 ? kPairSplitBytes : kSplitBytes;
}

const char *Settings::split_reason(int local_size, int nodes) {
  if (nodes > 1) return "across nodes a split sends every rank's block over its own rail";
  if (local_size == 2) return "one node of two ranks: a split reads as much from the peer as the whole";
  return "a split reads less from the peers than the whole";
}

Settings Settings::for_device(bool cuda, std::size_t l2_per_core, int local_size, int nodes) const {
  Settings s = *this;
  if (!s.split_bytes) s.split_bytes = split_bytes_for(local_size, nodes);
  if (!s.slice_bytes) s.slice_bytes = cuda ? kCudaSliceBytes : cpu_slice_bytes(l2_per_core, s.inflight);
  if (!s.min_bytes) s.min_bytes = cuda ? kCudaMinBytes : kCpuMinBytes;
  return s;
}

params::Listings Settings::list() const { return params::list_rows(kRows, *this); }

pg_status Settings::read(std::shared_ptr<const BackendSettings> *out) {
  auto s = std::make_shared<Settings>();
  PG_CHECK(params::read_rows(kRows, s.get()));
  *out = std::move(s);
  return PG_OK;
}

}  // namespace pg::fairring
