// Backend selection: names to backends, the default list, and setup that all
// ranks agree on.
#include <climits>
#include <cstring>

#include "backend.h"

namespace pgbench {
namespace {

bool is_baseline(const std::string &name) {
  return name == "mpi-raw" || name == "memcpy" || name == "memcpy-pinned" || name == "bound" || name == "gloo-raw" ||
         name == "nccl-raw";
}

std::unique_ptr<Backend> make_backend(const std::string &name, bool cuda) {
  if (name == "mpi-raw") return make_mpi_raw();
  if (name == "memcpy") return make_memcpy(cuda);
  if (name == "memcpy-pinned") return make_memcpy_pinned(cuda);
  if (name == "bound") return make_bound();
  if (name == "gloo-raw") return make_gloo_raw();
  if (name == "nccl-raw") return make_nccl_raw();
  return make_pg_backend(name);
}

class NotBuilt : public Backend {
 public:
  NotBuilt(const std::string &name, const std::string &library) : Backend(name), library_(library) {}
  std::string description() const override { return library_ + " (not built)"; }
  std::string probe() override { return "unavailable: pg-bench was built without " + library_; }
  void setup(const SetupInfo &) override {}
  std::string run(const Call &) override { return "not built"; }
  std::string barrier() override { return "not built"; }

 private:
  std::string library_;
};

}  // namespace

std::unique_ptr<Backend> make_not_built(const std::string &name, const std::string &library) {
  return std::make_unique<NotBuilt>(name, library);
}

void Backend::copy_in(void *dst, const void *host, size_t bytes) { std::memcpy(dst, host, bytes); }
void Backend::copy_out(void *host, const void *src, size_t bytes) { std::memcpy(host, src, bytes); }

std::string agree_on_failure(MPI_Comm comm, const std::string &local) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine[2] = {local.empty() ? INT_MAX : rank, local.empty() ? 0 : 1};
  int first = INT_MAX, failed = 0;
  MPI_Allreduce(&mine[0], &first, 1, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(&mine[1], &failed, 1, MPI_INT, MPI_SUM, comm);
  if (failed == 0) return "";
  // The first failing rank's message, on every rank.
  int len = rank == first ? static_cast<int>(local.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string why(static_cast<std::size_t>(len), '\0');
  if (rank == first) why = local;
  MPI_Bcast(&why[0], len, MPI_CHAR, first, comm);
  if (failed == size) return why;
  return "rank " + std::to_string(first) + (failed > 1 ? " and " + std::to_string(failed - 1) + " more" : "") +
         ": " + why;
}

std::vector<std::string> default_backends(bool cuda) {
  if (cuda) {
    const char *cuda_default = pg_default_backend("cuda");
    return {cuda_default ? cuda_default : "nccl", "nccl-raw"};
  }
  const char *cpu_default = pg_default_backend("cpu");
  std::vector<std::string> names = {cpu_default ? cpu_default : "mpi", "mpi-raw"};
  if (gloo_raw_built()) names.push_back("gloo-raw");
  return names;
}

std::vector<std::unique_ptr<Backend>> open_backends(const std::vector<std::string> &names,
                                                    const SetupInfo &info,
                                                    std::vector<std::string> *skipped) {
  std::vector<std::unique_ptr<Backend>> open;
  for (const auto &name : names) {
    std::unique_ptr<Backend> b = make_backend(name, info.cuda);
    // Local availability first, so no rank enters a collective setup that a
    // peer will not join.
    std::string unavailable = agree_on_failure(info.world, b->probe());
    if (!unavailable.empty()) {
      skipped->push_back(name + ": " + unavailable);
      continue;
    }
    std::string error;
    try {
      b->setup(info);
    } catch (const Unavailable &e) {
      unavailable = e.what();
    } catch (const std::exception &e) {
      error = e.what();
    }
    // An error anywhere stops the run, even where another rank found the
    // backend merely unavailable.
    error = agree_on_failure(info.world, error);
    if (!error.empty()) throw Error("backend '" + name + "': " + error);
    unavailable = agree_on_failure(info.world, unavailable);
    if (!unavailable.empty()) {
      skipped->push_back(name + ": " + unavailable +
                         (is_baseline(name) ? "" : info.cuda ? " (pgstrategy backend, device cuda)"
                                                             : " (pgstrategy backend, device cpu)"));
      continue;
    }
    open.push_back(std::move(b));
  }
  return open;
}

}  // namespace pgbench
