// The PMI relay of a bootstrapped process (docs/launch.md): a thread of the
// library serves PMI-1 to this process's MPI over a socketpair (PMI_FD) and
// carries its key-value puts, barriers, finalize and abort to the job's
// rendezvous, whose answers it relays back; losing the rendezvous before
// finalizing MPI ends the job. bootstrap.cpp joins the job and starts it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "launch/net.h"
#include "launch/pmi.h"
#include "launch/wire.h"

namespace pg::launch {

// This process's membership in a bootstrapped job: its connection to the
// rendezvous and the PMI server its MPI talks to. Never freed: its thread
// runs until the process exits.
struct Member {
  int rank = 0, size = 1;
  int tcp = -1;         // to the rendezvous
  int pmi = -1;         // the server's end of the PMI socketpair
  int pmi_client = -1;  // MPI's end (PMI_FD)
  Address at;
  std::string what, origin, kvsname;
  std::vector<std::string> hosts;
  FrameReader reader{kMaxFrame};
  PmiSession *session = nullptr;
  long epoch = 0;
  bool env_set = false;
  std::mutex send_mutex;
  std::atomic<bool> exiting{false}, finalized{false}, aborting{false};

  bool send(const Fields &f) {
    std::lock_guard<std::mutex> lock(send_mutex);
    return send_all(tcp, frame(f));
  }
};

// The relay's thread: runs until the process exits (or MPI closed PMI and the
// rendezvous said goodbye).
void serve(Member *m);

}  // namespace pg::launch
