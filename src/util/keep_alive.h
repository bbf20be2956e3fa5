// Memory that MPI may still write, kept until the process exits.
#pragma once

#include <memory>

namespace pg {

// Keeps `thing` alive (and reachable, so no leak checker reports it) until the
// process exits. For what an interrupted operation leaves to MPI: a receive
// buffer or a request that an aborted call or a failed peer left active must
// not be freed, because a late peer can still make MPI write into it during
// any later MPI call of the process (MPI cannot cancel a collective).
void keep_until_exit(std::shared_ptr<void> thing);

}  // namespace pg
