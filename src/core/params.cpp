#include "core/params.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/names.h"
#include "core/status.h"
#include "core/text.h"

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

}  // namespace

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

pg_status parse_positive_int(const char *var, const char *value, int *out) {
  int v = 0;
  if (!text::parse_number(value, &v) || v <= 0) return bad(var, value, "a positive integer");
  *out = v;
  return PG_OK;
}

pg_status parse_size(const char *var, const char *value, std::size_t *out) {
  static const char *const expected = "a size <unsigned>[K|M|G] (binary units), e.g. 4M";
  std::size_t len = std::strlen(value);
  unsigned shift = 0;
  if (len > 0) {
    switch (value[len - 1]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: break;
    }
  }
  const std::string_view digits(value, shift ? len - 1 : len);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
    return bad(var, value, expected);
  unsigned long long v = 0;
  if (!text::parse_number(digits, &v) || v > (static_cast<unsigned long long>(SIZE_MAX) >> shift))
    return fail(PG_ERR_INVALID_ARGUMENT, "%s='%s' is too large", var, value);
  *out = static_cast<std::size_t>(v << shift);
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

pg_status parse_log_level(const char *var, const char *value, LogLevel *out) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; ++i)
    if (std::strcmp(value, names[i]) == 0) {
      *out = static_cast<LogLevel>(i);
      return PG_OK;
    }
  return bad(var, value, "one of error, warn, info, debug");
}

pg_status read(Settings *out) {
  Settings s;
  const char *v = nullptr;
  PG_CHECK(parse_backend("PGS_BACKEND", env("PGS_BACKEND"), &s.backend));
  PG_CHECK(parse_plugin_path("PGS_PLUGIN_PATH", env("PGS_PLUGIN_PATH"), &s.plugin_path));
  if ((v = env("PGS_RANKS_PER_NODE"))) PG_CHECK(parse_positive_int("PGS_RANKS_PER_NODE", v, &s.ranks_per_node));
  if ((v = env("PGS_TOPOLOGY_XML"))) {
    if (has_space(v)) return bad("PGS_TOPOLOGY_XML", v, "a file path without whitespace");
    s.topology_xml = v;
  }
  if ((v = env("PGS_LOG"))) PG_CHECK(parse_log_level("PGS_LOG", v, &s.log));
  if ((v = env("PGS_DEBUG"))) {
    if (std::strcmp(v, "detail") != 0) return bad("PGS_DEBUG", v, "'detail' (or unset)");
    s.debug_detail = true;
  }
  if ((v = env("PGS_TIMEOUT"))) PG_CHECK(parse_seconds("PGS_TIMEOUT", v, &s.timeout_s));
  if ((v = env("PGS_BIND"))) {
    if (std::strcmp(v, "none") == 0) s.bind = Bind::none;
    else if (std::strcmp(v, "numa") == 0) s.bind = Bind::numa;
    else return bad("PGS_BIND", v, "none or numa");
  }
  *out = std::move(s);
  return PG_OK;
}

std::string Settings::schedule_fingerprint() const {
  return "PGS_RANKS_PER_NODE=" + std::to_string(ranks_per_node) +
         " PGS_DEBUG=" + (debug_detail ? "detail" : "") +
         // With a watchdog, blocking calls below MPI_THREAD_MULTIPLE are issued
         // as nonblocking MPI calls (polled), which cannot match blocking ones.
         " PGS_TIMEOUT=" + (timeout_s > 0 ? "on" : "off");
}

}  // namespace pg::params
