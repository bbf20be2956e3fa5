// Which GPU `cuda` means for a local rank: CUDA's visible devices in CUDA's
// order, from hwloc's view plus CUDA_VISIBLE_DEVICES.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "topology/hwloc_util.h"
#include "topology/machine.h"
#include "util/log.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::topology {

namespace {

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An entry of CUDA_VISIBLE_DEVICES without the blanks around it.
std::string trimmed(const std::string &entry) {
  const std::size_t first = entry.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return entry.substr(first, entry.find_last_not_of(" \t") - first + 1);
}

// The GPU an entry of CUDA_VISIBLE_DEVICES names among `all`: an index, or a
// UUID ("GPU-" included) or a unique prefix of one; NULL when none.
const Gpu *named_gpu(const std::vector<const Gpu *> &all, const std::string &entry) {
  std::size_t index = 0;
  if (text::parse_number(entry, &index)) return index < all.size() ? all[index] : nullptr;
  if (entry.empty()) return nullptr;
  const std::string want = lower(entry);
  const Gpu *match = nullptr;
  for (const Gpu *gpu : all)
    if (!gpu->uuid.empty() && lower(gpu->uuid).compare(0, want.size(), want) == 0) {
      if (match) return nullptr;  // ambiguous
      match = gpu;
    }
  return match;
}

}  // namespace

std::vector<const Gpu *> visible_gpus(const Machine &machine, const char *cuda_visible) {
  std::vector<const Gpu *> all;
  for (const Gpu &gpu : machine.gpus) all.push_back(&gpu);  // already by PCI bus id
  if (!cuda_visible) return all;

  std::vector<const Gpu *> out;
  for (const std::string &field : text::split(cuda_visible, ',')) {
    const std::string entry = trimmed(field);
    const Gpu *match = named_gpu(all, entry);
    // CUDA ends the list at the first entry it cannot use.
    if (!match || std::find(out.begin(), out.end(), match) != out.end()) {
      PG_LOG(debug,
          "CUDA_VISIBLE_DEVICES='%s': entry '%s' matches no GPU in the topology (%zu GPUs); "
          "the list ends there, as in CUDA",
          cuda_visible, entry.c_str(), all.size());
      break;
    }
    out.push_back(match);
  }
  return out;
}

pg_status choose_cuda_index(int local_rank, int local_size, int visible_count, int *cuda_index) {
  if (local_rank < 0 || local_size < 1 || local_rank >= local_size)
    return fail(PG_ERR_INTERNAL, "local rank %d of %d is not a valid local rank", local_rank,
                local_size);
  if (visible_count < local_size)
    return fail(PG_ERR_UNAVAILABLE,
                "device 'cuda': local rank %d of %d ranks on this node has no GPU of its own: "
                "%d GPU%s visible (NCCL needs one GPU per rank); start at most %d rank%s per "
                "node, or use device 'cpu'",
                local_rank, local_size, visible_count, visible_count == 1 ? "" : "s",
                visible_count, visible_count == 1 ? "" : "s");
  *cuda_index = local_rank;
  return PG_OK;
}

pg_status choose_gpu(const Machine &machine, int local_rank, int local_size, int *cuda_index,
                     const Gpu **gpu) {
  const char *env = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<const Gpu *> visible = visible_gpus(machine, env);
  pg_status status = choose_cuda_index(local_rank, local_size, static_cast<int>(visible.size()),
                                       cuda_index);
  if (status == PG_ERR_UNAVAILABLE) {
    std::string detail = last_error() + " [" + machine.source + ": " +
                         std::to_string(machine.gpus.size()) + " GPUs";
    if (env) detail += ", CUDA_VISIBLE_DEVICES='" + std::string(env) + "'";
    detail += "]";
    return fail_message(status, detail);
  }
  PG_CHECK(status);
  if (gpu) *gpu = visible[*cuda_index];
  return PG_OK;
}

const Gpu *find_gpu_by_bus_id(const Machine &machine, const std::string &bus_id) {
  if (!machine.topology) return nullptr;
  hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(machine.topology->topo, bus_id.c_str());
  if (!pci) return nullptr;
  const std::string want = pci_bus_id(pci);
  for (const Gpu &gpu : machine.gpus)
    if (gpu.pci_bus_id == want) return &gpu;
  return nullptr;
}

}  // namespace pg::topology
