// Loading the node topology with hwloc and reducing it to a Machine: cores,
// NUMA nodes, GPUs, NICs and where each device sits (NUMA node, PCI bridges).
#include <hwloc.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "topology/hwloc_util.h"
#include "topology/machine.h"
#include "util/status.h"

namespace pg::topology {

namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

// The nearest PCI device at or above an I/O object.
hwloc_obj_t pci_parent(hwloc_obj_t obj) {
  for (hwloc_obj_t o = obj; o; o = o->parent)
    if (o->type == HWLOC_OBJ_PCI_DEVICE) return o;
  return nullptr;
}

// The NUMA node os_index an I/O object is local to, -1 when it is attached
// above several NUMA nodes (or none).
int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

void bridges_of(hwloc_obj_t obj, std::vector<unsigned long long> *bridges,
                std::vector<unsigned long long> *host_bridges) {
  for (hwloc_obj_t o = obj->parent; o && o->type == HWLOC_OBJ_BRIDGE; o = o->parent) {
    bridges->push_back(o->gp_index);
    if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
      host_bridges->push_back(o->gp_index);
  }
}

const char *info(hwloc_obj_t obj, const char *name) {
  return hwloc_obj_get_info_by_name(obj, name);
}

bool starts_with(const char *s, const char *prefix) {
  return s && std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

// An OS device made by hwloc's CUDA or NVML backend.
bool is_nvidia_osdev(hwloc_obj_t osdev) {
  const char *backend = info(osdev, "Backend");
  const char *subtype = osdev->subtype;
  return starts_with(osdev->name, "cuda") || starts_with(osdev->name, "nvml") ||
         (subtype && (!std::strcmp(subtype, "CUDA") || !std::strcmp(subtype, "NVML"))) ||
         (backend && (!std::strcmp(backend, "CUDA") || !std::strcmp(backend, "NVML")));
}

bool is_nvidia_gpu_pci(hwloc_obj_t pci) {
  return pci->attr->pcidev.vendor_id == kNvidiaVendor &&
         (pci->attr->pcidev.class_id >> 8) == 0x03;  // display controller
}

Gpu &gpu_for(std::map<std::string, Gpu> *gpus, hwloc_topology_t topo, hwloc_obj_t pci) {
  std::string id = pci_bus_id(pci);
  auto it = gpus->find(id);
  if (it != gpus->end()) return it->second;
  Gpu gpu;
  gpu.pci_bus_id = id;
  gpu.numa = numa_of(topo, pci);
  bridges_of(pci, &gpu.bridges, &gpu.host_bridges);
  char model[64];
  std::snprintf(model, sizeof model, "NVIDIA [%04x:%04x]", pci->attr->pcidev.vendor_id,
                pci->attr->pcidev.device_id);
  gpu.model = model;
  return gpus->emplace(id, std::move(gpu)).first->second;
}

void extract(hwloc_topology_t topo, Machine *m) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  if (const char *host = info(root, "HostName")) m->hostname = host;
  m->packages = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE));
  m->cores = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE));
  m->pus = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU));
  if (hwloc_obj_t l1 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L1CACHE, 0)) m->l1d_bytes = l1->attr->cache.size;
  if (hwloc_obj_t l2 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L2CACHE, 0)) {
    m->l2_bytes = l2->attr->cache.size;
    m->l2_cores = std::max(1, hwloc_get_nbobjs_inside_cpuset_by_type(topo, l2->cpuset, HWLOC_OBJ_CORE));
  }

  for (hwloc_obj_t node = nullptr;
       (node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) != nullptr;) {
    NumaNode n;
    n.os_index = node->os_index;
    n.cpuset = bitmap_list(node->cpuset);
    n.cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE);
    m->numa.push_back(n);
  }
  std::sort(m->numa.begin(), m->numa.end(),
            [](const NumaNode &a, const NumaNode &b) { return a.os_index < b.os_index; });

  // GPUs: NVIDIA display-class PCI devices, named by their CUDA/NVML OS devices
  // where hwloc's backends found them.
  std::map<std::string, Gpu> gpus;
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(topo, pci)) != nullptr;)
    if (is_nvidia_gpu_pci(pci)) gpu_for(&gpus, topo, pci);
  std::map<std::string, Nic> nics;  // by PCI bus id, or "~name" without one
  for (hwloc_obj_t os = nullptr; (os = hwloc_get_next_osdev(topo, os)) != nullptr;) {
    hwloc_obj_t pci = pci_parent(os);
    auto type = os->attr->osdev.type;
    if ((type == HWLOC_OBJ_OSDEV_GPU || type == HWLOC_OBJ_OSDEV_COPROC) && is_nvidia_osdev(os)) {
      if (!pci) continue;  // cannot be placed; CUDA still finds it
      Gpu &gpu = gpu_for(&gpus, topo, pci);
      if (!gpu.osdevs.empty()) gpu.osdevs += ',';
      gpu.osdevs += os->name ? os->name : "?";
      if (const char *uuid = info(os, "NVIDIAUUID")) gpu.uuid = uuid;
      if (const char *model = info(os, "GPUModel")) gpu.model = model;
    } else if (type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      std::string key = pci ? pci_bus_id(pci) : std::string("~") + (os->name ? os->name : "");
      auto it = nics.find(key);
      if (it == nics.end()) {
        Nic nic;
        if (pci) {
          nic.pci_bus_id = key;
          bridges_of(pci, &nic.bridges, &nic.host_bridges);
        }
        nic.numa = numa_of(topo, os);
        it = nics.emplace(key, std::move(nic)).first;
      }
      Nic &nic = it->second;
      const char *name = os->name ? os->name : "?";
      if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
        // The verbs device names the NIC; a second port device of the same
        // PCI function keeps the first name.
        if (!nic.openfabrics) {
          if (!nic.name.empty() && nic.netdev.empty()) nic.netdev = nic.name;
          nic.name = name;
        }
        nic.openfabrics = true;
      } else if (nic.openfabrics) {
        if (nic.netdev.empty()) nic.netdev = name;
      } else if (nic.name.empty()) {
        nic.name = name;
      } else if (nic.netdev.empty()) {
        nic.netdev = name;
      }
    }
  }
  for (auto &entry : gpus) m->gpus.push_back(std::move(entry.second));
  for (auto &entry : nics) m->nics.push_back(std::move(entry.second));
  assign_nearest_nics(m);
}

pg_status load(const std::string &xml_path, Machine *m) {
  auto handle = std::make_shared<HwlocTopology>();
  if (hwloc_topology_init(&handle->topo) != 0) {
    handle->topo = nullptr;
    return fail(PG_ERR_NO_MEMORY, "hwloc_topology_init failed: %s", std::strerror(errno));
  }
  hwloc_topology_t topo = handle->topo;
  // GPUs and NICs are "important" I/O objects; bridges leading to them stay.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (xml_path.empty()) {
    // hwloc's GL plugin queries X displays, its OpenCL, Level Zero and ROCm
    // SMI plugins start their runtimes: none of it names an NVIDIA GPU better
    // than PCI, CUDA and NVML do.
    for (const char *component : {"gl", "opencl", "levelzero", "rsmi"})
      hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
  } else {
    // Only a regular file: hwloc would block forever opening a FIFO.
    struct stat st;
    const bool exists = stat(xml_path.c_str(), &st) == 0;
    if (!exists || !S_ISREG(st.st_mode))
      return fail(PG_ERR_INVALID_ARGUMENT, "PGS_TOPOLOGY_XML='%s' is not a regular file (%s)", xml_path.c_str(),
                  exists ? "a directory, FIFO or device" : std::strerror(errno));
    if (hwloc_topology_set_xml(topo, xml_path.c_str()) != 0)
      return fail(PG_ERR_INVALID_ARGUMENT,
                  "PGS_TOPOLOGY_XML='%s': hwloc cannot read this XML topology (%s)",
                  xml_path.c_str(), std::strerror(errno));
  }
  if (hwloc_topology_load(topo) != 0) {
    if (!xml_path.empty())
      return fail(PG_ERR_INVALID_ARGUMENT,
                  "PGS_TOPOLOGY_XML='%s': hwloc cannot load this XML topology (%s)",
                  xml_path.c_str(), std::strerror(errno));
    return fail(PG_ERR_UNAVAILABLE, "hwloc cannot load this machine's topology: %s",
                std::strerror(errno));
  }
  m->from_xml = !xml_path.empty();
  m->source = m->from_xml ? "XML file " + xml_path : std::string("this machine");
  extract(topo, m);
  m->topology = std::move(handle);
  return PG_OK;
}

// Machines by XML path ("" for this machine).
using Cache = std::map<std::string, std::shared_ptr<const Machine>>;
std::mutex g_cache_mutex;
Cache &cache() {
  static auto *machines = new Cache();  // lives until exit
  return *machines;
}

}  // namespace

std::string bitmap_list(hwloc_const_bitmap_t set) {
  if (!set) return "";
  char *text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || !text) return "";
  std::string out = text;
  std::free(text);
  return out;
}

std::string pci_bus_id(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

const char *nic_rule_name(NicRule rule) {
  switch (rule) {
    case NicRule::same_switch: return "same PCI switch";
    case NicRule::same_host_bridge: return "same host bridge";
    case NicRule::same_numa: return "same NUMA node";
    case NicRule::other: return "other NUMA node";
    case NicRule::none: break;
  }
  return "no NIC";
}

void assign_nearest_nics(Machine *m) {
  bool any_openfabrics = std::any_of(m->nics.begin(), m->nics.end(),
                                     [](const Nic &n) { return n.openfabrics; });
  std::vector<int> load(m->nics.size(), 0);
  using Bridges = std::vector<unsigned long long>;
  auto contains = [](const Bridges &set, unsigned long long b) {
    return std::find(set.begin(), set.end(), b) != set.end();
  };
  auto shares = [&](const Bridges &a, const Bridges &b) {
    return std::any_of(a.begin(), a.end(), [&](unsigned long long x) { return contains(b, x); });
  };
  // A shared PCI-to-PCI bridge is a switch; a shared host bridge only the root.
  auto switches = [&](const Bridges &bridges, const Bridges &host_bridges) {
    Bridges out;
    for (auto b : bridges)
      if (!contains(host_bridges, b)) out.push_back(b);
    return out;
  };
  for (Gpu &gpu : m->gpus) {
    gpu.nearest_nic = -1;
    gpu.nic_rule = NicRule::none;
    int best_hops = 0;
    const Bridges gpu_switches = switches(gpu.bridges, gpu.host_bridges);
    for (std::size_t i = 0; i < m->nics.size(); ++i) {
      const Nic &nic = m->nics[i];
      if (any_openfabrics && !nic.openfabrics) continue;
      const Bridges nic_switches = switches(nic.bridges, nic.host_bridges);
      NicRule rule = NicRule::other;
      if (shares(gpu_switches, nic_switches))
        rule = NicRule::same_switch;
      else if (shares(gpu.host_bridges, nic.host_bridges))
        rule = NicRule::same_host_bridge;
      else if (gpu.numa >= 0 && gpu.numa == nic.numa)
        rule = NicRule::same_numa;
      // Within a rule, the NIC whose common bridge is nearest the GPU wins
      // (a leaf switch beats the switch above it).
      int hops = static_cast<int>(gpu.bridges.size());
      for (std::size_t h = 0; h < gpu.bridges.size(); ++h)
        if (contains(nic.bridges, gpu.bridges[h])) {
          hops = static_cast<int>(h);
          break;
        }
      bool better = gpu.nearest_nic < 0 || rule < gpu.nic_rule ||
                    (rule == gpu.nic_rule &&
                     (hops < best_hops || (hops == best_hops && load[i] < load[gpu.nearest_nic])));
      if (better) {
        gpu.nearest_nic = static_cast<int>(i);
        gpu.nic_rule = rule;
        best_hops = hops;
      }
    }
    if (gpu.nearest_nic >= 0) ++load[gpu.nearest_nic];
  }
}

pg_status load_machine_xml(const std::string &xml_path, Machine *out) {
  if (xml_path.empty()) return fail(PG_ERR_INVALID_ARGUMENT, "empty topology XML path");
  *out = Machine();
  return load(xml_path, out);
}

pg_status load_machine(const std::string &xml_path, std::shared_ptr<const Machine> *out) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto it = cache().find(xml_path);
  if (it != cache().end()) {
    *out = it->second;
    return PG_OK;
  }
  auto machine = std::make_shared<Machine>();
  PG_CHECK(load(xml_path, machine.get()));
  cache()[xml_path] = machine;
  *out = machine;
  return PG_OK;
}

std::string describe_gpu(const Machine &m, const Gpu &gpu) {
  std::string s = gpu.pci_bus_id;
  if (!gpu.osdevs.empty()) s += " " + gpu.osdevs;
  s += gpu.numa >= 0 ? " NUMA " + std::to_string(gpu.numa) : std::string(" NUMA ?");
  if (gpu.nearest_nic >= 0)
    s += ", NIC " + m.nics[gpu.nearest_nic].name + " (" + nic_rule_name(gpu.nic_rule) + ")";
  else
    s += ", no NIC";
  return s;
}

std::string describe_machine(const Machine &m) {
  auto count = [](std::size_t n, const char *what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  std::string s = m.source + ": " + count(m.packages, "package") + ", " +
                  count(m.cores, "core") + ", " + count(m.numa.size(), "NUMA node") + ", " +
                  count(m.gpus.size(), "GPU") + ", " + count(m.nics.size(), "NIC");
  if (!m.nics.empty()) {
    s += " (";
    for (std::size_t i = 0; i < m.nics.size(); ++i) {
      if (i) s += ", ";
      s += m.nics[i].name;
      if (m.nics[i].numa >= 0) s += "@NUMA" + std::to_string(m.nics[i].numa);
    }
    s += ")";
  }
  return s;
}

}  // namespace pg::topology
