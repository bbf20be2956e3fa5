#include "backends/fairring/settings.h"

#include "core/params.h"
#include "core/status.h"

namespace pg::fairring {

Settings Settings::for_device(bool cuda) const {
  Settings s = *this;
  if (s.slice_bytes == 0) s.slice_bytes = cuda ? std::size_t(4) << 20 : std::size_t(256) << 10;
  if (!s.min_bytes_set) s.min_bytes = cuda ? std::size_t(8) << 20 : std::size_t(32) << 10;
  return s;
}

std::string Settings::schedule() const {
  auto value = [](bool set, std::size_t v) { return set ? std::to_string(v) : std::string("default"); };
  return "PGS_FAIRRING_SLICE_BYTES=" + value(slice_bytes != 0, slice_bytes) +
         " PGS_FAIRRING_INFLIGHT=" + std::to_string(inflight) +
         " PGS_FAIRRING_MIN_BYTES=" + value(min_bytes_set, min_bytes);
}

pg_status Settings::read(std::shared_ptr<const BackendSettings> *out) {
  auto s = std::make_shared<Settings>();
  // Bounded so that the shared slots (2 x inflight x slice per rank) stay sane.
  if (const char *v = params::env("PGS_FAIRRING_SLICE_BYTES")) {
    PG_CHECK(params::parse_size("PGS_FAIRRING_SLICE_BYTES", v, &s->slice_bytes));
    if (s->slice_bytes == 0 || s->slice_bytes > kMaxSliceBytes)
      return fail(PG_ERR_INVALID_ARGUMENT, "PGS_FAIRRING_SLICE_BYTES='%s' is not valid: expected a size from 1 to 1G", v);
  }
  if (const char *v = params::env("PGS_FAIRRING_INFLIGHT")) {
    PG_CHECK(params::parse_positive_int("PGS_FAIRRING_INFLIGHT", v, &s->inflight));
    if (s->inflight > kMaxInflight)
      return fail(PG_ERR_INVALID_ARGUMENT, "PGS_FAIRRING_INFLIGHT='%s' is not valid: expected 1 to %d", v, kMaxInflight);
  }
  if (const char *v = params::env("PGS_FAIRRING_MIN_BYTES")) {
    PG_CHECK(params::parse_size("PGS_FAIRRING_MIN_BYTES", v, &s->min_bytes));
    s->min_bytes_set = true;
  }
  *out = std::move(s);
  return PG_OK;
}

}  // namespace pg::fairring
