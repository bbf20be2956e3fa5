// The gloo backend: a plugin (libpg_backend_gloo.so) that runs allreduce,
// broadcast, allgather, barrier, allgatherv and alltoallv on Gloo's TCP
// transport. Every other operation is left NULL and runs on the default backend.
//
// Set-up (pg_backend_ops.create, collective over ctx->comm) is
// pg_gloo::connect_mesh (gloo_mesh.h): a TCP device, then a full mesh of
// pairs whose addresses are exchanged over MPI, with every rank agreeing after
// each step.
//
// Operations use Gloo's options-style collectives only (gloo::allreduce,
// broadcast, allgather, barrier, allgatherv, alltoallv), never its older
// algorithm classes, and each call gets a fresh tag. Gloo's allgatherv and
// alltoallv place the blocks one after the other in rank order: blocks at other
// displacements go through a packed staging buffer. Allreduce combines with the library's kernel
// (pg_reduce_local, pg_reduce_finish for AVG) on Gloo's ring, which computes
// each element once and copies it to every rank: every dtype/op pair is
// served, with the same bits on every rank.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gloo_mesh.h"
#include "pg_backend.h"

namespace {

// Gloo's own default is 30 s per operation, which would fail a collective whose
// peers are merely late (a slow rank before a checkpoint). Hangs are the
// library's watchdog's business (PGS_TIMEOUT), so Gloo waits long.
constexpr std::chrono::hours kOperationTimeout{24};

// --- one backend instance -----------------------------------------------------

struct GlooState {
  const pg_backend_context *ctx = nullptr;
  pg_gloo::Mesh mesh;  // connected when ctx->size > 1
  uint32_t next_tag = 1;

  // A fresh tag per collective: Gloo matches messages by (collective, tag).
  uint32_t tag() {
    uint32_t t = next_tag++;
    if (next_tag == 0) next_tag = 1;
    return t;
  }
};

void log_message(const pg_backend_context *ctx, int level, const std::string &text) {
  if (ctx != nullptr && ctx->log != nullptr) ctx->log(level, ("gloo: " + text).c_str());
}

pg_status gloo_create(const pg_backend_context *ctx, void * /*user_data*/, void **state) {
  try {
    std::unique_ptr<GlooState> st(new GlooState());
    st->ctx = ctx;
    if (ctx->size > 1) {
      const std::string error = pg_gloo::connect_mesh(ctx->comm, kOperationTimeout, &st->mesh);
      if (!error.empty()) {
        log_message(ctx, PG_LOG_ERROR, error);
        return PG_ERR_BACKEND;
      }
      log_message(ctx, PG_LOG_DEBUG,
                  "connected " + std::to_string(ctx->size) + " ranks over " + st->mesh.where);
    }
    *state = st.release();
    return PG_OK;
  } catch (const std::exception &e) {  // no exception crosses the C table
    log_message(ctx, PG_LOG_ERROR, std::string("create failed: ") + e.what());
    return PG_ERR_BACKEND;
  }
}

void gloo_destroy(void *state) {
  auto *st = static_cast<GlooState *>(state);
  if (st == nullptr) return;
  // Nobody may still be reading from a connection when its peer closes it.
  if (st->mesh.context) MPI_Barrier(st->ctx->comm);
  try {
    st->mesh.context.reset();
    st->mesh.device.reset();
  } catch (...) {
  }
  delete st;
}

// Runs a Gloo call; an exception becomes PG_ERR_BACKEND with its text logged.
template <typename Fn>
pg_status guarded(GlooState *st, const char *what, Fn &&fn) {
  try {
    fn();
    return PG_OK;
  } catch (const std::exception &e) {
    log_message(st->ctx, PG_LOG_ERROR, std::string(what) + " failed: " + e.what());
  } catch (...) {
    log_message(st->ctx, PG_LOG_ERROR, std::string(what) + " failed");
  }
  return PG_ERR_BACKEND;
}

// --- allreduce ----------------------------------------------------------------

pg_status gloo_allreduce(void *state, const void *send, void *recv, size_t count, pg_dtype dtype,
                         pg_op op) {
  auto *st = static_cast<GlooState *>(state);
  if (count == 0) return PG_OK;
  if (st->ctx->size == 1) {
    if (send != recv) std::memcpy(recv, send, count * pg_dtype_size(dtype));
    return PG_OK;
  }
  return guarded(st, "allreduce", [&] {
    pg_gloo::allreduce(st->mesh.context, send, recv, count, dtype, op, st->tag());
  });
}

// --- data movement: any dtype, moved as bytes ------------------------------------

pg_status gloo_broadcast(void *state, void *buf, size_t count, pg_dtype dtype, int root) {
  auto *st = static_cast<GlooState *>(state);
  const size_t bytes = count * pg_dtype_size(dtype);
  if (bytes == 0 || st->ctx->size == 1) return PG_OK;
  return guarded(st, "broadcast", [&] {
    gloo::BroadcastOptions opts(st->mesh.context);
    opts.setOutput(static_cast<uint8_t *>(buf), bytes);  // the root sends from it
    opts.setRoot(root);
    opts.setTag(st->tag());
    gloo::broadcast(opts);
  });
}

pg_status gloo_allgather(void *state, const void *send, void *recv, size_t sendcount,
                         pg_dtype dtype) {
  auto *st = static_cast<GlooState *>(state);
  const size_t bytes = sendcount * pg_dtype_size(dtype);
  const int rank = st->ctx->rank, size = st->ctx->size;
  uint8_t *out = static_cast<uint8_t *>(recv);
  const bool in_place = send == out + static_cast<size_t>(rank) * bytes;
  if (bytes == 0) return PG_OK;
  if (size == 1) {
    if (!in_place) std::memcpy(out, send, bytes);
    return PG_OK;
  }
  return guarded(st, "allgather", [&] {
    gloo::AllgatherOptions opts(st->mesh.context);
    // Without an input Gloo takes this rank's block from the output: in place.
    if (!in_place) opts.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(send)), bytes);
    opts.setOutput(out, bytes * static_cast<size_t>(size));
    opts.setTag(st->tag());
    gloo::allgather(opts);
  });
}

// --- the uneven collectives: blocks packed in rank order for Gloo ------------------

// Whether the blocks lie one after the other in rank order from element 0
// (empty blocks anywhere), as Gloo places them.
bool packed(const size_t *counts, const size_t *displs, int size) {
  size_t at = 0;
  for (int r = 0; r < size; ++r) {
    if (counts[r] > 0 && displs[r] != at) return false;
    at += counts[r];
  }
  return true;
}

size_t total(const size_t *counts, int size) {
  size_t t = 0;
  for (int r = 0; r < size; ++r) t += counts[r];
  return t;
}

// Copies the blocks between the caller's layout and the packed one.
void pack(uint8_t *to, const uint8_t *from, const size_t *counts, const size_t *displs, int size, size_t es) {
  for (int r = 0; r < size; ++r, to += counts[r - 1] * es)
    if (counts[r] > 0) std::memcpy(to, from + displs[r] * es, counts[r] * es);
}
void unpack(uint8_t *to, const uint8_t *from, const size_t *counts, const size_t *displs, int size, size_t es) {
  for (int r = 0; r < size; ++r, from += counts[r - 1] * es)
    if (counts[r] > 0) std::memcpy(to + displs[r] * es, from, counts[r] * es);
}

// A buffer Gloo can take for an empty side (it registers every buffer).
uint8_t *nonempty(uint8_t *p, std::vector<uint8_t> &spare) {
  if (p != nullptr) return p;
  spare.assign(1, 0);
  return spare.data();
}

pg_status gloo_allgatherv(void *state, const void *send, size_t sendcount, void *recv, const size_t *recvcounts,
                          const size_t *displs, pg_dtype dtype) {
  auto *st = static_cast<GlooState *>(state);
  const int size = st->ctx->size, rank = st->ctx->rank;
  const size_t es = pg_dtype_size(dtype), bytes = sendcount * es;
  uint8_t *out = static_cast<uint8_t *>(recv);
  const uint8_t *in = static_cast<const uint8_t *>(send);
  if (size == 1) {
    if (bytes > 0 && in != out + displs[0] * es) std::memmove(out + displs[0] * es, in, bytes);
    return PG_OK;
  }
  if (total(recvcounts, size) == 0) return PG_OK;  // every rank sees the same counts
  return guarded(st, "allgatherv", [&] {
    const bool direct = packed(recvcounts, displs, size);
    std::vector<uint8_t> stage, mine, spare;
    if (!direct) stage.resize(total(recvcounts, size) * es);
    // In place the input lies inside the output: Gloo gets a copy of it.
    if (bytes > 0 && in >= out && in < out + (displs[rank] + sendcount) * es) {
      mine.assign(in, in + bytes);
      in = mine.data();
    }
    std::vector<size_t> elements(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) elements[static_cast<size_t>(r)] = recvcounts[r] * es;
    gloo::AllgathervOptions opts(st->mesh.context);
    opts.setInput<uint8_t>(nonempty(const_cast<uint8_t *>(in), spare), bytes);
    opts.setOutput<uint8_t>(direct ? out : stage.data(), elements);
    opts.setTag(st->tag());
    gloo::allgatherv(opts);
    if (!direct) unpack(out, stage.data(), recvcounts, displs, size, es);
  });
}

pg_status gloo_alltoallv(void *state, const void *send, const size_t *sendcounts, const size_t *sdispls, void *recv,
                         const size_t *recvcounts, const size_t *rdispls, pg_dtype dtype) {
  auto *st = static_cast<GlooState *>(state);
  const int size = st->ctx->size;
  const size_t es = pg_dtype_size(dtype);
  const uint8_t *in = static_cast<const uint8_t *>(send);
  uint8_t *out = static_cast<uint8_t *>(recv);
  if (size == 1) {  // the library stages an in-place call: the buffers differ
    if (sendcounts[0] > 0) std::memmove(out + rdispls[0] * es, in + sdispls[0] * es, sendcounts[0] * es);
    return PG_OK;
  }
  return guarded(st, "alltoallv", [&] {
    const bool send_direct = packed(sendcounts, sdispls, size), recv_direct = packed(recvcounts, rdispls, size);
    std::vector<uint8_t> send_stage, recv_stage, spare_in, spare_out;
    if (!send_direct) {
      send_stage.resize(total(sendcounts, size) * es);
      pack(send_stage.data(), in, sendcounts, sdispls, size, es);
      in = send_stage.data();
    }
    if (!recv_direct) recv_stage.resize(total(recvcounts, size) * es);
    std::vector<int64_t> sent(static_cast<size_t>(size)), received(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
      sent[static_cast<size_t>(r)] = static_cast<int64_t>(sendcounts[r] * es);
      received[static_cast<size_t>(r)] = static_cast<int64_t>(recvcounts[r] * es);
    }
    uint8_t *in_ptr = send_direct && total(sendcounts, size) == 0 ? nullptr : const_cast<uint8_t *>(in);
    uint8_t *out_ptr = recv_direct ? (total(recvcounts, size) == 0 ? nullptr : out) : recv_stage.data();
    gloo::AlltoallvOptions opts(st->mesh.context);
    opts.setInput<uint8_t>(nonempty(in_ptr, spare_in), sent);
    opts.setOutput<uint8_t>(nonempty(out_ptr, spare_out), received);
    opts.setTag(st->tag());
    gloo::alltoallv(opts);
    if (!recv_direct) unpack(out, recv_stage.data(), recvcounts, rdispls, size, es);
  });
}

pg_status gloo_barrier(void *state) {
  auto *st = static_cast<GlooState *>(state);
  if (st->ctx->size == 1) return PG_OK;
  return guarded(st, "barrier", [&] {
    gloo::BarrierOptions opts(st->mesh.context);
    opts.setTag(st->tag());
    gloo::barrier(opts);
  });
}

}  // namespace

// The plugin's entry point, called once when a strategy first asks for "gloo".
extern "C" PG_API pg_status pg_backend_plugin_init(void) {
  // Operations not set here run on the default backend.
  pg_backend_ops ops = pg_backend_ops_init("gloo", PG_DEVICE_CPU);
  ops.create = gloo_create;
  ops.destroy = gloo_destroy;
  ops.allreduce = gloo_allreduce;
  ops.broadcast = gloo_broadcast;
  ops.allgather = gloo_allgather;
  ops.barrier = gloo_barrier;
  ops.allgatherv = gloo_allgatherv;
  ops.alltoallv = gloo_alltoallv;
  return pg_backend_register(&ops);
}
