// Gloo over MPI, shared by the gloo plugin and pg-bench's gloo-raw baseline so
// both connect and reduce the same way: a gloo::Context whose full mesh of TCP
// pairs is connected over MPI (no file system or key-value store), and
// allreduce with the library's own reduction kernel.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/device.h>
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pg_strategy.h"

namespace pg_gloo {

struct Mesh {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> context;  // released before the device
  std::string where;                       // what the ranks connect over, for messages
};

// Collective over `comm`: a TCP device on the interface named by
// GLOO_SOCKET_IFNAME (the first of a comma-separated list), else on 127.0.0.1
// when every rank is on this host, else on the address this host's name
// resolves to; then a full mesh of pairs, each pair's address sent to its peer
// with one MPI_Alltoall. Gloo operations on the context wait up to
// `operation_timeout`. The ranks agree after each step, so all succeed or all
// fail and none is left in a collective: returns "" on success, else this
// rank's error or that another rank failed.
std::string connect_mesh(MPI_Comm comm, std::chrono::milliseconds operation_timeout, Mesh *mesh);

// gloo::allreduce of `count` elements (in place when send == recv) on Gloo's
// ring, combining with pg_reduce_local and finishing with pg_reduce_finish
// (PG_AVG's division), so every dtype/op pair the library defines is served.
// The pair must be valid. Throws what Gloo throws.
void allreduce(const std::shared_ptr<gloo::Context> &context, const void *send, void *recv,
               std::size_t count, pg_dtype dtype, pg_op op, uint32_t tag);

}  // namespace pg_gloo
