// Agreement across the ranks of a communicator: one status for all, and
// messages that say which rank failed and why.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "pg_strategy.h"

namespace pg {

// Polls `request` until it finishes (util/poll.h). The thread's CancelScope
// (an abort, a peer's alarm) may end the wait first, leaving it active: what
// MPI may still read or write then, `held`, is kept until the process exits.
pg_status poll_request(MPI_Request *request, std::shared_ptr<void> held = nullptr);

// The agreements below are polled collectives (poll_request): in a
// CancelScope a peer's abort or failure ends them, and the buffers MPI may
// still write are kept until exit.

// Every rank's string, in rank order (collective).
pg_status allgather_strings(MPI_Comm comm, const std::string &mine, std::vector<std::string> *all);

// Collective: every rank returns the status of the lowest failing rank (PG_OK
// if none failed), and pg_last_error() names the ranks that failed and why.
// `local_message` is this rank's message when `local` is a failure.
pg_status agree(MPI_Comm comm, pg_status local, const std::string &local_message);

// Collective: PG_ERR_MISMATCH on every rank unless every rank passed the same
// `value`; the message lists what each rank had. `what` names the value.
pg_status agree_same(MPI_Comm comm, const std::string &value, const char *what);
// Local: PG_ERR_MISMATCH unless the values (one per rank) are all the same,
// with the message agree_same gives.
pg_status compare_values(const std::vector<std::string> &all, const char *what);

}  // namespace pg
