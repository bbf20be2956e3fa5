#include "core/selection.h"

#include <cctype>
#include <climits>
#include <cstring>

#include "core/registry.h"
#include "util/status.h"

namespace pg {

pg_status parse_device(const char *text, Device *out) {
  static const char *const expected = "expected 'cpu', 'cuda' or 'cuda:N'";
  if (!text) return fail(PG_ERR_INVALID_ARGUMENT, "device is NULL; %s", expected);
  *out = Device{};
  if (std::strcmp(text, "cpu") == 0) return PG_OK;
  if (std::strncmp(text, "cuda", 4) != 0)
    return fail(PG_ERR_INVALID_ARGUMENT, "unknown device '%s'; %s", text, expected);
  out->cuda = true;
  const char *rest = text + 4;
  if (*rest == '\0') return PG_OK;
  if (*rest != ':' || !std::isdigit(static_cast<unsigned char>(rest[1])))
    return fail(PG_ERR_INVALID_ARGUMENT, "unknown device '%s'; %s", text, expected);
  long long index = 0;
  for (const char *p = rest + 1; *p; ++p) {
    if (!std::isdigit(static_cast<unsigned char>(*p)) || index > INT_MAX / 10)
      return fail(PG_ERR_INVALID_ARGUMENT, "unknown device '%s'; %s", text, expected);
    index = index * 10 + (*p - '0');
  }
  if (index > INT_MAX) return fail(PG_ERR_INVALID_ARGUMENT, "device index in '%s' is too large", text);
  out->index = static_cast<int>(index);
  return PG_OK;
}

const char *default_backend(const Device &device) {
  const char *name = registry::default_for(device.cuda ? PG_DEVICE_CUDA : PG_DEVICE_CPU);
  return name ? name : "";
}

Selection select_backend(const Device &device, const char *argument,
                         const Settings &settings) {
  if (argument && *argument) return {argument, "argument"};
  const std::string &from_env = device.cuda ? settings.backend.cuda : settings.backend.cpu;
  if (!from_env.empty()) return {from_env, "PGS_BACKEND"};
  return {default_backend(device), "device default"};
}

}  // namespace pg
