// The CPU default backend: every operation on MPI, on the backend's own
// duplicate of the strategy's communicator.
#pragma once

#include "core/registry.h"

namespace pg::mpi {

BackendEntry entry();

}  // namespace pg::mpi
