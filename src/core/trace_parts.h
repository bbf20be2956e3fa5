// What the flight recorder's files share: trace.cpp records (the ring of each
// strategy), trace_clock.cpp agrees across ranks at creation (the job's name,
// the clock against rank 0's), trace_dump.cpp keeps the process's recorders
// and writes their dumps.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/trace.h"

namespace pg::trace {

// `text` as a JSON string, quotes included.
std::string quote(const std::string &text);

// The job's name in the dump files, the same on every rank of `comm`
// (collective: every rank takes part, whatever it traced before). *job: this
// process's name so far ("" for none); afterwards the agreed one: the first
// name a rank already has, in rank order (the launcher's job id counts),
// else one rank 0 makes up.
pg_status agree_job(MPI_Comm comm, std::string *job);
// This rank's clock against rank 0's of `comm` (collective).
pg_status measure_clock(MPI_Comm comm, int rank, int size, std::int64_t *offset, std::int64_t *uncertainty);

// Names the recorder of a new strategy, agrees on the job to dump under, and
// keeps it among the process's recorders.
pg_status enlist(pg_strategy *s, const std::shared_ptr<Recorder> &recorder);

}  // namespace pg::trace
