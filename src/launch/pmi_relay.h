// The PMI relay of a bootstrapped process (docs/launch.md): a thread of the
// library serves PMI-1 to this process's MPI over a socketpair (PMI_FD) and
// carries its key-value puts, barriers, finalize and abort to the job's
// rendezvous, whose answers it relays back; losing the rendezvous before
// finalizing MPI ends the job. bootstrap.cpp joins the job and starts it.
#pragma once

#include "launch/member.h"

namespace pg::launch {

// The relay's thread: runs until the process exits (or MPI closed PMI and the
// rendezvous said goodbye).
void serve(Member *m);

}  // namespace pg::launch
