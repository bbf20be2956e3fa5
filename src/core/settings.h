// The library's own PGS_* variables (docs/env.md), one row each in
// settings.cpp; built-in backends declare theirs in their own folders.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "topology/machine.h"
#include "util/params.h"
#include "util/poll.h"

namespace pg {

struct Settings {
  params::BackendChoice backend;
  std::vector<std::string> plugin_path;          // PGS_PLUGIN_PATH
  std::vector<int> node_sizes;                   // PGS_RANKS_PER_NODE; empty = unset
  std::string topology_xml;                      // PGS_TOPOLOGY_XML
  params::LogLevel log = params::LogLevel::error;  // PGS_LOG
  bool debug_detail = false;                     // PGS_DEBUG=detail
  double timeout_s = 0;                          // PGS_TIMEOUT; 0 = off
  topology::Bind bind = topology::Bind::none;    // PGS_BIND
  enum class Wait { auto_, spin, yield } wait = Wait::auto_;  // PGS_WAIT
  int wait_budget_us = static_cast<int>(WaitRule{}.budget_us);  // PGS_WAIT_BUDGET
  std::string trace_dir;                         // PGS_TRACE; empty: the flight recorder is off
  std::size_t trace_entries = 4096;              // PGS_TRACE_ENTRIES
  std::vector<std::string> given;                // as set, by row

  params::Listings list() const;
  // What the topology code needs of them.
  topology::RankOptions rank_options() const { return {topology_xml, bind}; }
};

// Reads the library's PGS_* variables. Fails on the first bad value.
pg_status read_settings(Settings *out);

}  // namespace pg
