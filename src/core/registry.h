// The backend registry: built-ins, backends registered at run time, and
// plugins loaded by name. Entries are never removed, so pointers stay valid.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/params.h"

namespace pg {

struct BackendEntry {
  std::string name;
  uint32_t devices = 0;  // PG_DEVICE_* bits
  // Makes an instance on a context that stays valid until the instance is
  // destroyed, with the settings every rank agreed on at creation.
  std::function<pg_status(const pg_backend_context &, const params::Settings &,
                          std::unique_ptr<Backend> *)>
      make;
};

namespace registry {

// pg_backend_register: validates and copies a user table.
pg_status add_table(const pg_backend_ops *ops);
// The entry of `name`, or nullptr.
const BackendEntry *find(const std::string &name);
// Sorted names.
std::vector<std::string> names();
// GPUs CUDA can use here; PG_ERR_UNAVAILABLE saying why when there are none
// (a build without CUDA, no driver, no device).
pg_status cuda_device_count(int *count);
// Device memory on GPU `device` (pg_mem_alloc on a CUDA strategy).
pg_status cuda_mem_alloc(int device, std::size_t bytes, void **ptr);
pg_status cuda_mem_free(int device, void *ptr);
// PCI bus id of GPU `device`, as CUDA reports it.
pg_status cuda_pci_bus_id(int device, std::string *bus_id);
// Whether `name` fits [a-z0-9_]{1,63}.
bool valid_name(const std::string &name);

}  // namespace registry
}  // namespace pg
