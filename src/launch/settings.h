// The bootstrap's PGS_* variables (docs/env.md; what they do: docs/launch.md),
// rows of their own table like every other component's (util/params.h).
#pragma once

#include <string>
#include <vector>

#include "launch/net.h"
#include "util/params.h"

namespace pg::launch {

struct Settings {
  double timeout_s = 300;       // PGS_BOOTSTRAP_TIMEOUT
  double exit_timeout_s = 300;  // PGS_BOOTSTRAP_EXIT_TIMEOUT
  std::string secret;      // PGS_BOOTSTRAP_SECRET; "" unset
  bool has_addr = false;   // PGS_BOOTSTRAP_ADDR set
  Address addr;
  std::vector<std::string> given;  // as set, by row

  // The rows with their values; the secret is listed as set, never shown.
  params::Listings list() const;
};

pg_status read_settings(Settings *out);

// The parsers of the rows (and the unit tests and the fuzz target): errors
// name `var` and the value.
pg_status parse_timeout(const char *var, const char *value, double *out);
pg_status parse_secret(const char *var, const char *value, std::string *out);
pg_status parse_addr(const char *var, const char *value, Address *out);

// Shortest secret accepted, and longest.
constexpr std::size_t kSecretMin = 16, kSecretMax = 1024;

}  // namespace pg::launch
