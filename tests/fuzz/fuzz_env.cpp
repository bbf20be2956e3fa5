// libFuzzer target for the environment parsers (src/util/params.cpp) and the
// backend-name grammar. The first byte picks the parser, the rest is the value
// (up to its first NUL, as an environment variable would be). Beyond crashes
// and sanitizer reports, every value a parser accepts is checked against the
// grammar docs/env.md states, by an independent check here; a value the
// grammar forbids but the parser takes ends the run.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/names.h"
#include "util/params.h"

namespace {

using namespace pg::params;

[[noreturn]] void forbidden(const char *parser, const std::string &value) {
  std::fprintf(stderr, "%s accepted '%s', which docs/env.md forbids\n", parser, value.c_str());
  std::abort();
}

bool digits(const std::string &s, std::size_t from, std::size_t to) {
  if (from >= to) return false;
  for (std::size_t i = from; i < to; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// <name> or cpu:<name>[,cuda:<name>] in any order, each key at most once.
bool backend_grammar(const std::string &v) {
  if (v.find(':') == std::string::npos) return pg::valid_backend_name(v);
  bool cpu = false, cuda = false;
  std::size_t pos = 0;
  while (true) {
    const std::size_t end = v.find(',', pos);
    const std::string item = v.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos || !pg::valid_backend_name(item.substr(colon + 1))) return false;
    const std::string key = item.substr(0, colon);
    bool &seen = key == "cpu" ? cpu : cuda;
    if ((key != "cpu" && key != "cuda") || seen) return false;
    seen = true;
    if (end == std::string::npos) return true;
    pos = end + 1;
  }
}

// Colon-separated absolute directories, no whitespace, no empty entry.
bool path_grammar(const std::string &v) {
  if (v.empty()) return true;  // empty means unset
  for (char c : v)
    if (c == ' ' || (c >= '\t' && c <= '\r')) return false;
  std::size_t pos = 0;
  while (true) {
    if (pos >= v.size() || v[pos] != '/') return false;
    const std::size_t end = v.find(':', pos);
    if (end == std::string::npos) return true;
    pos = end + 1;
  }
}

// <unsigned>[K|M|G]
bool size_grammar(const std::string &v) {
  const bool unit = !v.empty() && (v.back() == 'K' || v.back() == 'M' || v.back() == 'G');
  return digits(v, 0, v.size() - (unit ? 1 : 0));
}

// A decimal number: digits, an optional fraction, an optional exponent.
bool seconds_grammar(const std::string &v) {
  std::size_t i = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  if (i == 0) return false;
  if (i < v.size() && v[i] == '.') {
    ++i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
  }
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
    const std::size_t start = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    if (i == start) return false;
  }
  return i == v.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const std::string value(reinterpret_cast<const char *>(data + 1), size - 1);
  const std::string v = value.substr(0, value.find('\0'));
  const char *var = "PGS_FUZZ";
  switch (data[0] % 7) {
    case 0: {
      BackendChoice b;
      if (parse_backend(var, v.c_str(), &b) == PG_OK && !v.empty() && !backend_grammar(v)) forbidden("PGS_BACKEND", v);
      break;
    }
    case 1: {
      std::vector<std::string> dirs;
      if (parse_plugin_path(var, v.c_str(), &dirs) == PG_OK && !path_grammar(v)) forbidden("PGS_PLUGIN_PATH", v);
      break;
    }
    case 2: {
      int n = 0;
      if (parse_positive_int(var, v.c_str(), &n) == PG_OK &&
          (!digits(v, 0, v.size()) || n <= 0 || std::strtoull(v.c_str(), nullptr, 10) != static_cast<unsigned long long>(n)))
        forbidden("a positive integer", v);
      break;
    }
    case 3: {
      std::size_t n = 0;
      if (parse_size(var, v.c_str(), &n) == PG_OK && !size_grammar(v)) forbidden("a size", v);
      break;
    }
    case 4: {
      double s = 0;
      if (parse_seconds(var, v.c_str(), &s) == PG_OK && (!seconds_grammar(v) || !std::isfinite(s) || s < 0))
        forbidden("PGS_TIMEOUT", v);
      break;
    }
    case 5: {
      LogLevel l;
      if (parse_log_level(var, v.c_str(), &l) == PG_OK && v != "error" && v != "warn" && v != "info" && v != "debug")
        forbidden("PGS_LOG", v);
      break;
    }
    default: {
      // The name grammar itself, against a plain reading of [a-z0-9_]{1,63}.
      bool ok = !v.empty() && v.size() <= 63;
      for (char c : v) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
      if (ok != pg::valid_backend_name(v)) forbidden("the backend-name check", v);
      break;
    }
  }
  return 0;
}
