// Small string helpers shared by the environment parsers, the topology code,
// the plugin loader and the tools: one split, one join, one number parser, one
// size parser and one size formatter. Header-only, so the tools (clients of the
// shared library) use the same ones without the library's objects.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace pg::text {

// The fields between separators, empty ones included ("a,,b" -> a, "", b;
// "" -> one empty field).
inline std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> fields;
  std::size_t pos = 0;
  while (true) {
    const std::size_t at = text.find(sep, pos);
    fields.emplace_back(text.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos));
    if (at == std::string_view::npos) return fields;
    pos = at + 1;
  }
}

inline std::string join(const std::vector<std::string> &items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// The whole of `text` as a number of type T, through std::from_chars: decimal
// digits (a leading '-' only for signed types; floating types also take a
// fraction and an exponent, never hexadecimal), no spaces, no '+', nothing
// after the number, and within T's range. False otherwise.
template <typename T>
bool parse_number(std::string_view text, T *out) {
  if (text.empty()) return false;
  T value{};
  const char *end = text.data() + text.size();
  std::from_chars_result r{};
  if constexpr (std::is_floating_point_v<T>)
    r = std::from_chars(text.data(), end, value, std::chars_format::general);
  else
    r = std::from_chars(text.data(), end, value, 10);
  if (r.ec != std::errc() || r.ptr != end) return false;
  *out = value;
  return true;
}

// A size in bytes: <unsigned>[K|M|G], binary units ("4K" = 4096), the grammar
// of docs/env.md. `spelled` also takes what command lines write: lower-case
// units and a trailing B or iB ("64MiB", "1kb", "4096B"). False when the text
// is not a size or the size does not fit in size_t.
inline bool parse_size(std::string_view text, std::size_t *out, bool spelled = false) {
  const std::size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  unsigned long long v = 0;
  if (!parse_number(text.substr(0, digits), &v)) return false;
  std::string_view unit = text.substr(digits);
  if (spelled && !unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) {
    unit.remove_suffix(1);
    if (!unit.empty() && unit.back() == 'i') unit.remove_suffix(1);
    if (unit.empty() && text.size() > digits + 1) return false;  // "4iB"
  }
  unsigned shift = 0;
  if (!unit.empty()) {
    const char u = spelled && unit[0] >= 'a' ? static_cast<char>(unit[0] - 'a' + 'A') : unit[0];
    if (unit.size() != 1 || (u != 'K' && u != 'M' && u != 'G')) return false;
    shift = u == 'K' ? 10 : u == 'M' ? 20 : 30;
  }
  if (v > (static_cast<unsigned long long>(SIZE_MAX) >> shift)) return false;
  *out = static_cast<std::size_t>(v << shift);
  return true;
}

// Bytes in the largest binary unit that divides them: "4 KiB", "3 MiB", "1000 B".
inline std::string format_bytes(std::size_t bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

// `text` fit to quote in a one-line message: control characters (a newline
// from a user's string) are shown escaped (\n, \t, \xNN), and very long text
// is cut.
inline std::string printable(std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (char c : text.substr(0, 256)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
    else out += c;
  }
  if (text.size() > 256) out += "...";
  return out;
}

}  // namespace pg::text
