#include "util/params.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "util/names.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::params {

const char *env(const char *var) {
  const char *value = std::getenv(var);
  return value && *value ? value : nullptr;
}

namespace {

pg_status bad(const char *var, const char *value, const char *expected) {
  return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: expected %s", var,
              text::printable(value).c_str(), expected);
}

bool has_space(const char *value) {
  for (const char *p = value; *p; ++p)
    if (std::isspace(static_cast<unsigned char>(*p))) return true;
  return false;
}

const std::vector<const char *> kLogLevels = {"error", "warn", "info", "debug"};
}  // namespace

std::string schedule(const Listings &listings) {
  std::string out;
  for (const Listing &l : listings)
    if (l.schedule) out += (out.empty() ? "" : " ") + l.name + "=" + l.agreed;
  return out;
}

std::string describe(const Listings &listings) {
  std::string out;
  for (const Listing &l : listings)
    out += l.name + (l.given.empty() ? " unset (default: " + l.fallback + ")" : "=" + l.given) + "\n";
  return out;
}

pg_status parse_backend(const char *var, const char *value, BackendChoice *out) {
  static const char *const expected =
      "a backend name ([a-z0-9_]{1,63}) or a map like cpu:mpi,cuda:nccl (keys cpu and cuda, no spaces)";
  *out = BackendChoice{};
  if (!value || !*value) return PG_OK;
  std::string text(value);
  if (text.find(':') == std::string::npos) {
    if (!valid_backend_name(text)) return bad(var, value, expected);
    out->cpu = out->cuda = text;
    return PG_OK;
  }
  for (const std::string &item : text::split(text, ',')) {
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos) return bad(var, value, expected);
    const std::string key = item.substr(0, colon), name = item.substr(colon + 1);
    std::string *slot = key == "cpu" ? &out->cpu : key == "cuda" ? &out->cuda : nullptr;
    if (!slot || !valid_backend_name(name)) return bad(var, value, expected);
    if (!slot->empty())
      return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: device '%s' appears twice", var,
                  value, key.c_str());
    *slot = name;
  }
  return PG_OK;
}

pg_status parse_plugin_path(const char *var, const char *value, std::vector<std::string> *out) {
  out->clear();
  if (!value || !*value) return PG_OK;
  if (has_space(value)) return bad(var, value, "colon-separated absolute directories, no spaces");
  for (const std::string &dir : text::split(value, ':')) {
    if (dir.empty() || dir[0] != '/')
      return fail(PG_ERR_INVALID_ARGUMENT,
                  "%s='%s' is not valid: entry '%s' is %s; every entry must be an absolute "
                  "directory",
                  var, value, dir.c_str(), dir.empty() ? "empty" : "relative");
    out->push_back(dir);
  }
  return PG_OK;
}

pg_status parse_path(const char *var, const char *value, std::string *out) {
  if (has_space(value)) return bad(var, value, "a file path without whitespace");
  *out = value;
  return PG_OK;
}

pg_status parse_writable_dir(const char *var, const char *value, std::string *out) {
  PG_CHECK(parse_path(var, value, out));
  struct stat st {};
  if (stat(value, &st) != 0)
    return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: %s; expected an existing folder", var,
                text::printable(value).c_str(), std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: not a folder; expected an existing folder", var,
                text::printable(value).c_str());
  if (access(value, W_OK | X_OK) != 0)
    return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: this process cannot write in it (%s)", var,
                text::printable(value).c_str(), std::strerror(errno));
  return PG_OK;
}

pg_status parse_positive_int(const char *var, const char *value, int *out) {
  int v = 0;
  if (!text::parse_number(value, &v) || v <= 0) return bad(var, value, "a positive integer");
  *out = v;
  return PG_OK;
}

pg_status parse_positive_ints(const char *var, const char *value, std::vector<int> *out) {
  std::vector<int> values;
  for (const std::string &item : text::split(value, ',')) {
    int v = 0;
    if (!text::parse_number(item, &v) || v <= 0)
      return bad(var, value, "a positive integer, or positive integers separated by commas");
    values.push_back(v);
  }
  *out = values;
  return PG_OK;
}

pg_status parse_int(const char *var, const char *value, int min, int max, int *out) {
  int v = 0;
  if (!text::parse_number(value, &v) || v < min || v > max) {
    const std::string expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    return bad(var, value, expected.c_str());
  }
  *out = v;
  return PG_OK;
}

pg_status parse_size(const char *var, const char *value, std::size_t *out) {
  if (text::parse_size(value, out)) return PG_OK;
  // The grammar allows it, but it does not fit in size_t.
  const std::size_t digits = std::strspn(value, "0123456789");
  if (digits > 0 && (value[digits] == '\0' || (std::strchr("KMG", value[digits]) && value[digits + 1] == '\0')))
    return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is too large", var, value);
  return bad(var, value, "a size <unsigned>[K|M|G] (binary units), e.g. 4M");
}

pg_status parse_size(const char *var, const char *value, std::size_t min, std::size_t max, std::size_t *out) {
  std::size_t v = 0;
  PG_CHECK(parse_size(var, value, &v));
  if (v < min || v > max) {
    const std::string expected = "a size from " + std::to_string(min) + " to " + text::format_bytes(max);
    return bad(var, value, expected.c_str());
  }
  *out = v;
  return PG_OK;
}

pg_status parse_seconds(const char *var, const char *value, double *out) {
  static const char *const expected = "a non-negative number of seconds (0 = off), e.g. 300 or 1.5";
  // Decimal only: a leading digit rules out signs, "inf", "nan" and ".5".
  double v = 0;
  if (!std::isdigit(static_cast<unsigned char>(value[0])) || !text::parse_number(value, &v) ||
      !std::isfinite(v))
    return bad(var, value, expected);
  *out = v;
  return PG_OK;
}

pg_status parse_choice(const char *var, const char *value, const std::vector<const char *> &names, int *out) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (std::strcmp(value, names[i]) == 0) {
      *out = static_cast<int>(i);
      return PG_OK;
    }
  std::vector<std::string> quoted;
  for (const char *n : names) quoted.emplace_back(n);
  const std::string expected = (names.size() == 1 ? "" : "one of ") + text::join(quoted, ", ") +
                               (names.size() == 1 ? " (or unset)" : "");
  return bad(var, value, expected.c_str());
}

pg_status parse_log_level(const char *var, const char *value, LogLevel *out) {
  int level = 0;
  PG_CHECK(parse_choice(var, value, kLogLevels, &level));
  *out = static_cast<LogLevel>(level);
  return PG_OK;
}

}  // namespace pg::params
