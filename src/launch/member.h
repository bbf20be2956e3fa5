// A process's side of the job's rendezvous (docs/launch.md): its membership
// (the connection to rank 0's rendezvous and the PMI server its MPI talks
// to) and the join: the greeting, the proof of the job's secret, the
// admission, and the word that every process arrived. bootstrap.cpp joins
// this process with it; the rendezvous benchmark (tests/bench) joins many
// simulated members with the same code.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "launch/net.h"
#include "launch/pmi.h"
#include "launch/wire.h"
#include "pg_strategy.h"

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
  std::string rank0_host;  // for the message should rank 0 die
  FrameReader reader{kMaxFrame};
  PmiSession *session = nullptr;
  long epoch = 0;
  bool env_set = false;
  std::mutex send_mutex;
  std::atomic<bool> exiting{false}, finalized{false}, aborting{false};

  // Sends `f` to the rendezvous. False when the connection is gone, or when
  // the frame would exceed kMaxFrame: then nothing is sent and *error says so.
  bool send(const Fields &f, std::string *error = nullptr);
};

// On the connection m.tcp: greets the rendezvous (`shown` names it in
// messages, `hint` follows the message when what answered is not one), proves
// `secret` as rank m.rank of m.size and waits to be admitted, until
// `deadline`. A rendezvous busy with this host's other connections says so:
// m.tcp is then a new connection to m.at, made a little later. Not PG_OK: *why says what went wrong (the status and message
// rank 0 gave, when it refused).
pg_status greet(Member &m, const std::string &secret, const std::string &shown, const std::string &hint,
                Clock::time_point deadline, std::string *why);
// After greet: waits up to `timeout_s` (and the time a greeting may take) for
// the rendezvous to report the job complete, or why it cannot form.
pg_status await_ready(Member &m, const std::string &shown, double timeout_s, std::string *why);
// The PMI socketpair and the PMI server of an admitted member.
pg_status open_pmi(Member &m, std::string *why);

}  // namespace pg::launch
