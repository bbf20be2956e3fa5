// A client of torch's TCPStore, for the C path under torchrun --no-python
// (docs/launch.md): there MASTER_ADDR:MASTER_PORT is the agent's store
// (TORCHELASTIC_USE_AGENT_STORE), so rank 0 publishes its rendezvous address
// and a fresh secret there, under a key of its own, and the others read them.
// Only what that needs: set, and wait-then-get, on torch's wire protocol (a
// validation with its magic number, then one-byte commands with 64-bit
// length-prefixed keys and values). Keys are given as torch's own clients
// name them (a leading '/').
#pragma once

#include <string>

#include "launch/net.h"
#include "pg_strategy.h"

namespace pg::launch {

pg_status store_set(const Address &store, const std::string &key, const std::string &value, double timeout_s);
// Waits until `key` is set (up to timeout_s), then reads it (at most 4096 bytes).
pg_status store_get(const Address &store, const std::string &key, double timeout_s, std::string *value);

}  // namespace pg::launch
