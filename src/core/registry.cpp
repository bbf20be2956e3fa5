#include "core/registry.h"

#include <cstring>
#include <map>
#include <mutex>

#include "core/table_backend.h"
#include "util/names.h"
#include "util/status.h"

namespace pg::registry {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<BackendEntry>> entries;
  std::map<std::string, std::unique_ptr<pg_backend_ops>> tables;  // copies of user tables
  std::map<std::string, std::unique_ptr<std::string>> names;      // their names
};

void add_locked(Registry &r, BackendEntry entry) {
  std::string name = entry.name;
  r.entries[name] = std::make_unique<BackendEntry>(std::move(entry));
}

Builtins provided = nullptr;

// Never destroyed: strategies destroyed at exit still use the tables.
Registry &instance() {
  static Registry *r = [] {
    auto *reg = new Registry;
    if (provided)
      for (BackendEntry &entry : provided()) add_locked(*reg, std::move(entry));
    return reg;
  }();
  return *r;
}

}  // namespace

bool provide_builtins(Builtins builtins) {
  provided = builtins;
  return true;
}

pg_status add_table(const pg_backend_ops *ops) {
  if (!ops) return fail(PG_ERR_INVALID_ARGUMENT, "pg_backend_register: the table is NULL");
  // The version decides how the rest may be read, so it is checked first.
  if (ops->abi_version != PG_BACKEND_ABI_VERSION)
    return fail(PG_ERR_PLUGIN,
                "pg_backend_register: the table has ABI version %u; this library knows version %d",
                ops->abi_version, PG_BACKEND_ABI_VERSION);
  const std::size_t known = sizeof(pg_backend_ops);
  const std::size_t needed = offsetof(pg_backend_ops, create) + sizeof(ops->create);
  if (ops->struct_size < needed)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "pg_backend_register: struct_size %zu is too small to hold the table's header "
                "(at least %zu bytes)",
                ops->struct_size, needed);
  // A size far beyond any layout is an uninitialized field, not a newer table.
  if (ops->struct_size > 64 * known)
    return fail(PG_ERR_PLUGIN,
                "pg_backend_register: struct_size %zu is not a table size (this library's is %zu); "
                "set it to sizeof(pg_backend_ops)",
                ops->struct_size, known);
  if (ops->struct_size > known) {
    const unsigned char *tail = reinterpret_cast<const unsigned char *>(ops) + known;
    for (std::size_t i = 0; i < ops->struct_size - known; ++i)
      if (tail[i] != 0)
        return fail(PG_ERR_PLUGIN,
                    "pg_backend_register: the table (struct_size %zu, ABI version %u) has entries "
                    "this library (struct_size %zu, ABI version %d) does not know",
                    ops->struct_size, ops->abi_version, known, PG_BACKEND_ABI_VERSION);
  }
  auto table = std::make_unique<pg_backend_ops>();
  std::memset(table.get(), 0, known);
  std::memcpy(table.get(), ops, ops->struct_size < known ? ops->struct_size : known);

  std::string name = table->name ? table->name : "";
  if (!valid_backend_name(name))
    return fail(PG_ERR_INVALID_ARGUMENT,
                "pg_backend_register: invalid backend name '%s'; expected [a-z0-9_]{1,63}",
                table->name ? table->name : "(null)");
  if (!table->create)
    return fail(PG_ERR_INVALID_ARGUMENT, "pg_backend_register: backend '%s' has no create",
                name.c_str());
  if (table->devices == 0 || (table->devices & ~uint32_t(PG_DEVICE_CPU | PG_DEVICE_CUDA)) != 0)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "pg_backend_register: backend '%s' has devices 0x%x; expected a non-empty set of "
                "PG_DEVICE_CPU | PG_DEVICE_CUDA",
                name.c_str(), table->devices);
  int nonblocking = !!table->iallreduce + !!table->test + !!table->request_free;
  if (nonblocking != 0 && nonblocking != 3)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "pg_backend_register: backend '%s' must give iallreduce, test and request_free "
                "together or none of them",
                name.c_str());

  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.entries.count(name))
    return fail(PG_ERR_INVALID_ARGUMENT,
                "pg_backend_register: a backend named '%s' is already registered", name.c_str());
  auto stored_name = std::make_unique<std::string>(name);
  table->name = stored_name->c_str();
  const pg_backend_ops *stored = table.get();
  r.names[name] = std::move(stored_name);
  r.tables[name] = std::move(table);
  BackendEntry entry;
  entry.name = name;
  entry.devices = stored->devices;
  entry.make = [stored](const MakeArgs &args, std::unique_ptr<Backend> *out) {
    return make_table_backend(*stored, args.ctx, out);
  };
  add_locked(r, std::move(entry));
  return PG_OK;
}

const BackendEntry *find(const std::string &name) {
  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? nullptr : it->second.get();
}

const char *default_for(uint32_t device) {
  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &kv : r.entries)
    if (kv.second->default_for & device) return kv.second->name.c_str();
  return nullptr;
}

std::vector<std::string> names() {
  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const auto &kv : r.entries) out.push_back(kv.first);
  return out;
}

pg_status read_settings(SettingsMap *out) {
  SettingsMap map;
  std::vector<const BackendEntry *> builtins;
  {
    Registry &r = instance();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto &kv : r.entries)
      if (kv.second->read_settings) builtins.push_back(kv.second.get());
  }
  for (const BackendEntry *e : builtins) PG_CHECK(e->read_settings(&map[e->name]));
  *out = std::move(map);
  return PG_OK;
}

}  // namespace pg::registry
