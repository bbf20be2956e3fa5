// prepare_rank: the per-rank topology step of strategy creation.
#include "topology/machine.h"

#include <cstdlib>

#include "util/log.h"
#include "util/status.h"

namespace pg::topology {

const Nic *nic_for_rank(const Machine &machine, const Gpu *gpu, const Binding &binding) {
  if (gpu) return gpu->nearest_nic >= 0 ? &machine.nics[gpu->nearest_nic] : nullptr;
  bool any_openfabrics = false;
  for (const Nic &n : machine.nics) any_openfabrics |= n.openfabrics;
  const Nic *nic = nullptr;
  for (const Nic &n : machine.nics) {
    if (any_openfabrics && !n.openfabrics) continue;
    if (!nic || (binding.numa >= 0 && n.numa == binding.numa && nic->numa != binding.numa))
      nic = &n;
  }
  return nic;
}

pg_status prepare_rank(const RankOptions &options, const Layout &layout, int cuda_index,
                       std::string *report, const std::string &cuda_bus_id) {
  report->clear();
  std::shared_ptr<const Machine> machine;
  pg_status status = load_machine(options.topology_xml, &machine);
  if (status != PG_OK) {
    // An XML file the user named must load; this machine's own topology is
    // only needed when a binding was asked for.
    if (!options.topology_xml.empty() || options.bind != Bind::none) return status;
    PG_LOG(warn, "%s; no binding, GPU or NIC locality", last_error().c_str());
    *report = "topology unavailable";
    return PG_OK;
  }

  const Gpu *gpu = nullptr;
  if (cuda_index >= 0 && !cuda_bus_id.empty()) gpu = find_gpu_by_bus_id(*machine, cuda_bus_id);
  if (cuda_index >= 0 && !gpu) {
    std::vector<const Gpu *> visible =
        visible_gpus(*machine, std::getenv("CUDA_VISIBLE_DEVICES"));
    if (cuda_index < static_cast<int>(visible.size())) gpu = visible[cuda_index];
  }
  Binding binding = choose_binding(*machine, options.bind, layout.local_rank, gpu);
  std::string note;
  PG_CHECK(apply_binding(*machine, binding, &note));

  std::string &r = *report;
  r = "bind=" + describe_binding(binding);
  if (binding.mode != Bind::none && binding.numa >= 0) r += " [" + note + "]";
  if (cuda_index >= 0) {
    r += " gpu=cuda:" + std::to_string(cuda_index);
    r += gpu ? " " + describe_gpu(*machine, *gpu)
             : std::string(" (not in the hwloc topology: no NUMA or NIC locality)");
  } else {
    const Nic *nic = nic_for_rank(*machine, nullptr, binding);
    r += nic ? " nic=" + nic->name : std::string(" nic=none");
  }
  if (machine->from_xml) r += " topology=" + options.topology_xml;
  PG_LOG(debug, "rank topology: %s", r.c_str());
  return PG_OK;
}

}  // namespace pg::topology
