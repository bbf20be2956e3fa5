// hwloc helpers shared by the topology files (not for the rest of the library).
#pragma once

#include <hwloc.h>

#include <string>

namespace pg::topology {

// A bitmap in hwloc's list format ("0-3,8"); "" for NULL.
std::string bitmap_list(hwloc_const_bitmap_t set);

// The hwloc handle behind load_machine(xml_path), NULL when not loaded yet.
hwloc_topology_t cached_topology(const std::string &xml_path);

}  // namespace pg::topology
