// PGS_BIND: which NUMA node a rank runs on, and binding the process there;
// and how many ranks share this host's CPUs (the wait rule's question).
#include <hwloc.h>
#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "topology/hwloc_util.h"
#include "topology/machine.h"
#include "util/log.h"
#include "util/owned_comm.h"
#include "util/status.h"

namespace pg::topology {

namespace {

std::mutex g_bind_mutex;
int g_bound_numa = -1;  // the NUMA node this process was bound to; -1: not bound

}  // namespace

Binding choose_binding(const Machine &machine, Bind mode, int local_rank,
                       const Gpu *gpu) {
  Binding b;
  b.mode = mode;
  if (mode == Bind::none) {
    b.reason = "PGS_BIND=none";
    return b;
  }
  if (machine.numa.empty()) {
    b.reason = "no NUMA node in the topology";
    return b;
  }
  const NumaNode *node = nullptr;
  if (gpu && gpu->numa >= 0) {
    for (const NumaNode &n : machine.numa)
      if (static_cast<int>(n.os_index) == gpu->numa) node = &n;
    if (node) b.reason = "NUMA node of GPU " + gpu->pci_bus_id;
  }
  if (!node) {
    // Only NUMA nodes with cores: memory-only nodes (HBM, CXL, GPU memory) cannot hold a rank.
    std::vector<const NumaNode *> with_cores;
    for (const NumaNode &m : machine.numa)
      if (m.cores > 0) with_cores.push_back(&m);
    if (with_cores.empty()) {
      b.reason = "no NUMA node with cores in the topology";
      return b;
    }
    std::size_t n = with_cores.size();
    node = with_cores[static_cast<std::size_t>(local_rank < 0 ? 0 : local_rank) % n];
    b.reason = "local rank " + std::to_string(local_rank) + " round-robin over " +
               std::to_string(n) + " NUMA node" + (n == 1 ? "" : "s");
    if (gpu) b.reason += " (hwloc cannot place GPU " + gpu->pci_bus_id + ")";
  }
  b.numa = static_cast<int>(node->os_index);
  b.cpuset = node->cpuset;
  return b;
}

std::string describe_binding(const Binding &b) {
  if (b.mode == Bind::none) return "none";
  if (b.numa < 0) return "none (" + b.reason + ")";
  return "numa:" + std::to_string(b.numa) + " cpus " + b.cpuset + " (" + b.reason + ")";
}

pg_status apply_binding(const Machine &machine, const Binding &binding, std::string *note) {
  if (binding.mode == Bind::none || binding.numa < 0) {
    *note = "not bound";
    return PG_OK;
  }
  if (machine.from_xml) {
    *note = "not applied: the topology comes from PGS_TOPOLOGY_XML, not this machine";
    return PG_OK;
  }
  std::lock_guard<std::mutex> lock(g_bind_mutex);
  if (g_bound_numa >= 0) {
    *note = g_bound_numa == binding.numa
                ? "applied"
                : "kept the earlier binding to NUMA node " + std::to_string(g_bound_numa);
    return PG_OK;
  }
  if (!machine.topology)
    return fail(PG_ERR_INTERNAL, "cannot bind to NUMA node %d: the machine was not read by hwloc",
                binding.numa);
  hwloc_topology_t topo = machine.topology->topo;
  hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(binding.numa));
  if (!node) return fail(PG_ERR_INTERNAL, "NUMA node %d is not in the topology", binding.numa);
  if (hwloc_set_cpubind(topo, node->cpuset, HWLOC_CPUBIND_PROCESS) != 0) {
    // The user asked for a binding the system refuses (cgroup, launcher's own
    // binding): say so and run unbound rather than fail the job.
    *note = std::string("not applied: hwloc_set_cpubind failed: ") + std::strerror(errno);
    PG_LOG(warn, "PGS_BIND=numa: binding to NUMA node %d (cpus %s) failed: %s",
        binding.numa, binding.cpuset.c_str(), std::strerror(errno));
    return PG_OK;
  }
  g_bound_numa = binding.numa;
  *note = "applied";
  return PG_OK;
}

std::string current_cpubind() {
  std::shared_ptr<const Machine> live;
  if (load_machine("", &live) != PG_OK) return "";
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set) return "";
  std::string out;
  if (hwloc_get_cpubind(live->topology->topo, set, HWLOC_CPUBIND_PROCESS) == 0)
    out = bitmap_list(set);
  hwloc_bitmap_free(set);
  return out;
}

namespace {

// Ranks on one kernel: its boot id, hashed to an MPI_Comm_split color.
// Containers and network namespaces on one machine share the kernel, and its
// CPUs, where MPI may see separate hosts. -1: no boot id here.
int kernel_color() {
  std::FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (!f) return -1;
  char id[64] = {0};
  const bool read = std::fgets(id, sizeof id, f) != nullptr;
  std::fclose(f);
  if (!read) return -1;
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (const char *c = id; *c && *c != '\n'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return static_cast<int>(h & 0x7fffffff);
}

}  // namespace

pg_status host_share(MPI_Comm comm, HostShare *out) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    return fail(PG_ERR_INTERNAL, "sched_getaffinity failed: %s", std::strerror(errno));
  // Every rank must take the same way: the kernel's boot id where all have one.
  int color = kernel_color(), everywhere = color >= 0;
  PG_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &everywhere, 1, MPI_INT, MPI_LAND, comm));
  MPI_Comm host = MPI_COMM_NULL;
  if (everywhere)
    PG_MPI_CHECK(MPI_Comm_split(comm, color, 0, &host));
  else
    PG_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host));
  mark_owned(host);
  cpu_set_t all;
  int ranks = 1;
  const int rc = MPI_Allreduce(&mine, &all, static_cast<int>(sizeof mine), MPI_BYTE, MPI_BOR, host);
  MPI_Comm_size(host, &ranks);
  MPI_Comm_free(&host);
  if (rc != MPI_SUCCESS) return fail(PG_ERR_BACKEND, "MPI_Allreduce of the ranks' CPU masks failed");
  out->ranks = ranks;
  out->cpus = CPU_COUNT(&all);
  return PG_OK;
}

}  // namespace pg::topology
