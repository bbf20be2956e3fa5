#include "launch/settings.h"

#include <cmath>

#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

const params::Param<Settings> kRows[] = {
    {"PGS_BOOTSTRAP_TIMEOUT", "300",
     "bootstrap: seconds for every process of the job to reach the rendezvous",
     [](const char *n, const char *v, Settings *s) { return parse_timeout(n, v, &s->timeout_s); }, nullptr},
    {"PGS_BOOTSTRAP_EXIT_TIMEOUT", "300",
     "bootstrap: seconds rank 0's process waits at its exit for the others to finalize MPI",
     [](const char *n, const char *v, Settings *s) { return parse_timeout(n, v, &s->exit_timeout_s); }, nullptr},
    {"PGS_BOOTSTRAP_SECRET", "unset",
     "bootstrap: the job's shared secret (plain copies; the torch backend makes one)",
     [](const char *n, const char *v, Settings *s) { return parse_secret(n, v, &s->secret); }, nullptr},
    {"PGS_BOOTSTRAP_ADDR", "unset",
     "bootstrap: host:port of the rendezvous rank 0 serves, instead of MASTER_ADDR:MASTER_PORT",
     [](const char *n, const char *v, Settings *s) {
       s->has_addr = true;
       return parse_addr(n, v, &s->addr);
     },
     nullptr},
};

pg_status bad(const char *var, const char *value, const std::string &expected) {
  return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: expected %s", var, text::printable(value).c_str(),
              expected.c_str());
}

}  // namespace

params::Listings Settings::list() const {
  params::Listings out = params::list_rows(kRows, *this);
  for (params::Listing &l : out)
    if (l.name == "PGS_BOOTSTRAP_SECRET" && !l.given.empty()) l.given = "(set, not shown)";
  return out;
}

pg_status read_settings(Settings *out) { return params::read_rows(kRows, out); }

pg_status parse_timeout(const char *var, const char *value, double *out) {
  double v = 0;
  if (params::parse_seconds(var, value, &v) != PG_OK || v <= 0 || v > 1e6)
    return bad(var, value, "a positive number of seconds up to 1e6, e.g. 300 or 2.5");
  *out = v;
  return PG_OK;
}

pg_status parse_secret(const char *var, const char *value, std::string *out) {
  const std::string v(value);
  bool printable = true;
  for (char c : v) printable = printable && static_cast<unsigned char>(c) > ' ' && static_cast<unsigned char>(c) < 0x7f;
  if (!printable || v.size() < kSecretMin || v.size() > kSecretMax)
    // The value itself is never repeated: it may be a real secret with a typo.
    return fail(PG_ERR_INVALID_ARGUMENT,
                "%s is not valid (%zu characters): expected %zu to %zu printable ASCII characters without "
                "spaces, the same on every process of the job, e.g. from 'openssl rand -hex 32'",
                var, v.size(), kSecretMin, kSecretMax);
  *out = v;
  return PG_OK;
}

pg_status parse_addr(const char *var, const char *value, Address *out) {
  std::string why;
  if (!parse_address(value, out, &why)) return bad(var, value, "host:port (" + why + ")");
  return PG_OK;
}

}  // namespace pg::launch
