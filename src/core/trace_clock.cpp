// The flight recorder's agreement across ranks at creation: the job's name
// in the dump files, and each rank's clock against rank 0's.
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <ctime>
#include <vector>

#include "core/trace_parts.h"
#include "core/watchdog.h"
#include "util/params.h"
#include "util/status.h"

namespace pg::trace {
namespace {

constexpr int kClockRounds = 5, kClockRoundsMax = 100;
constexpr std::int64_t kClockGoodNs = 20000, kClockBudgetNs = 100000000;
constexpr int kClockTag = 3;  // s->comm's point-to-point tags: 1 is the PGS_DEBUG check

// The launcher's name for this job, as a file name's part, or "": Slurm's
// job and step ("1234.0", as sacct writes it: the srun steps of one
// allocation share the job), else torchrun's run.
std::string launcher_job() {
  std::string id;
  if (const char *slurm = params::env("SLURM_JOB_ID")) {
    id = slurm;
    if (const char *step = params::env("SLURM_STEP_ID")) id += "." + std::string(step);
  } else if (const char *run = params::env("TORCHELASTIC_RUN_ID")) {
    id = run;
  }
  for (char &c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return id;
}

}  // namespace

pg_status agree_job(MPI_Comm comm, std::string *job) {
  // What each rank brings: the name it already dumps under (it traced a
  // strategy on another group before), else the launcher's job id; and a
  // name it would make up.
  struct Offer {
    char held[48];
    char made[48];
  } mine{};
  std::string held = *job;
  if (held.empty()) held = launcher_job();
  held.copy(mine.held, sizeof mine.held - 1);
  std::snprintf(mine.made, sizeof mine.made, "%lld-%ld", static_cast<long long>(time(nullptr)),
                static_cast<long>(getpid()));
  int size = 1;
  PG_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<Offer> all(static_cast<std::size_t>(size));
  PG_MPI_CHECK(MPI_Allgather(&mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR, comm));
  for (const Offer &o : all)
    if (o.held[0]) {
      *job = o.held;
      return PG_OK;
    }
  *job = all[0].made;
  return PG_OK;
}

// This rank's clock against rank 0's: round trips to rank 0, keeping the
// offset of the shortest (Cristian's method), whose half round trip bounds the
// error. At least kClockRounds; more while the best is above kClockGoodNs, up
// to kClockRoundsMax or kClockBudgetNs (ranks sharing cores wait for one:
// round trips of milliseconds). Each peer tells rank 0 when it is done.
pg_status measure_clock(MPI_Comm comm, int rank, int size, std::int64_t *offset, std::int64_t *uncertainty) {
  constexpr std::int64_t kDone = INT64_MIN;
  *offset = 0;
  *uncertainty = 0;
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      while (true) {
        std::int64_t asked = 0;
        PG_MPI_CHECK(MPI_Recv(&asked, 1, MPI_INT64_T, r, kClockTag, comm, MPI_STATUS_IGNORE));
        if (asked == kDone) break;
        const std::int64_t now = watchdog::now_ns();
        PG_MPI_CHECK(MPI_Send(&now, 1, MPI_INT64_T, r, kClockTag, comm));
      }
    return PG_OK;
  }
  std::int64_t best = INT64_MAX;
  const std::int64_t until = watchdog::now_ns() + kClockBudgetNs;
  for (int i = 0; i < kClockRounds || (best > kClockGoodNs && i < kClockRoundsMax && watchdog::now_ns() < until);
       ++i) {
    const std::int64_t sent = watchdog::now_ns();
    std::int64_t theirs = 0;
    PG_MPI_CHECK(MPI_Send(&sent, 1, MPI_INT64_T, 0, kClockTag, comm));
    PG_MPI_CHECK(MPI_Recv(&theirs, 1, MPI_INT64_T, 0, kClockTag, comm, MPI_STATUS_IGNORE));
    const std::int64_t back = watchdog::now_ns(), round = back - sent;
    if (round < best) {
      best = round;
      *offset = theirs - (sent + back) / 2;
      *uncertainty = round / 2;
    }
  }
  PG_MPI_CHECK(MPI_Send(&kDone, 1, MPI_INT64_T, 0, kClockTag, comm));
  return PG_OK;
}

}  // namespace pg::trace
