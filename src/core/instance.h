// Backend instances and the internal factory that makes them on any
// communicator: a strategy's selected backend and its device default, and the
// sub-instances a hierarchical backend runs on its node and rail communicators
// (UCC's cl/hier habit: each subgroup gets its own team).
#pragma once

#include <memory>
#include <string>

#include "core/memory.h"
#include "core/registry.h"
#include "topology/layout.h"

namespace pg {

// One backend instance with the private communicators of its context.
struct Instance {
  std::string name;
  MPI_Comm comm = MPI_COMM_NULL;
  topology::Layout layout;
  pg_backend_context ctx{};
  std::unique_ptr<Backend> backend;

  ~Instance();
};

// What an instance is made with, beside its communicators: its device, and
// what it shares with the strategy it serves.
struct InstanceEnv {
  bool cuda = false;
  int device_index = -1;                 // the rank's GPU on cuda
  void *stream = nullptr;                // the user's CUDA stream, or NULL
  const SettingsMap *settings = nullptr; // every built-in's settings, agreed at creation
  const Memory *memory = nullptr;        // the strategy's pg_mem_alloc buffers
};

// Makes an instance of `entry` on private duplicates of `comm` and of the
// communicators of `layout` (the nodes and rails of comm). Collective over comm.
pg_status make_instance(const BackendEntry &entry, MPI_Comm comm, const topology::Layout &layout,
                        const InstanceEnv &env, std::unique_ptr<Instance> *out);
// The same for a registered backend named `name`.
pg_status make_instance(const std::string &name, MPI_Comm comm, const topology::Layout &layout,
                        const InstanceEnv &env, std::unique_ptr<Instance> *out);

template <typename T>
const T &MakeArgs::settings_of(const std::string &name) const {
  return static_cast<const T &>(*env.settings->at(name));
}

}  // namespace pg
