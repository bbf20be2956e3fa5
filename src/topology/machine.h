// The node as hwloc sees it, GPU/NIC locality, binding, and the launch
// environment. Implemented in src/topology/ (docs/topology.md explains the
// rules):
//   hwloc_machine.cpp  loading (once per process) and extracting the node
//   gpu_select.cpp     CUDA_VISIBLE_DEVICES and the local rank's GPU
//   binding.cpp        PGS_BIND: which NUMA node, and applying it; the ranks
//                      sharing this host's CPUs
//   machine.cpp        prepare_rank, the per-rank step of strategy creation
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "topology/layout.h"

namespace pg::topology {

// ---------------------------------------------------------------------------
// The node
// ---------------------------------------------------------------------------

struct NumaNode {
  unsigned os_index = 0;
  std::string cpuset;  // hwloc list format, "0-3,8-11"
  int cores = 0;       // cores whose PUs lie in this node
};

// How close a NIC is to a GPU, best first.
enum class NicRule { same_switch, same_host_bridge, same_numa, other, none };
const char *nic_rule_name(NicRule rule);  // "same PCI switch", ..., "no NIC"

struct Nic {
  std::string name;        // OpenFabrics name ("mlx5_0"), else the network name ("eth0")
  std::string netdev;      // network interface of the same device ("ib0"); may be empty
  std::string pci_bus_id;  // "0000:0c:00.0"; empty when not under a PCI device
  bool openfabrics = false;  // has an OpenFabrics (verbs) device: a rail candidate
  int numa = -1;             // NUMA node os_index; -1 when not local to a single node
  std::vector<unsigned long long> bridges;  // PCI bridges above it, nearest first (gp_index)
  std::vector<unsigned long long> host_bridges;  // the subset of `bridges` that are host bridges
};

struct Gpu {
  std::string pci_bus_id;  // "0000:07:00.0"
  std::string uuid;        // "GPU-..." from the NVML OS device; may be empty
  std::string model;       // GPUModel info or "NVIDIA [10de:xxxx]"
  std::string osdevs;      // OS devices hwloc saw ("cuda0,nvml0"); may be empty
  int numa = -1;           // NUMA node os_index; -1 when not local to a single node
  std::vector<unsigned long long> bridges;
  std::vector<unsigned long long> host_bridges;
  int nearest_nic = -1;    // index into Machine::nics; -1 without NICs
  NicRule nic_rule = NicRule::none;
};

// The hwloc topology a Machine was read from (defined in hwloc_util.h).
struct HwlocTopology;

struct Machine {
  std::string source;       // "this machine" or "XML file <path>"
  bool from_xml = false;    // the topology is not this machine: never bind
  std::string hostname;     // from the topology (HostName info); may be empty
  int packages = 0, cores = 0, pus = 0;
  std::size_t l1d_bytes = 0;   // the first core's L1 data (or unified) cache; 0: hwloc does not know
  std::size_t l2_bytes = 0;    // the first core's L2 cache; 0: hwloc does not know
  int l2_cores = 1;            // the cores that share it
  std::vector<NumaNode> numa;  // by os_index
  std::vector<Gpu> gpus;       // by PCI bus id
  std::vector<Nic> nics;       // by PCI bus id, then name
  // Kept for what hwloc answers better than these fields (a PCI device by bus
  // id, a NUMA node's CPUs to bind to); NULL for a Machine built by hand.
  std::shared_ptr<const HwlocTopology> topology;
};

// The machine for `xml_path` (empty: this machine), loaded once per process per
// path and shared (thread-safe). An XML file is loaded with hwloc's I/O filter
// set to keep PCI and OS devices. A file that cannot be loaded is
// PG_ERR_INVALID_ARGUMENT naming PGS_TOPOLOGY_XML and the path.
pg_status load_machine(const std::string &xml_path, std::shared_ptr<const Machine> *out);

// Loads an XML topology without the cache (tests, tools).
pg_status load_machine_xml(const std::string &xml_path, Machine *out);

// Fills Gpu::nearest_nic and nic_rule: NICs with an OpenFabrics device when the
// node has any, else every NIC; the best rule first (same PCI switch, same host
// bridge, same NUMA node, any), ties to the NIC fewest GPUs chose so far, then
// to the lowest bus id. Called by the loaders; exposed for tests.
void assign_nearest_nics(Machine *machine);

// One-line summaries for tools and reports.
std::string describe_gpu(const Machine &machine, const Gpu &gpu);
std::string describe_machine(const Machine &machine);

// ---------------------------------------------------------------------------
// GPU choice
// ---------------------------------------------------------------------------

// The GPUs CUDA would enumerate, in its order, from hwloc's view: all GPUs by
// PCI bus id, then CUDA_VISIBLE_DEVICES applied as CUDA does (indices or
// "GPU-..." UUIDs or unique UUID prefixes, comma-separated; the list ends at
// the first entry that matches nothing; "" hides every GPU). `cuda_visible`
// NULL means unset. A UUID entry matches only GPUs whose UUID hwloc knows (NVML
// OS devices).
std::vector<const Gpu *> visible_gpus(const Machine &machine, const char *cuda_visible);

// `cuda`: local rank i uses the i-th visible GPU (CUDA device i). Reads
// CUDA_VISIBLE_DEVICES. More local ranks than visible GPUs is
// PG_ERR_UNAVAILABLE on every local rank, naming the local rank, the local size
// and the GPU count. *gpu may be NULL on success only when `visible_count`
// comes from CUDA itself (the overload below).
pg_status choose_gpu(const Machine &machine, int local_rank, int local_size, int *cuda_index,
                     const Gpu **gpu);
// Same rule when the caller knows how many devices CUDA sees
// (cudaGetDeviceCount): the hwloc view is used only to name the GPU.
pg_status choose_cuda_index(int local_rank, int local_size, int visible_count, int *cuda_index);

// The GPU with this PCI bus id ("0000:07:00.0", case-insensitive; a bus id
// without the domain means domain 0), as hwloc finds it in the machine's
// topology (hwloc_get_pcidev_by_busidstring); NULL when it is not a GPU there.
const Gpu *find_gpu_by_bus_id(const Machine &machine, const std::string &bus_id);

// ---------------------------------------------------------------------------
// Binding (PGS_BIND)
// ---------------------------------------------------------------------------

// PGS_BIND: none, or near the rank's GPU / spread over NUMA nodes.
enum class Bind { none, numa };

struct Binding {
  Bind mode = Bind::none;
  int numa = -1;        // NUMA node os_index chosen; -1 for none
  std::string cpuset;   // its CPUs, hwloc list format
  std::string reason;   // "GPU's NUMA node", "round-robin over 2 NUMA nodes"
};

// none → no binding. numa → the NUMA node of `gpu` when it has one; otherwise
// (CPU strategies, or a GPU hwloc cannot place) local ranks round-robin over
// the NUMA nodes: local rank i → the (i mod n)-th node.
Binding choose_binding(const Machine &machine, Bind mode, int local_rank,
                       const Gpu *gpu);

// Applies a binding to the whole process (hwloc_set_cpubind, through the
// machine's own topology) on a machine loaded from this system; a topology
// from XML is never applied. The first
// binding applied in a process stays (memory already touched stays local);
// `*note` says what happened ("applied", "not applied: topology from XML", ...).
pg_status apply_binding(const Machine &machine, const Binding &binding, std::string *note);

// The CPUs this process may run on now ("0-1"), or "" when unknown.
std::string current_cpubind();

std::string describe_binding(const Binding &binding);

// The ranks of `comm` on this host (this kernel: containers and network
// namespaces of one machine share its CPUs) and the CPUs they may run on
// together (the union of their affinity masks). Collective over comm. More
// ranks than CPUs: the host is oversubscribed, and a waiting rank must give
// its core away.
struct HostShare {
  int ranks = 1, cpus = 1;
  bool oversubscribed() const { return ranks > cpus; }
};
pg_status host_share(MPI_Comm comm, HostShare *out);

// The NIC a rank would use: its GPU's nearest NIC; for a CPU rank the first
// rail NIC (OpenFabrics when the node has any) on its bound NUMA node, else
// the first. NULL without NICs.
const Nic *nic_for_rank(const Machine &machine, const Gpu *gpu, const Binding &binding);

// ---------------------------------------------------------------------------
// Strategy creation
// ---------------------------------------------------------------------------

// Per-rank preparation at strategy creation (local, after the layout is built):
// loads the node topology once per process (PGS_TOPOLOGY_XML when set), applies
// PGS_BIND, and writes a one-line summary (binding, GPU, NIC) to *report.
// `cuda_index` is the CUDA device this rank uses, -1 for a CPU strategy; its
// `cuda_bus_id` (from CUDA) finds it in hwloc's topology, else CUDA's index in
// PCI order over CUDA_VISIBLE_DEVICES does.
struct RankOptions {
  std::string topology_xml;  // PGS_TOPOLOGY_XML; empty: this machine
  Bind bind = Bind::none;    // PGS_BIND
};
pg_status prepare_rank(const RankOptions &options, const Layout &layout, int cuda_index,
                       std::string *report, const std::string &cuda_bus_id = std::string());

}  // namespace pg::topology
