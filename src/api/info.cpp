// pg_strategy_info: what a rank's strategy knows, one key at a time (the
// answers pg-topo prints). Each key is a row: its name and how it is answered.
#include "api/info.h"

#include <cstdlib>
#include <memory>

#include "core/selection.h"
#include "core/strategy.h"
#include "launch/bootstrap.h"
#include "launch/launcher.h"
#include "launch/settings.h"
#include "topology/machine.h"
#include "util/status.h"
#include "util/text.h"

namespace pg {
namespace {

namespace topo = topology;

// The node as the library loaded it, with the GPU and binding the rank's
// local rank would get: what the topology keys describe.
struct Place {
  std::shared_ptr<const topo::Machine> machine;  // null when it could not be loaded
  std::string error;                              // why not
  const topo::Gpu *gpu = nullptr;
  std::string gpu_text = "none";
  topo::Binding binding;
};

Place place_of(const pg_strategy *s) {
  Place p;
  if (topo::load_machine(s->settings.topology_xml, &p.machine) != PG_OK) {
    p.machine.reset();
    p.error = last_error();
    return p;
  }
  const topo::Machine &m = *p.machine;
  if (!m.gpus.empty()) {
    int index = -1;
    if (topo::choose_gpu(m, s->layout.local_rank, s->layout.local_size, &index, &p.gpu) == PG_OK && p.gpu)
      p.gpu_text = "cuda:" + std::to_string(index) + " " + p.gpu->pci_bus_id +
                   (p.gpu->numa >= 0 ? " NUMA " + std::to_string(p.gpu->numa) : std::string());
    else
      p.gpu_text = "none (" + last_error() + ")";
  }
  p.binding = topo::choose_binding(m, s->settings.bind, s->layout.local_rank, p.gpu);
  return p;
}

std::string unavailable(const Place &p) { return "unavailable (" + p.error + ")"; }

std::string binding(const pg_strategy *s) {
  const Place p = place_of(s);
  if (!p.machine) return unavailable(p);
  std::string text = topo::describe_binding(p.binding);
  if (p.machine->from_xml) {
    if (p.binding.numa >= 0) text += " [from XML, not applied]";
  } else {
    const std::string now = topo::current_cpubind();
    if (!now.empty()) text += " [cpus now " + now + "]";
  }
  return text;
}

std::string nic(const pg_strategy *s) {
  const Place p = place_of(s);
  if (!p.machine) return unavailable(p);
  const topo::Nic *n = topo::nic_for_rank(*p.machine, p.gpu, p.binding);
  if (!n) return "none";
  std::string text = n->name;
  if (!n->netdev.empty()) text += "/" + n->netdev;
  if (p.gpu) text += std::string(" (") + topo::nic_rule_name(p.gpu->nic_rule) + ")";
  return text;
}

std::string backend_for(const pg_strategy *s, const char *device) {
  Device d;
  parse_device(device, &d);
  const Selection sel = select_backend(d, nullptr, s->settings);
  return sel.backend + " (" + sel.rule + ")";
}

std::string host() {
  char name[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return name;
}

struct Key {
  const char *name;
  std::string (*answer)(const pg_strategy *s);
};

const Key kKeys[] = {
    {"host", [](const pg_strategy *) { return host(); }},
    {"machine",
     [](const pg_strategy *s) {
       const Place p = place_of(s);
       return p.machine ? topo::describe_machine(*p.machine) : unavailable(p);
     }},
    {"binding", binding},
    {"gpu",
     [](const pg_strategy *s) {
       const Place p = place_of(s);
       return p.machine ? p.gpu_text : unavailable(p);
     }},
    {"nic", nic},
    {"launcher",
     [](const pg_strategy *) {
       const std::string bootstrap = launch::describe();
       return launch::describe_launcher(launch::detect_launcher()) + (bootstrap.empty() ? "" : "; " + bootstrap);
     }},
    {"launcher_warning",
     [](const pg_strategy *) {
       int rank = 0, size = 1;
       MPI_Comm_rank(MPI_COMM_WORLD, &rank);
       MPI_Comm_size(MPI_COMM_WORLD, &size);
       return launch::launcher_warning(launch::detect_launcher(), rank, size, launch::running_mpi_library());
     }},
    {"nodes",
     [](const pg_strategy *s) {
       const std::vector<int> &k = s->settings.node_sizes;
       return !k.empty() ? "virtual nodes of PGS_RANKS_PER_NODE=" + topology::node_sizes_text(k) + " consecutive ranks"
                         : std::string("shared-memory domains");
     }},
    {"backend:cpu", [](const pg_strategy *s) { return backend_for(s, "cpu"); }},
    {"backend:cuda", [](const pg_strategy *s) { return backend_for(s, "cuda"); }},
    {"settings", [](const pg_strategy *s) { return params::describe(settings_listings(s)); }},
};

}  // namespace

params::Listings settings_listings(const pg_strategy *s) {
  params::Listings all = s->settings.list();
  // The bootstrap's, as the environment gives them now (they act before any strategy).
  launch::Settings bootstrap;
  if (launch::read_settings(&bootstrap) == PG_OK) {
    const params::Listings own = bootstrap.list();
    all.insert(all.end(), own.begin(), own.end());
  }
  for (const auto &kv : s->backend_settings) {
    const params::Listings own = kv.second->list();
    all.insert(all.end(), own.begin(), own.end());
  }
  return all;
}

pg_status strategy_info(const pg_strategy *s, const char *key, std::string *out) {
  std::vector<std::string> names;
  for (const Key &k : kKeys) {
    if (key && std::string(key) == k.name) {
      *out = k.answer(s);
      return PG_OK;
    }
    names.emplace_back(k.name);
  }
  return fail(PG_ERR_INVALID_ARGUMENT, "pg_strategy_info: unknown key '%s'; the keys are: %s",
              key ? text::printable(key).c_str() : "(null)", text::join(names, ", ").c_str());
}

}  // namespace pg
