// The backend registry: built-ins, backends registered at run time, and
// plugins loaded by name. Entries are never removed, so pointers stay valid.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "topology/layout.h"
#include "util/params.h"

namespace pg {

// A built-in backend's own PGS_* settings, read and validated once when a
// strategy is created, so that instances made later (a device default created on
// first need, a hierarchical backend's sub-instances) use what every rank
// agreed on rather than the environment of that moment.
class BackendSettings {
 public:
  virtual ~BackendSettings() = default;
  // The backend's variables with their values (params::list_rows over its table).
  virtual params::Listings list() const = 0;
  // The values that change the schedule ("VAR=value ..."), which every rank
  // must agree on; "" when none do.
  std::string schedule() const { return params::schedule(list()); }
};

// Every built-in backend's settings, by backend name.
using SettingsMap = std::map<std::string, std::shared_ptr<const BackendSettings>>;

struct InstanceEnv;

// What a backend instance is made with.
struct MakeArgs {
  const pg_backend_context &ctx;   // valid until the instance is destroyed
  const topology::Layout &layout;  // the context's nodes and rails, with who sits where; valid as ctx
  const InstanceEnv &env;          // valid during make; what it points to outlives the instance

  // A built-in's settings (T is its own BackendSettings class).
  template <typename T>
  const T &settings_of(const std::string &name) const;
};

struct BackendEntry {
  std::string name;
  uint32_t devices = 0;  // PG_DEVICE_* bits
  // The devices (PG_DEVICE_* bits) whose default this built-in is: one per
  // device, so that the core names no backend (pg_default_backend).
  uint32_t default_for = 0;
  // Built-ins with PGS_* variables of their own: reads and validates them
  // (errors name the variable). Empty for backends without settings.
  std::function<pg_status(std::shared_ptr<const BackendSettings> *)> read_settings;
  // Makes an instance (collective over args.ctx.comm).
  std::function<pg_status(const MakeArgs &args, std::unique_ptr<Backend> *)> make;
};

namespace registry {

// The backends built into the library, one entry each, as the layer above the
// backends hands them over when the library is loaded (src/api/builtins.cpp):
// the core names no backend. The registry reads them at its first use.
using Builtins = std::vector<BackendEntry> (*)();
bool provide_builtins(Builtins builtins);

// pg_backend_register: validates and copies a user table.
pg_status add_table(const pg_backend_ops *ops);
// The entry of `name`, or nullptr.
const BackendEntry *find(const std::string &name);
// The name of the built-in that is the default for `device` (a PG_DEVICE_*
// bit), or nullptr.
const char *default_for(uint32_t device);
// Sorted names.
std::vector<std::string> names();
// Reads the settings of every built-in backend that has some.
pg_status read_settings(SettingsMap *out);

}  // namespace registry
}  // namespace pg
