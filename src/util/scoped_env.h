// Environment variables set for one scope and put back as they were after
// (set or unset): for code that hands settings to pg_strategy_create through
// the environment, as pg-bench's NAME+VAR=VALUE backends and the tests do.
// Header-only; not thread-safe, as setenv is not.
#pragma once

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

namespace pg {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;
  // `value` null: unset for the scope.
  void set(const char *name, const char *value) {
    if (!saved_.count(name)) {
      const char *old = std::getenv(name);
      saved_[name] = {old != nullptr, old ? old : ""};
    }
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    for (const auto &[name, old] : saved_)
      if (old.first)
        setenv(name.c_str(), old.second.c_str(), 1);
      else
        unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::pair<bool, std::string>> saved_;  // name -> (was set, its value)
};

}  // namespace pg
