// Loading backend plugins: libpg_backend_<name>.so, searched in PGS_PLUGIN_PATH,
// then in the library's own plugin folder (<dir of libpgstrategy.so>/pgstrategy).
//
// Steps for one name, under one process-wide mutex:
//   1. re-check the name (no path can be built from a bad one);
//   2. look for the file in each absolute directory, in order; the first found wins
//      (the current directory is never searched: relative entries are skipped);
//   3. dlopen(RTLD_NOW | RTLD_LOCAL), dlsym("pg_backend_plugin_init"), call it;
//   4. require that it registered `name`.
// Each file is opened at most once per process; a failure is remembered and
// reported again on later attempts instead of re-running the plugin's init.
// Handles are never closed once init has run: registered tables point into them.
#include "core/plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/registry.h"
#include "pg_backend.h"
#include "util/names.h"
#include "util/status.h"
#include "util/text.h"

// The folder, next to the library, that shipped plugins are installed in
// (${CMAKE_INSTALL_LIBDIR}/${PGS_PLUGIN_SUBDIR}); the build may override it.
#ifndef PGS_PLUGIN_SUBDIR
#define PGS_PLUGIN_SUBDIR "pgstrategy"
#endif

namespace pg {
namespace {

constexpr const char *kPluginPrefix = "libpg_backend_";
constexpr const char *kPluginSuffix = ".so";

// The outcome of opening one file (keyed by its real path).
struct Attempt {
  pg_status status = PG_OK;
  std::string message;
};

std::mutex &loader_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, Attempt> &attempts() {
  static std::map<std::string, Attempt> map;
  return map;
}

// A name that can safely become part of a file name. The caller has checked it
// against [a-z0-9_]{1,63}; this guards against a future caller that has not.
bool safe_name(const std::string &name) {
  return valid_backend_name(name) && name.find('/') == std::string::npos &&
         name.find("..") == std::string::npos;
}

bool is_regular_file(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string real_path(const std::string &path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

std::string dl_error_text() {
  const char *text = ::dlerror();
  return text ? text : "unknown dlopen error";
}

// Opens `file`, runs its init and checks that it registered `name`. Called with
// the loader mutex held; the result is remembered by the caller.
Attempt open_plugin(const std::string &name, const std::string &file) {
  Attempt result;
  auto failed = [&](pg_status status, std::string message) {
    result.status = status;
    result.message = std::move(message);
    return result;
  };

  ::dlerror();  // clear any stale error
  void *handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return failed(PG_ERR_PLUGIN, "cannot load plugin '" + file + "' for backend '" + name +
                                     "': " + dl_error_text());

  ::dlerror();
  void *symbol = ::dlsym(handle, PG_BACKEND_PLUGIN_INIT_SYMBOL);
  if (symbol == nullptr) {
    std::string why = dl_error_text();
    ::dlclose(handle);  // nothing of it has run yet
    return failed(PG_ERR_PLUGIN, "plugin '" + file + "' for backend '" + name +
                                     "' does not export " PG_BACKEND_PLUGIN_INIT_SYMBOL
                                     " (declare it extern \"C\" with default visibility): " +
                                     why);
  }

  const std::vector<std::string> before = registry::names();
  auto init = reinterpret_cast<pg_backend_plugin_init_fn>(symbol);
  pg_status status = PG_ERR_INTERNAL;
  std::string init_error;
  const std::string error_before = last_error();
  try {
    status = init();
    // Only a message the init call itself left (a failing pg_ call) says why.
    if (status != PG_OK && last_error() != error_before) init_error = last_error();
  } catch (...) {
    // A C++ plugin let an exception escape; it does not cross the C ABI further.
    status = PG_ERR_INTERNAL;
    init_error = "an exception escaped from " PG_BACKEND_PLUGIN_INIT_SYMBOL;
  }
  // From here on the handle stays open: init may have registered tables.
  if (status != PG_OK)
    return failed(PG_ERR_PLUGIN,
                  "plugin '" + file + "' for backend '" + name + "': " +
                      PG_BACKEND_PLUGIN_INIT_SYMBOL + " returned " + status_name(status) +
                      (init_error.empty() ? std::string(" (no error message)")
                                          : ": " + init_error));

  if (registry::find(name) == nullptr) {
    const std::vector<std::string> after = registry::names();
    std::vector<std::string> added;
    std::set<std::string> old(before.begin(), before.end());
    for (const auto &n : after)
      if (old.count(n) == 0) added.push_back(n);
    return failed(PG_ERR_PLUGIN,
                  "plugin '" + file + "' was loaded for backend '" + name + "' but " +
                      (added.empty() ? std::string("registered no backend")
                                     : "registered " + text::join(added, ", ") + " instead") +
                      "; a plugin named libpg_backend_" + name + ".so must register '" +
                      name + "'");
  }
  return result;
}

}  // namespace

std::string own_plugin_dir() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void *>(&own_plugin_dir), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] == '\0')
    return std::string();
  // Follow links, so a file reached through a symlink finds the plugins
  // installed next to the real one.
  std::string file = real_path(info.dli_fname);
  if (file.empty() || file[0] != '/') return std::string();
  const std::string::size_type slash = file.rfind('/');
  const std::string dir = slash == 0 ? std::string() : file.substr(0, slash);
  return dir + "/" + PGS_PLUGIN_SUBDIR;
}

pg_status load_plugin(const std::string &name, const std::vector<std::string> &search_path) {
  if (!safe_name(name))
    return fail(PG_ERR_INVALID_ARGUMENT,
                "invalid backend name '%s' for a plugin: expected [a-z0-9_]{1,63}",
                name.c_str());

  std::lock_guard<std::mutex> lock(loader_mutex());
  // Another thread may have loaded it while this one waited.
  if (registry::find(name) != nullptr) return PG_OK;

  std::vector<std::string> dirs;
  for (const auto &dir : search_path) dirs.push_back(dir);
  const std::string own = own_plugin_dir();
  if (!own.empty()) dirs.push_back(own);

  const std::string file_name = kPluginPrefix + name + kPluginSuffix;
  std::vector<std::string> tried;
  for (std::string dir : dirs) {
    // Never the current directory: an empty or relative entry is not searched.
    if (dir.empty() || dir[0] != '/') continue;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    const std::string file = (dir == "/" ? dir : dir + "/") + file_name;
    if (!is_regular_file(file)) {
      tried.push_back(file);
      continue;
    }

    const std::string key = real_path(file);
    auto found = attempts().find(key);
    if (found == attempts().end()) {
      Attempt attempt = open_plugin(name, file);
      found = attempts().emplace(key, std::move(attempt)).first;
    } else if (found->second.status == PG_OK && registry::find(name) == nullptr) {
      // The same file was loaded before under another name (a link).
      return fail_message(PG_ERR_PLUGIN, "plugin '" + file + "' is '" + key +
                                             "', already loaded for another backend; it did not "
                                             "register '" + name + "'");
    }
    if (found->second.status != PG_OK) return fail_message(found->second.status, found->second.message);
    return PG_OK;
  }

  return fail_message(PG_ERR_UNKNOWN_BACKEND,
                      "unknown backend '" + name + "': not registered (registered: " +
                          text::join(registry::names(), ", ") + ") and no plugin found; looked for " +
                          (tried.empty() ? std::string("nothing: no absolute directory to search")
                                         : text::join(tried, ", ")) +
                          " (PGS_PLUGIN_PATH, then the library's plugin folder)");
}

}  // namespace pg
