// Backend selection: names to backends, the default list, and setup that all
// ranks agree on.
#include <cstring>

#include "backend.h"

namespace pgbench {
namespace {

// The worst `code` over ranks and the message of the lowest rank that has it.
struct Verdict {
  int code = 0;
  int rank = -1;
  std::string message;
};

Verdict agree(MPI_Comm comm, int code, const std::string &message) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Verdict v;
  MPI_Allreduce(&code, &v.code, 1, MPI_INT, MPI_MAX, comm);
  if (v.code == 0) return v;
  const int candidate = code == v.code ? rank : size;
  MPI_Allreduce(&candidate, &v.rank, 1, MPI_INT, MPI_MIN, comm);
  int len = rank == v.rank ? static_cast<int>(message.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, v.rank, comm);
  std::vector<char> text(static_cast<size_t>(len) + 1, '\0');
  if (rank == v.rank) std::memcpy(text.data(), message.data(), static_cast<size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, v.rank, comm);
  v.message.assign(text.data(), static_cast<size_t>(len));
  return v;
}

bool is_baseline(const std::string &name) {
  return name == "mpi-raw" || name == "gloo-raw" || name == "nccl-raw";
}

std::unique_ptr<Backend> make_backend(const std::string &name) {
  if (name == "mpi-raw") return make_mpi_raw();
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
  const Verdict v = agree(comm, local.empty() ? 0 : 1, local);
  if (v.code == 0) return "";
  return "rank " + std::to_string(v.rank) + ": " + v.message;
}

std::vector<std::string> default_backends() {
  const char *cpu_default = pg_default_backend("cpu");
  std::vector<std::string> names = {cpu_default ? cpu_default : "mpi", "mpi-raw"};
  if (gloo_raw_built()) names.push_back("gloo-raw");
  return names;
}

std::vector<std::unique_ptr<Backend>> open_backends(const std::vector<std::string> &names,
                                                    const SetupInfo &info,
                                                    std::vector<std::string> *skipped) {
  enum { kOk = 0, kUnavailable = 1, kError = 2 };
  std::vector<std::unique_ptr<Backend>> open;
  for (const auto &name : names) {
    std::unique_ptr<Backend> b = make_backend(name);
    // Local availability first, so no rank enters a collective setup that a
    // peer will not join.
    std::string why = b->probe();
    Verdict v = agree(info.world, why.empty() ? kOk : kUnavailable, why);
    if (v.code != kOk) {
      skipped->push_back(name + ": " + v.message);
      continue;
    }
    int code = kOk;
    try {
      b->setup(info);
    } catch (const Unavailable &e) {
      code = kUnavailable;
      why = e.what();
    } catch (const std::exception &e) {
      code = kError;
      why = e.what();
    }
    v = agree(info.world, code, why);
    if (v.code == kError)
      throw Error("backend '" + name + "' (rank " + std::to_string(v.rank) + "): " + v.message);
    if (v.code == kUnavailable) {
      skipped->push_back(name + ": " + v.message +
                         (is_baseline(name) ? "" : " (pgstrategy backend, device cpu)"));
      continue;
    }
    open.push_back(std::move(b));
  }
  return open;
}

}  // namespace pgbench
