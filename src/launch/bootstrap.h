// The bootstrap (docs/launch.md): in a job that no MPI launcher started, the
// library serves PMI-1 to its own process's MPI over a socketpair (PMI_FD,
// PMI_RANK, PMI_SIZE set before MPI_Init and unset after it) and carries the
// key-value exchange and barriers over the job's rendezvous, served by rank 0.
// The rendezvous is met either at an address every copy knows
// (MASTER_ADDR:MASTER_PORT, PGS_BOOTSTRAP_ADDR) or, for the torch backend, at
// one rank 0 opened and published in torch's Store.
#pragma once

#include <string>

#include "launch/job.h"
#include "pg_strategy.h"

namespace pg::launch {

// Before the library's MPI_Init (runtime::ensure_mpi): when this process is
// one of N > 1 that no MPI launcher started (read_job), joins the job (rank 0
// opens the rendezvous first) and sets the PMI environment for MPI_Init.
// Nothing when a bootstrap is already joined, under an MPI launcher, or for a
// single process. Fails, on every rank that arrived, with a message naming
// what went wrong (the missing ranks, a variable and its value).
pg_status before_mpi_init();
// After MPI_Init: unsets what before_mpi_init set, so child processes do not
// inherit it.
void after_mpi_init();

// MPI's world of 1 while the launcher or the job's variables say N > 1: an
// error for every entry point (PG_ERR_STATE), with the cause and the fix.
pg_status check_world();

// The torch backend's path (pg_bootstrap_listen, pg_bootstrap_join).
// Rank 0: opens the rendezvous for `size` processes on `host` (empty:
// PGS_BOOTSTRAP_ADDR's host, else this machine's address toward MASTER_ADDR)
// and a free port (PGS_BOOTSTRAP_ADDR's port when set); *address is where the
// others reach it.
pg_status listen(int size, const std::string &host, const std::string &secret, std::string *address);
// Every rank: joins the rendezvous at `address` and arranges the PMI
// environment for the MPI_Init that follows.
pg_status join(int rank, int size, const std::string &address, const std::string &secret);

// One line on how this process's MPI came up through the bootstrap; "" when
// it did not.
std::string describe();

}  // namespace pg::launch
