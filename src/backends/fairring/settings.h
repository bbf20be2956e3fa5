// fairring's own PGS_* variables (docs/env.md).
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

  // 0 when the variable is unset: for_device() puts in the device's default.
  std::size_t slice_bytes = 0;  // PGS_FAIRRING_SLICE_BYTES
  int inflight = 4;             // PGS_FAIRRING_INFLIGHT
  std::size_t min_bytes = 0;    // PGS_FAIRRING_MIN_BYTES
  bool min_bytes_set = false;   // PGS_FAIRRING_MIN_BYTES=0 is a value of its own

  // These settings with each unset size replaced by the device's default:
  // slices of 256 KiB on CPU (a slot stays in cache) and 4 MiB on CUDA (each
  // slice pays for NCCL launches and two copy submissions); the flat path
  // below 32 KiB on CPU (docs/performance.md) and below 8 MiB on CUDA, where
  // NCCL's own allreduce wins (the original fairring lost to NCCL below about
  // 6 MiB).
  Settings for_device(bool cuda) const;

  std::string schedule() const override;
  static pg_status read(std::shared_ptr<const BackendSettings> *out);
};

}  // namespace pg::fairring
