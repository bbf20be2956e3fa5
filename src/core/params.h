// Environment parameters (PGS_*): each read and validated in one place (NCCL's
// param.h habit); built-in backends read their own variables with these parsers. The grammar is in docs/env.md. A bad value is an error that
// names the variable and the value; nothing is silently ignored.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pg::params {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };
enum class Bind { none, numa };

// PGS_BACKEND: one name for every device, or a per-device map.
struct BackendChoice {
  std::string cpu, cuda;  // empty: the device default
};

struct Settings {
  BackendChoice backend;
  std::vector<std::string> plugin_path;  // PGS_PLUGIN_PATH
  int ranks_per_node = 0;                // PGS_RANKS_PER_NODE; 0 = unset
  std::string topology_xml;              // PGS_TOPOLOGY_XML
  LogLevel log = LogLevel::error;        // PGS_LOG
  bool debug_detail = false;             // PGS_DEBUG=detail
  double timeout_s = 0;                  // PGS_TIMEOUT; 0 = off
  Bind bind = Bind::none;                // PGS_BIND

  // The library's values that change the schedule, which every rank must agree
  // on (built-in backends declare their own: BackendSettings::schedule).
  std::string schedule_fingerprint() const;
};

// Reads the library's PGS_* variables (backends read their own). Fails on the
// first bad value.
pg_status read(Settings *out);

// The value of a variable; NULL when it is unset or empty (empty means unset).
const char *env(const char *var);

// Parsers, one per grammar (exposed for the unit tests). `var` names the
// variable in messages.
pg_status parse_backend(const char *var, const char *value, BackendChoice *out);
pg_status parse_plugin_path(const char *var, const char *value, std::vector<std::string> *out);
pg_status parse_positive_int(const char *var, const char *value, int *out);
pg_status parse_size(const char *var, const char *value, std::size_t *out);
pg_status parse_seconds(const char *var, const char *value, double *out);
pg_status parse_log_level(const char *var, const char *value, LogLevel *out);

}  // namespace pg::params
