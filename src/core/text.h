// Small string helpers shared by the environment parsers, the topology code,
// the plugin loader and the tools: one split, one join, one number parser.
#pragma once

#include <charconv>
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
