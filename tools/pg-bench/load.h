// --load N: CPU-bound processes beside the ranks while pg-bench measures, as a
// data-loader worker, an OpenMP thread or a daemon takes a core on a real node.
#pragma once

#include <sys/types.h>

#include <vector>

namespace pgbench {

class Load {
 public:
  // Starts `processes` busy loops (forked: they run no MPI and touch nothing
  // of the parent's); they end with the Load, or with the parent if it dies.
  explicit Load(int processes);
  ~Load();
  Load(const Load &) = delete;
  Load &operator=(const Load &) = delete;

  int started() const { return static_cast<int>(children_.size()); }

 private:
  std::vector<pid_t> children_;
};

}  // namespace pgbench
