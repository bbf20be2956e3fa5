// Which backend a strategy gets: the argument, then PGS_BACKEND, then the
// device default (include/pg_strategy.h, pg_strategy_create; docs/env.md for
// PGS_BACKEND).
#pragma once

#include <string>

#include "core/settings.h"

namespace pg {

// A parsed device string: "cpu", "cuda" (index -1: the local rank's GPU) or "cuda:N".
struct Device {
  bool cuda = false;
  int index = -1;
  std::string kind() const { return cuda ? "cuda" : "cpu"; }
};

// PG_ERR_INVALID_ARGUMENT quoting the string when it is not a device.
pg_status parse_device(const char *text, Device *out);

// The built-in that says it is the device's default (BackendEntry::default_for):
// "nccl" for cuda, "mpi" for cpu.
const char *default_backend(const Device &device);

struct Selection {
  std::string backend;
  std::string rule;  // "argument", "PGS_BACKEND", "device default"
};

// Applies the precedence; does not check that the backend exists.
Selection select_backend(const Device &device, const char *argument,
                         const Settings &settings);

}  // namespace pg
