#include "backends/fairring/settings.h"

#include "core/params.h"
#include "core/status.h"

namespace pg::fairring {

std::string Settings::schedule() const {
  return "PGS_FAIRRING_SLICE_BYTES=" + std::to_string(slice_bytes) +
         " PGS_FAIRRING_INFLIGHT=" + std::to_string(inflight) +
         " PGS_FAIRRING_MIN_BYTES=" + std::to_string(min_bytes);
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
  if (const char *v = params::env("PGS_FAIRRING_MIN_BYTES"))
    PG_CHECK(params::parse_size("PGS_FAIRRING_MIN_BYTES", v, &s->min_bytes));
  *out = std::move(s);
  return PG_OK;
}

}  // namespace pg::fairring
