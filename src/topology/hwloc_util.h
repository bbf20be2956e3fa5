// hwloc helpers shared by the topology files (not for the rest of the library).
#pragma once

#include <hwloc.h>

#include <string>

namespace pg::topology {

// Owns the hwloc topology a Machine was read from (Machine::topology).
struct HwlocTopology {
  hwloc_topology_t topo = nullptr;

  HwlocTopology() = default;
  HwlocTopology(const HwlocTopology &) = delete;
  HwlocTopology &operator=(const HwlocTopology &) = delete;
  ~HwlocTopology() {
    if (topo) hwloc_topology_destroy(topo);
  }
};

// A bitmap in hwloc's list format ("0-3,8"); "" for NULL.
std::string bitmap_list(hwloc_const_bitmap_t set);

// A PCI device's bus id as a Machine names its GPUs and NICs ("0000:07:00.0"),
// the key they are sorted, shown and matched by. Only hwloc reads bus ids
// (hwloc_get_pcidev_by_busidstring); this is the one place that writes one.
std::string pci_bus_id(hwloc_obj_t pci);

}  // namespace pg::topology
