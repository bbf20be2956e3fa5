// fairring's own PGS_FAIRRING_* variables (docs/env.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/registry.h"

namespace pg::fairring {

class Settings final : public BackendSettings {
 public:
  static constexpr std::size_t kMaxSliceBytes = std::size_t(1) << 30;
  static constexpr int kMaxInflight = 64;

  std::size_t slice_bytes = std::size_t(256) << 10;  // PGS_FAIRRING_SLICE_BYTES
  int inflight = 4;                                  // PGS_FAIRRING_INFLIGHT
  std::size_t min_bytes = std::size_t(32) << 10;     // PGS_FAIRRING_MIN_BYTES

  std::string schedule() const override;
  static pg_status read(std::shared_ptr<const BackendSettings> *out);
};

}  // namespace pg::fairring
