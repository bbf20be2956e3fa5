// The grammar of backend names, [a-z0-9_]{1,63}: checked by registration,
// PGS_BACKEND and the plugin loader (a name becomes part of a file name).
#pragma once

#include <string_view>

namespace pg {

inline bool valid_backend_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace pg
