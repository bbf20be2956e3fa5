// Loading a backend plugin (libpg_backend_<name>.so) by name.
#pragma once

#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pg {

// Searches each directory of `search_path` (PGS_PLUGIN_PATH, already validated:
// absolute), then the library's own plugin folder, for libpg_backend_<name>.so;
// loads the first found (RTLD_NOW | RTLD_LOCAL), calls pg_backend_plugin_init and
// requires that it registered `name`. `name` must already be a valid backend name.
// PG_ERR_UNKNOWN_BACKEND when no file was found (the message lists where it
// looked and the registered names); PG_ERR_PLUGIN for every other failure.
// Thread-safe; a plugin is loaded at most once per process.
pg_status load_plugin(const std::string &name, const std::vector<std::string> &search_path);

// The folder shipped plugins are installed in: <dir of libpgstrategy.so>/pgstrategy.
std::string own_plugin_dir();

}  // namespace pg
