// fairring's own PGS_* variables (docs/env.md), one row each in settings.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/fairring/algorithms.h"
#include "core/registry.h"

namespace pg::fairring {

// How blocks pass between the node's cores (handoff.h): as timed when the
// strategy is made, or as given. Where a rank reduces its block
// (PGS_FAIRRING_REDUCE), and how its peers copy it (PGS_FAIRRING_PULL).
enum class Reduce { measure, buffer, slot };
enum class Pull { measure, pages, memcpy };

class Settings final : public BackendSettings {
 public:
  static constexpr std::size_t kMaxSliceBytes = std::size_t(1) << 30;
  static constexpr int kMaxInflight = 64;

  // The defaults that depend on the device, all here (the rows' texts in
  // settings.cpp and docs/env.md say them too): slices on CPU by the L2 cache
  // (cpu_slice_bytes), 256 KiB where it is not known, and 4 MiB on CUDA (each
  // slice pays for NCCL launches and two copy submissions); the flat path
  // below 32 KiB on CPU (docs/performance.md) and below 8 MiB on CUDA, where
  // NCCL's own allreduce is faster.
  static constexpr std::size_t kCpuSliceBytes = std::size_t(256) << 10, kCudaSliceBytes = std::size_t(4) << 20;
  static constexpr std::size_t kCpuMinBytes = std::size_t(32) << 10, kCudaMinBytes = std::size_t(8) << 20;
  // A rank's shared slots on CPU, an input and a result for each slice in
  // flight, stay in its core's share of the L2 cache: the largest power of
  // two with 2 x inflight slices in `l2_per_core` bytes, from 64 KiB (smaller
  // slices pay more counter rounds: 64 KiB ran 512 KiB up to a tenth slower)
  // to 1 MiB; kCpuSliceBytes where the L2 is not known (0). On the Intel Xeon
  // of docs/performance.md (2 MiB a core, 4 in flight: 256 KiB), larger slices
  // ran 2-32 MiB up to a fifth slower.
  static std::size_t cpu_slice_bytes(std::size_t l2_per_core, int inflight);
  // The fast path splits an allreduce from this size, on `nodes` nodes of
  // `local_size` ranks. Split, each of L ranks reads 2(L-1)/L of the data
  // from its peers instead of (L-1) times it, for one more round of flags: on
  // one node of two ranks that reads as much as the whole (half the input,
  // then half the result) and paid only from 8 KiB on the Intel Xeon of
  // docs/performance.md (4 KiB unsplit took 0.88-0.92 of the split's time)
  // but from 4 KiB on its AMD EPYC: 8 KiB is where nothing is timed, and the
  // handoff's probe (handoff.h) times 4 KiB there;
  // on larger nodes, and across nodes, where a split also sends every rank's
  // block over its own rail instead of the node's whole input over the
  // leaders', from 4 KiB.
  static std::size_t split_bytes_for(int local_size, int nodes);
  // Why, for pg_strategy_describe.
  static const char *split_reason(int local_size, int nodes);

  // Unset sizes: for_device() puts in the device's default.
  std::optional<std::size_t> slice_bytes;  // PGS_FAIRRING_SLICE_BYTES
  int inflight = 4;                        // PGS_FAIRRING_INFLIGHT
  std::optional<std::size_t> min_bytes;    // PGS_FAIRRING_MIN_BYTES
  std::optional<Algorithm> algorithm;      // PGS_FAIRRING_ALGO; unset (auto): the rule chooses
  // PGS_FAIRRING_FAST_BYTES; 0: no fast path. Unset, it is timed where the
  // fast and the hierarchical paths both run and every rank has a CPU (the
  // strategy's probe, fairring_backend.cpp), else kFastBytes. A split
  // allreduce on the fast path moves the bytes the hierarchical path moves,
  // with one round of flags instead of two a slice; which is faster above
  // kFastBytes depends on the CPU: 512 KiB took 1.18 / 1.08 times the
  // hierarchical path's time on the Intel Xeon of docs/performance.md, and
  // 0.93-0.95 of it (1 MiB 0.92-0.96, 2 MiB level) on its AMD EPYC. The
  // probe times 512 KiB both ways and keeps the fast path up to
  // kTimedFastBytes where it wins, else up to kFastBytes.
  std::optional<std::size_t> fast_bytes;
  static constexpr std::size_t kFastBytes = std::size_t(256) << 10, kTimedFastBytes = std::size_t(1) << 20;
  static constexpr std::size_t kMaxFastBytes = std::size_t(16) << 20;
  bool fast_path_on() const { return !fast_bytes || *fast_bytes > 0; }
  std::optional<std::size_t> split_bytes;  // PGS_FAIRRING_SPLIT_BYTES
  static constexpr std::size_t kSplitBytes = std::size_t(4) << 10, kPairSplitBytes = std::size_t(8) << 10;
  int tree_ranks = kTreeRanks;             // PGS_FAIRRING_TREE_RANKS; 0: never
  static constexpr int kTreeRanks = 32;
  Reduce reduce = Reduce::measure;         // PGS_FAIRRING_REDUCE
  Pull pull = Pull::measure;               // PGS_FAIRRING_PULL
  std::vector<int> fail_across;            // PGS_FAIRRING_FAULT=across:<ranks> (testing)
  std::vector<std::string> given;          // as set, by row

  // These settings with each unset size replaced by the device's default
  // (above); `l2_per_core`: the CPU's L2 cache a core has, 0 unknown;
  // `local_size`, `nodes`: the ranks on this rank's node, and the nodes.
  Settings for_device(bool cuda, std::size_t l2_per_core = 0, int local_size = 1, int nodes = 1) const;

  params::Listings list() const override;
  static pg_status read(std::shared_ptr<const BackendSettings> *out);
};

}  // namespace pg::fairring
