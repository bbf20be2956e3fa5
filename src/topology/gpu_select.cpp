// Which GPU `cuda` means for a local rank: CUDA's visible devices in CUDA's
// order, from hwloc's view plus CUDA_VISIBLE_DEVICES.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/status.h"
#include "core/log.h"
#include "topology/machine.h"

namespace pg::topology {

namespace {

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool all_digits(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "0000:07:00.0"; accepts "07:00.0" (domain 0) and any case; "" when malformed.
std::string normalize_bus_id(const std::string &text) {
  unsigned domain = 0, bus = 0, dev = 0, func = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &func, &tail) == 4) {
  } else if (std::sscanf(text.c_str(), "%x:%x.%x%c", &bus, &dev, &func, &tail) == 3) {
    domain = 0;
  } else {
    return "";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", domain, bus, dev, func);
  return buf;
}

}  // namespace

std::vector<const Gpu *> visible_gpus(const Machine &machine, const char *cuda_visible) {
  std::vector<const Gpu *> all;
  for (const Gpu &gpu : machine.gpus) all.push_back(&gpu);  // already by PCI bus id
  if (!cuda_visible) return all;

  std::vector<const Gpu *> out;
  std::string list = cuda_visible;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    std::size_t comma = list.find(',', pos);
    std::string token = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
    token.erase(0, token.find_first_not_of(" \t"));
    token.erase(token.find_last_not_of(" \t") + 1);

    const Gpu *match = nullptr;
    if (all_digits(token)) {
      unsigned long index = std::strtoul(token.c_str(), nullptr, 10);
      if (token.size() < 10 && index < all.size()) match = all[index];
    } else if (!token.empty()) {
      // A UUID or a unique prefix of one, "GPU-" included.
      std::string want = lower(token);
      int found = 0;
      for (const Gpu *gpu : all)
        if (!gpu->uuid.empty() && lower(gpu->uuid).compare(0, want.size(), want) == 0) {
          match = gpu;
          ++found;
        }
      if (found != 1) match = nullptr;
    }
    // CUDA ends the list at the first entry it cannot use.
    if (!match || std::find(out.begin(), out.end(), match) != out.end()) {
      PG_LOG(debug,
          "CUDA_VISIBLE_DEVICES='%s': entry '%s' matches no GPU in the topology (%zu GPUs); "
          "the list ends there, as in CUDA",
          cuda_visible, token.c_str(), all.size());
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
  std::string want = normalize_bus_id(lower(bus_id));
  if (want.empty()) return nullptr;
  for (const Gpu &gpu : machine.gpus)
    if (gpu.pci_bus_id == want) return &gpu;
  return nullptr;
}

}  // namespace pg::topology
