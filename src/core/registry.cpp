#include "core/registry.h"

#include <cstring>
#include <map>
#include <mutex>

#include "backends/mpi/mpi_backend.h"
#include "core/status.h"
#include "core/table_backend.h"
#ifdef PG_HAVE_CUDA
#include "backends/nccl/nccl_backend.h"
#endif

namespace pg::registry {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<BackendEntry>> entries;
  std::map<std::string, std::unique_ptr<pg_backend_ops>> tables;  // copies of user tables
  std::map<std::string, std::unique_ptr<std::string>> names;      // their names
};

#ifndef PG_HAVE_CUDA
// "nccl" is registered in every build, so selection can say why it cannot run.
BackendEntry nccl_unavailable() {
  return {"nccl", PG_DEVICE_CUDA,
          [](const pg_backend_context &, const params::Settings &, std::unique_ptr<Backend> *) {
            return fail(PG_ERR_UNAVAILABLE,
                        "backend 'nccl' is not available: this build of pgstrategy has no CUDA "
                        "support (configure with -DPGS_ENABLE_CUDA=ON and a CUDA toolkit with NCCL)");
          }};
}
#endif

void add_locked(Registry &r, BackendEntry entry) {
  std::string name = entry.name;
  r.entries[name] = std::make_unique<BackendEntry>(std::move(entry));
}

// Never destroyed: strategies destroyed at exit still use the tables.
Registry &instance() {
  static Registry *r = [] {
    auto *reg = new Registry;
    add_locked(*reg, mpi::entry());
#ifdef PG_HAVE_CUDA
    add_locked(*reg, nccl::entry());
#else
    add_locked(*reg, nccl_unavailable());
#endif
    return reg;
  }();
  return *r;
}

}  // namespace

bool valid_name(const std::string &name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
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
  if (!valid_name(name))
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
  add_locked(r, {name, stored->devices,
                 [stored](const pg_backend_context &ctx, const params::Settings &,
                          std::unique_ptr<Backend> *out) {
                   return make_table_backend(*stored, ctx, out);
                 }});
  return PG_OK;
}

pg_status cuda_device_count(int *count) {
  if (count) *count = 0;
#ifdef PG_HAVE_CUDA
  return nccl::cuda_device_count(count);
#else
  return fail(PG_ERR_UNAVAILABLE,
              "device 'cuda' is not available: this build of pgstrategy has no CUDA support "
              "(configure with -DPGS_ENABLE_CUDA=ON and a CUDA toolkit with NCCL)");
#endif
}

#ifdef PG_HAVE_CUDA
pg_status cuda_mem_alloc(int device, std::size_t bytes, void **ptr) {
  return nccl::mem_alloc(device, bytes, ptr);
}
pg_status cuda_mem_free(int device, void *ptr) { return nccl::mem_free(device, ptr); }
pg_status cuda_pci_bus_id(int device, std::string *bus_id) { return nccl::pci_bus_id(device, bus_id); }
#else
// Unreachable: no CUDA strategy exists without CUDA.
pg_status cuda_mem_alloc(int, std::size_t, void **) { return cuda_device_count(nullptr); }
pg_status cuda_mem_free(int, void *) { return cuda_device_count(nullptr); }
pg_status cuda_pci_bus_id(int, std::string *) { return cuda_device_count(nullptr); }
#endif

const BackendEntry *find(const std::string &name) {
  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(name);
  return it == r.entries.end() ? nullptr : it->second.get();
}

std::vector<std::string> names() {
  Registry &r = instance();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> out;
  for (const auto &kv : r.entries) out.push_back(kv.first);
  return out;
}

}  // namespace pg::registry
