// Sockets for the bootstrap: host:port parsing, a listening socket on an
// address of this host, connecting with retries until a deadline, whole
// writes, and the keepalive that lets a vanished host be noticed.
#pragma once

#include <poll.h>

#include <chrono>
#include <string>

#include "pg_strategy.h"

namespace pg::launch {

using Clock = std::chrono::steady_clock;

struct Address {
  std::string host;  // a name or a literal address (IPv6 without brackets)
  int port = 0;
  std::string text() const;  // "host:port", "[v6]:port"
};

// "host:port" or "[v6addr]:port"; the port 0..65535 (0: any free port, for a
// listening socket). False with the reason otherwise.
bool parse_address(const std::string &text, Address *out, std::string *error);

// Listens on `at` (port 0: a free one). `what` names where the address came
// from in messages ("MASTER_ADDR/MASTER_PORT"). When the host's address is not
// one of this machine's (a Kubernetes service name), listens on every address
// instead, and says so in *note. *bound: the port listened on.
pg_status listen_on(const Address &at, const std::string &what, int *fd, int *bound, std::string *note);

// Whether the listening socket `fd` listens on a loopback address only (127/8,
// ::1): only processes of this machine can reach it. Not for a wildcard address.
bool loopback_only(int fd);

// Connects to `to`, retrying while nothing listens there yet, until `deadline`
// (which also bounds each attempt: a host that drops the connection's first
// packets costs no more). PG_ERR_TIMEOUT when nothing answered in time.
pg_status connect_to(const Address &to, const std::string &what, Clock::time_point deadline, int *fd);

// This machine's address on the route to `host` (what the peers that reach
// `host` can reach this machine at), or its host name's address, or
// 127.0.0.1.
std::string address_toward(const std::string &host);

// TCP_NODELAY, keepalive probes (a vanished host is noticed within about
// kKeepaliveSeconds) and a user timeout for unacknowledged data.
void tune(int fd);
constexpr int kKeepaliveSeconds = 20;

// Writes all of `data` (no SIGPIPE). False when the peer is gone.
bool send_all(int fd, const std::string &data);

// Waits until `fd` has one of `events` (poll's) or the deadline passes: 1
// it has, 0 timed out, -1 error.
int wait_for(int fd, short events, Clock::time_point deadline);
inline int wait_readable(int fd, Clock::time_point deadline) { return wait_for(fd, POLLIN, deadline); }

std::string host_name();

}  // namespace pg::launch
