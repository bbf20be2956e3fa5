#include "core/instance.h"

#include "core/runtime.h"
#include "util/log.h"
#include "util/status.h"

namespace pg {

Instance::~Instance() {
  backend.reset();
  if (runtime::mpi_alive()) {
    topology::free_layout(&layout);
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
}

pg_status make_instance(const BackendEntry &entry, MPI_Comm comm, const topology::Layout &layout,
                        const InstanceEnv &env, std::unique_ptr<Instance> *out) {
  auto inst = std::make_unique<Instance>();
  inst->name = entry.name;
  PG_MPI_CHECK(MPI_Comm_dup(comm, &inst->comm));  // carries the library's mark (util/owned_comm.h)
  // MPI errors come back as statuses with MPI's own text.
  PG_MPI_CHECK(MPI_Comm_set_errhandler(inst->comm, MPI_ERRORS_RETURN));
  PG_CHECK(topology::dup_layout(layout, &inst->layout));
  pg_backend_context &c = inst->ctx;
  c.comm = inst->comm;
  MPI_Comm_rank(inst->comm, &c.rank);
  MPI_Comm_size(inst->comm, &c.size);
  c.device = env.cuda ? "cuda" : "cpu";
  c.device_index = env.cuda ? env.device_index : -1;
  c.node_comm = inst->layout.node_comm;
  c.local_rank = inst->layout.local_rank;
  c.local_size = inst->layout.local_size;
  c.rail_comm = inst->layout.rail_comm;
  c.node_rank = inst->layout.node_rank;
  c.node_count = inst->layout.node_count;
  c.stream = env.stream;
  c.log = log::from_backend;
  PG_CHECK(entry.make(MakeArgs{inst->ctx, inst->layout, env}, &inst->backend));
  *out = std::move(inst);
  return PG_OK;
}

pg_status make_instance(const std::string &name, MPI_Comm comm, const topology::Layout &layout,
                        const InstanceEnv &env, std::unique_ptr<Instance> *out) {
  const BackendEntry *entry = registry::find(name);
  if (!entry) return fail(PG_ERR_INTERNAL, "backend '%s' is not registered", name.c_str());
  return make_instance(*entry, comm, layout, env, out);
}

}  // namespace pg
