// pg-bench: nccl-tests-style sweeps over pgstrategy backends and the libraries
// underneath them (see usage_text() in options.cpp, and docs/performance.md).
//
// Exit status: 0 all good; 1 a check found wrong values; 2 bad arguments or a
// backend that must be fixed (an unknown name); every rank exits through
// MPI_Finalize. A call that fails after having worked once may leave peers
// inside it, so that one case aborts the job.
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "backend.h"
#include "load.h"
#include "options.h"
#include "report.h"
#include "sweep.h"

namespace pgbench {
namespace {

int thread_level(const std::string &name) {
  if (name == "single") return MPI_THREAD_SINGLE;
  if (name == "funneled") return MPI_THREAD_FUNNELED;
  if (name == "serialized") return MPI_THREAD_SERIALIZED;
  return MPI_THREAD_MULTIPLE;
}

int run(const Options &opts, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);

  // The CSV file first, so a bad path stops every rank before any work.
  FILE *csv = nullptr;
  int csv_ok = 1;
  std::string csv_error;
  if (rank == 0 && !opts.csv_path.empty()) {
    csv = std::fopen(opts.csv_path.c_str(), "w");
    if (!csv) {
      csv_ok = 0;
      csv_error = std::strerror(errno);
    }
  }
  MPI_Bcast(&csv_ok, 1, MPI_INT, 0, comm);
  if (!csv_ok) {
    if (rank == 0)
      std::fprintf(stderr, "pg-bench: error: cannot write the CSV file '%s': %s\n",
                   opts.csv_path.c_str(), csv_error.c_str());
    return 2;
  }

  size_t max_bytes = 0;
  plan_layouts(opts, nranks, &max_bytes);
  const SetupInfo info{comm, rank, nranks, max_bytes, opts.mem_alloc, opts.device == "cuda"};
  std::vector<std::string> names = opts.backends.empty() ? default_backends(info.cuda) : opts.backends;
  if (opts.bound && std::find(names.begin(), names.end(), "bound") == names.end()) names.push_back("bound");
  std::vector<std::string> skipped;
  std::vector<std::unique_ptr<Backend>> backends;
  try {
    backends = open_backends(names, info, &skipped);
  } catch (const Error &e) {
    if (rank == 0) std::fprintf(stderr, "pg-bench: error: %s\n", e.what());
    if (csv) std::fclose(csv);
    return 2;
  }

  const Report report(opts, stdout);
  std::vector<std::string> descriptions;
  for (const auto &b : backends) descriptions.push_back(b->name() + ": " + b->description());
  if (rank == 0) report.header(nranks, descriptions, skipped);
  if (opts.pause_ms > 0) {  // the header is out (Report flushes it)
    std::this_thread::sleep_for(std::chrono::milliseconds(opts.pause_ms));
    MPI_Barrier(comm);
  }

  int status = 0;
  if (backends.empty()) {
    if (rank == 0) std::printf("# no backend could run: nothing measured\n");
  } else {
    Results res;
    try {
      const Load load(rank == 0 ? opts.load : 0);
      if (rank == 0 && load.started() < opts.load)
        std::fprintf(stderr, "pg-bench: warning: --load %d: only %d processes could be started (fork failed)\n",
                     opts.load, load.started());
      res = run_sweep(opts, comm, backends,
                      [&](const Results &r, size_t c, size_t s) {
                        if (rank == 0) report.rows_done(r, c, s);
                      });
    } catch (const Fatal &e) {
      std::fprintf(stderr, "pg-bench: %s; aborting the job\n", e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    } catch (const Error &e) {
      // Raised identically on every rank (buffer allocation).
      if (rank == 0) std::fprintf(stderr, "pg-bench: error: %s\n", e.what());
      status = 2;
    }
    if (status == 0) {
      if (rank == 0) report.summary(res);
      if (total_wrong(res) > 0) status = 1;
      if (csv && !write_csv(res, opts, csv)) {
        std::fprintf(stderr, "pg-bench: error: writing '%s': %s\n", opts.csv_path.c_str(),
                     std::strerror(errno));
        status = 2;
      }
    }
  }
  if (csv && std::fclose(csv) != 0 && status == 0) status = 2;
  for (auto &b : backends) b->teardown();
  // Rank 0 alone knows about CSV write errors.
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  return status;
}

}  // namespace
}  // namespace pgbench

int main(int argc, char **argv) {
  pgbench::Options opts;
  const std::string error = pgbench::parse_options(argc, argv, &opts);
  int provided = 0;
  // As the library would: also without an MPI launcher (plain copies with RANK/WORLD_SIZE, torchrun).
  if (pg_mpi_init(pgbench::thread_level(opts.thread_level), &provided) != PG_OK) {
    std::fprintf(stderr, "pg-bench: error: %s\n", pg_last_error());
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) MPI_Finalize();
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  if (!error.empty()) {
    if (rank == 0) std::fprintf(stderr, "pg-bench: error: %s\n", error.c_str());
    status = 2;
  } else if (opts.help) {
    if (rank == 0) std::fputs(pgbench::usage_text().c_str(), stdout);
  } else {
    if (provided < pgbench::thread_level(opts.thread_level) && rank == 0)
      std::fprintf(stderr, "pg-bench: warning: asked MPI for thread level %s, got a lower one\n",
                   opts.thread_level.c_str());
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    status = pgbench::run(opts, comm);
    MPI_Comm_free(&comm);
  }
  MPI_Finalize();
  return status;
}
