// Environment parameters (PGS_*), declared once (NCCL's NCCL_PARAM habit): each
// variable is one row of its component's table (the library's here, a built-in
// backend's in its own folder) with its name, parser and bounds, default,
// whether it changes the schedule and one doc line. Reading and validation, the
// schedule fingerprint every rank must agree on at creation, the listing of
// pg_strategy_info("settings") and the test that docs/env.md lists exactly
// these variables all come from the rows. The grammar is in docs/env.md. A bad
// value is an error that names the variable and the value; nothing is
// silently ignored.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pg::params {

// The value of a variable; NULL when it is unset or empty (empty means unset).
const char *env(const char *var);

// One PGS_* variable: a row of the table of the component that reads it into
// its `Values` (a struct with a `given` member, filled by read_rows).
template <typename Values>
struct Param {
  const char *name;
  const char *fallback;  // the default, in words
  const char *doc;       // what it does, one line
  // Parses and validates `value` (bounds included) into *out; errors name `name`.
  pg_status (*parse)(const char *name, const char *value, Values *out);
  // For variables that change the schedule: what every rank must agree on (the
  // value, or only what of it matters). nullptr: the variable is local.
  std::string (*agreed)(const Values &values);
};

// A variable as the tables describe it, with the value in effect.
struct Listing {
  std::string name;
  std::string given;  // the text it was set to; "" when unset
  std::string fallback, doc;
  bool schedule = false;  // changes the schedule
  std::string agreed;     // what every rank must agree on (schedule only)
};
using Listings = std::vector<Listing>;

// Reads every variable of `rows` from the environment into *out (defaults
// where unset, out->given[i] the text of row i). Fails on the first bad value.
template <typename Values, std::size_t N>
pg_status read_rows(const Param<Values> (&rows)[N], Values *out) {
  Values values;
  values.given.assign(N, std::string());
  for (std::size_t i = 0; i < N; ++i) {
    const char *value = env(rows[i].name);
    if (!value) continue;
    const pg_status st = rows[i].parse(rows[i].name, value, &values);
    if (st != PG_OK) return st;
    values.given[i] = value;
  }
  *out = std::move(values);
  return PG_OK;
}

template <typename Values, std::size_t N>
Listings list_rows(const Param<Values> (&rows)[N], const Values &values) {
  Listings out;
  for (std::size_t i = 0; i < N; ++i) {
    Listing l;
    l.name = rows[i].name;
    l.given = i < values.given.size() ? values.given[i] : std::string();
    l.fallback = rows[i].fallback;
    l.doc = rows[i].doc;
    l.schedule = rows[i].agreed != nullptr;
    if (l.schedule) l.agreed = rows[i].agreed(values);
    out.push_back(std::move(l));
  }
  return out;
}

// "NAME=agreed NAME=agreed ..." over the listings that change the schedule.
std::string schedule(const Listings &listings);
// One line per variable: "NAME=given" or "NAME unset (default: ...)".
std::string describe(const Listings &listings);

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

// PGS_BACKEND: one name for every device, or a per-device map.
struct BackendChoice {
  std::string cpu, cuda;  // empty: the device default
};

// Parsers, one per grammar, for the rows (and the unit tests). `var` names the
// variable in messages.
pg_status parse_backend(const char *var, const char *value, BackendChoice *out);
pg_status parse_plugin_path(const char *var, const char *value, std::vector<std::string> *out);
pg_status parse_path(const char *var, const char *value, std::string *out);
// An existing folder this process may write files in.
pg_status parse_writable_dir(const char *var, const char *value, std::string *out);
pg_status parse_positive_int(const char *var, const char *value, int *out);
// Positive integers separated by commas ("2", "1,2").
pg_status parse_positive_ints(const char *var, const char *value, std::vector<int> *out);
// An integer from `min` to `max`.
pg_status parse_int(const char *var, const char *value, int min, int max, int *out);
pg_status parse_size(const char *var, const char *value, std::size_t *out);
// A size from `min` to `max` bytes.
pg_status parse_size(const char *var, const char *value, std::size_t min, std::size_t max, std::size_t *out);
pg_status parse_seconds(const char *var, const char *value, double *out);
// One of `names`: *out is its index.
pg_status parse_choice(const char *var, const char *value, const std::vector<const char *> &names, int *out);
// The same into an enum whose values are the indices of `names`.
template <typename Enum>
pg_status parse_choice(const char *var, const char *value, const std::vector<const char *> &names, Enum *out) {
  int index = 0;
  const pg_status st = parse_choice(var, value, names, &index);
  if (st == PG_OK) *out = static_cast<Enum>(index);
  return st;
}
pg_status parse_log_level(const char *var, const char *value, LogLevel *out);

}  // namespace pg::params
