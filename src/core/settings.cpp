#include "core/settings.h"

#include "topology/layout.h"
#include "util/status.h"

namespace pg {
namespace {

using namespace params;

const std::vector<const char *> kBindModes = {"none", "numa"};
const std::vector<const char *> kWaitModes = {"auto", "spin", "yield"};

// The library's own variables (built-in backends have their own tables).
const Param<Settings> kRows[] = {
    {"PGS_BACKEND", "unset",
     "backend when the create call names none; a device missing from the map gets its default",
     [](const char *n, const char *v, Settings *s) { return parse_backend(n, v, &s->backend); }, nullptr},
    {"PGS_PLUGIN_PATH", "unset",
     "searched for libpg_backend_<name>.so before the library's own plugin folder",
     [](const char *n, const char *v, Settings *s) { return parse_plugin_path(n, v, &s->plugin_path); }, nullptr},
    {"PGS_RANKS_PER_NODE", "unset",
     "testing/simulation: consecutive ranks form virtual nodes of this size (a list: of these sizes in turn, the "
     "last repeating)",
     [](const char *n, const char *v, Settings *s) { return parse_positive_ints(n, v, &s->node_sizes); },
     [](const Settings &s) { return topology::node_sizes_text(s.node_sizes); }},
    {"PGS_TOPOLOGY_XML", "unset", "testing/simulation: the node topology from this hwloc XML file",
     [](const char *n, const char *v, Settings *s) { return parse_path(n, v, &s->topology_xml); }, nullptr},
    {"PGS_LOG", "error", "log level; lines go to stderr prefixed with the world rank",
     [](const char *n, const char *v, Settings *s) { return parse_log_level(n, v, &s->log); }, nullptr},
    {"PGS_DEBUG", "unset", "detail: ranks compare each collective's arguments before running it",
     [](const char *n, const char *v, Settings *s) {
       int detail = 0;
       const pg_status st = parse_choice(n, v, {"detail"}, &detail);
       s->debug_detail = st == PG_OK;
       return st;
     },
     [](const Settings &s) { return std::string(s.debug_detail ? "detail" : ""); }},
    // With a watchdog, blocking calls below MPI_THREAD_MULTIPLE are issued as
    // nonblocking MPI calls (polled), which cannot match blocking ones: ranks
    // agree on whether it is on, not on its value.
    {"PGS_TIMEOUT", "0 (off)", "watchdog: a collective unfinished after this many seconds aborts the job",
     [](const char *n, const char *v, Settings *s) { return parse_seconds(n, v, &s->timeout_s); },
     [](const Settings &s) { return std::string(s.timeout_s > 0 ? "on" : "off"); }},
    {"PGS_BIND", "none", "bind each rank near its GPU (CPU: spread over NUMA nodes)",
     [](const char *n, const char *v, Settings *s) { return parse_choice(n, v, kBindModes, &s->bind); },
     nullptr},
    {"PGS_WAIT", "auto",
     "how a waiting rank uses its core: spin, yield to peers, or auto (yield when the host has more ranks than CPUs, "
     "else spin 20 us first)",
     [](const char *n, const char *v, Settings *s) { return parse_choice(n, v, kWaitModes, &s->wait); },
     nullptr},
    {"PGS_WAIT_BUDGET", "10000", "microseconds a wait spins (or yields) before the rank naps, leaving its core idle",
     [](const char *n, const char *v, Settings *s) { return parse_int(n, v, 0, 100000000, &s->wait_budget_us); },
     nullptr},
    // The recorder measures each rank's clock against rank 0's at creation
    // (collective): ranks agree on whether it is on.
    {"PGS_TRACE", "unset (off)", "the flight recorder: each rank writes its dumps into this folder",
     [](const char *n, const char *v, Settings *s) { return parse_writable_dir(n, v, &s->trace_dir); },
     [](const Settings &s) { return std::string(s.trace_dir.empty() ? "off" : "on"); }},
    {"PGS_TRACE_ENTRIES", "4096", "operations each strategy's flight recorder keeps",
     [](const char *n, const char *v, Settings *s) {
       int entries = 0;
       PG_CHECK(parse_int(n, v, 16, 1 << 20, &entries));
       s->trace_entries = static_cast<std::size_t>(entries);
       return PG_OK;
     },
     nullptr},
};

}  // namespace

Listings Settings::list() const { return list_rows(kRows, *this); }

pg_status read_settings(Settings *out) { return read_rows(kRows, out); }

}  // namespace pg
