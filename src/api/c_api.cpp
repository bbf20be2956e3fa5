// Every extern "C" entry of pg_strategy.h and pg_backend.h. Each one checks
// its arguments and catches every exception: nothing crosses the C ABI.
#include <cmath>
#include <string>

#include "api/info.h"
#include "core/dispatch.h"  // with core/strategy.h
#include "core/registry.h"
#include "core/runtime.h"
#include "core/trace.h"
#include "core/validate.h"
#include "mpi/agree.h"
#include "mpi/types.h"
#include "util/dtype.h"
#include "util/entry.h"
#include "util/owned_comm.h"
#include "util/poll.h"
#include "util/reduce.h"
#include "util/status.h"
#include "util/text.h"

namespace {

using pg::Coll;
using pg::CollArgs;
using pg::guarded;
using pg::write_string;

pg_status null_handle(const char *fn) {
  return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: the strategy is NULL", fn);
}

// The check every entry point that uses a strategy makes first: a handle, MPI
// still running, and a strategy not poisoned (pg_strategy.h).
pg_status usable(const char *fn, const pg_strategy *s) {
  if (!s) return null_handle(fn);
  return pg::check_usable(fn, s);
}

// `arrays`: the count and displacement arrays of an uneven collective.
pg_status blocking(const char *fn, pg_strategy *s, CollArgs a, const pg::VArrays *arrays = nullptr) {
  return guarded(fn, [&] {
    PG_CHECK(usable(fn, s));
    const pg_status local = pg::validate(fn, s, &a, arrays);
    return pg::run(s, a, local);
  });
}

pg_status nonblocking(const char *fn, pg_strategy *s, CollArgs a, pg_work **work,
                      const pg::VArrays *arrays = nullptr) {
  return guarded(fn, [&] {
    if (work) *work = nullptr;
    PG_CHECK(usable(fn, s));
    // A NULL work is an argument error like the others (collective under PGS_DEBUG=detail).
    pg_status local = work ? pg::validate(fn, s, &a, arrays)
                           : pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: work is NULL", fn);
    pg_work *started = nullptr;
    pg_status st = pg::start(s, a, local, &started);
    if (work) *work = started;
    return st;
  });
}

// The checks of the element conversions, then `convert`.
template <typename Convert>
pg_status conversion(const char *fn, pg_dtype dtype, const void *in, const void *out, size_t count,
                     Convert convert) {
  return guarded(fn, [&] {
    PG_CHECK(pg::validate_dtype(fn, dtype));
    if (count > 0 && (!in || !out))
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: in or out is NULL with count %zu", fn, count);
    convert();
    return PG_OK;
  });
}

// pg_mem_alloc's collective part: every rank returns the same status, and no
// rank keeps memory when another failed.
pg_status allocate(pg_strategy *s, size_t bytes, void **ptr) {
  pg::CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(pg::check_peers(s));
  PG_CHECK(s->engine.wait_collectives());  // collective: after the collective works started before it
  PG_CHECK(pg::check_peers(s));
  void *p = nullptr;
  pg_status local = s->device.cuda ? s->memory.allocate_device(s->device.index, bytes, &p)
                                   : s->memory.allocate_shared(s->layout.node_comm, bytes, &p);
  pg_status st = pg::poison_on_failure(s, pg::agree(s->comm, local, local == PG_OK ? std::string() : pg::last_error()));
  if (st != PG_OK) {
    const std::string message = pg::last_error();
    if (p) s->memory.release(p);
    return pg::fail_message(st, message);
  }
  *ptr = p;
  return PG_OK;
}

pg_status create(const char *fn, const char *device, const char *backend, MPI_Comm comm,
                 pg_strategy **out) {
  return guarded(fn, [&] {
    if (!out) return pg::fail(PG_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = nullptr;
    return pg::create_strategy(device, backend, comm, out);
  });
}

}  // namespace

extern "C" {

const char *pg_status_name(pg_status status) { return pg::status_name(status); }

const char *pg_last_error(void) { return pg::last_error().c_str(); }

void pg_version(int *major, int *minor, int *patch) {
  if (major) *major = PG_VERSION_MAJOR;
  if (minor) *minor = PG_VERSION_MINOR;
  if (patch) *patch = PG_VERSION_PATCH;
}

size_t pg_dtype_size(pg_dtype dtype) { return pg::dtype_size(dtype); }
const char *pg_dtype_name(pg_dtype dtype) { return pg::dtype_name(dtype); }
const char *pg_op_name(pg_op op) { return pg::op_name(op); }
int pg_op_supported(pg_dtype dtype, pg_op op) {
  return pg::valid_dtype(dtype) && pg::valid_op(op) && pg::op_supported(dtype, op);
}

pg_status pg_dtype_to_double(pg_dtype dtype, const void *in, double *out, size_t count) {
  return conversion("pg_dtype_to_double", dtype, in, out, count, [&] { pg::to_double(dtype, in, out, count); });
}

pg_status pg_dtype_from_double(pg_dtype dtype, const double *in, void *out, size_t count) {
  return conversion("pg_dtype_from_double", dtype, in, out, count, [&] { pg::from_double(dtype, in, out, count); });
}

pg_status pg_mpi_datatype(pg_dtype dtype, MPI_Datatype *out) {
  return guarded("pg_mpi_datatype", [&] {
    PG_CHECK(pg::validate_dtype("pg_mpi_datatype", dtype));
    if (!out) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_mpi_datatype: out is NULL");
    *out = pg::mpi::datatype(dtype);
    return PG_OK;
  });
}

pg_status pg_mpi_op(pg_dtype dtype, pg_op op, MPI_Op *out) {
  return guarded("pg_mpi_op", [&] {
    PG_CHECK(pg::validate_reduction("pg_mpi_op", dtype, op));
    if (!out) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_mpi_op: out is NULL");
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
      return pg::fail(PG_ERR_STATE, "pg_mpi_op: MPI is %s", finalized ? "finalized" : "not initialized");
    return pg::mpi::operation(dtype, op, out);
  });
}

int pg_mpi_comm_owned(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized && pg::is_owned(comm) ? 1 : 0;
}

pg_status pg_reduce_local(pg_dtype dtype, pg_op op, void *inout, const void *in, size_t count) {
  return guarded("pg_reduce_local", [&] {
    PG_CHECK(pg::validate_reduction("pg_reduce_local", dtype, op));
    if (count > 0 && (!inout || !in))
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_reduce_local: inout or in is NULL with count %zu", count);
    pg::reduce_local(dtype, op, inout, in, count);
    return PG_OK;
  });
}

pg_status pg_reduce_finish(pg_dtype dtype, pg_op op, void *buf, size_t count, int ranks) {
  return guarded("pg_reduce_finish", [&] {
    PG_CHECK(pg::validate_reduction("pg_reduce_finish", dtype, op));
    if (count > 0 && !buf)
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_reduce_finish: buf is NULL with count %zu", count);
    if (ranks < 1)
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_reduce_finish: ranks %d is not positive", ranks);
    pg::reduce_finish(dtype, op, buf, count, ranks);
    return PG_OK;
  });
}

const char *pg_default_backend(const char *device) {
  pg::Device d;
  if (pg::parse_device(device, &d) != PG_OK) return nullptr;
  return pg::default_backend(d);
}

pg_status pg_backends_list(char *buf, size_t len) {
  return guarded("pg_backends_list", [&] {
    return write_string("pg_backends_list", pg::text::join(pg::registry::names(), ","), buf, len);
  });
}

pg_status pg_backend_register(const pg_backend_ops *ops) {
  return guarded("pg_backend_register", [&] { return pg::registry::add_table(ops); });
}

pg_status pg_strategy_create(const char *device, const char *backend, pg_strategy **out) {
  return create("pg_strategy_create", device, backend, MPI_COMM_WORLD, out);
}

pg_status pg_strategy_create_comm(const char *device, const char *backend, MPI_Comm comm,
                                  pg_strategy **out) {
  return create("pg_strategy_create_comm", device, backend, comm, out);
}

pg_status pg_strategy_create_fcomm(const char *device, const char *backend, MPI_Fint comm,
                                   pg_strategy **out) {
  return guarded("pg_strategy_create_fcomm", [&] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    // MPI_Comm_f2c needs MPI; a Fortran handle exists only once MPI runs.
    if (!initialized)
      return pg::fail(PG_ERR_STATE, "pg_strategy_create_fcomm: MPI is not initialized");
    return create("pg_strategy_create_fcomm", device, backend, MPI_Comm_f2c(comm), out);
  });
}

pg_status pg_strategy_split(pg_strategy *s, int color, int key, pg_strategy **out) {
  return guarded("pg_strategy_split", [&] {
    if (out) *out = nullptr;
    PG_CHECK(usable("pg_strategy_split", s));
    if (!out) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_strategy_split: out is NULL");
    {
      pg::CancelScope abortable(&s->aborted, s->alarm.get());
      PG_CHECK(pg::check_peers(s));
      PG_CHECK(s->engine.wait_collectives());
      // Every rank here before MPI_Comm_split, which cannot be interrupted: a
      // polled agreement, which a failed or aborted peer's alarm ends.
      PG_CHECK(pg::poison_on_failure(s, pg::agree(s->comm, PG_OK, std::string())));
    }
    // The new strategy's collective set-up runs to its end on every rank.
    return pg::split_strategy(s, color, key, out);
  });
}

pg_status pg_strategy_destroy(pg_strategy *s) {
  return guarded("pg_strategy_destroy", [&] { return s ? pg::destroy_strategy(s) : PG_OK; });
}

pg_status pg_strategy_abort(pg_strategy *s) {
  return guarded("pg_strategy_abort", [&] {
    if (!s) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_strategy_abort: the strategy is NULL");
    pg::abort_strategy(s);
    return PG_OK;
  });
}

const char *pg_strategy_backend(const pg_strategy *s) { return s ? s->selection.backend.c_str() : nullptr; }
const char *pg_strategy_device(const pg_strategy *s) { return s ? s->device_name.c_str() : nullptr; }
int pg_strategy_rank(const pg_strategy *s) { return s ? s->rank : -1; }
int pg_strategy_size(const pg_strategy *s) { return s ? s->size : -1; }
int pg_strategy_local_rank(const pg_strategy *s) { return s ? s->layout.local_rank : -1; }
int pg_strategy_local_size(const pg_strategy *s) { return s ? s->layout.local_size : -1; }
int pg_strategy_node_rank(const pg_strategy *s) { return s ? s->layout.node_rank : -1; }
int pg_strategy_node_count(const pg_strategy *s) { return s ? s->layout.node_count : -1; }
long long pg_strategy_sequence(const pg_strategy *s) { return s ? static_cast<long long>(s->sequence) : -1; }

pg_status pg_strategy_describe(const pg_strategy *s, char *buf, size_t len) {
  return guarded("pg_strategy_describe", [&] {
    if (!s) return null_handle("pg_strategy_describe");
    std::string text;
    PG_CHECK(pg::describe_strategy(s, &text));
    return write_string("pg_strategy_describe", text, buf, len);
  });
}

pg_status pg_strategy_info(const pg_strategy *s, const char *key, char *buf, size_t len) {
  return guarded("pg_strategy_info", [&] {
    if (!s) return null_handle("pg_strategy_info");
    std::string text;
    PG_CHECK(pg::strategy_info(s, key, &text));
    return write_string("pg_strategy_info", text, buf, len);
  });
}

pg_status pg_strategy_set_stream(pg_strategy *s, void *cuda_stream) {
  return guarded("pg_strategy_set_stream", [&] {
    PG_CHECK(usable("pg_strategy_set_stream", s));
    if (!s->device.cuda)
      return pg::fail(PG_ERR_UNSUPPORTED, "pg_strategy_set_stream: device '%s' has no streams",
                      s->device_name.c_str());
    PG_CHECK(s->routes.selected->backend->set_stream(cuda_stream));
    if (s->routes.device_default) PG_CHECK(s->routes.device_default->backend->set_stream(cuda_stream));
    s->stream = cuda_stream;
    return PG_OK;
  });
}

pg_status pg_mem_alloc(pg_strategy *s, size_t bytes, void **ptr) {
  return guarded("pg_mem_alloc", [&] {
    if (ptr) *ptr = nullptr;
    PG_CHECK(usable("pg_mem_alloc", s));
    if (!ptr) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_mem_alloc: ptr is NULL");
    if (bytes > static_cast<size_t>(MPI_Aint(~0ull >> 1)))
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_mem_alloc: %zu bytes is too large", bytes);
    pg::CollArgs recorded;
    recorded.count = bytes;
    pg::trace::Op op(s, static_cast<std::uint8_t>(pg::trace::Event::mem_alloc), &recorded, 0);
    return op.end(allocate(s, bytes, ptr));
  });
}

pg_status pg_mem_free(pg_strategy *s, void *ptr) {
  return guarded("pg_mem_free", [&] {
    // pg_strategy_destroy frees what is left.
    PG_CHECK(usable("pg_mem_free", s));
    if (!ptr) return PG_OK;
    pg::trace::Op op(s, static_cast<std::uint8_t>(pg::trace::Event::mem_free), nullptr, 0);
    pg::CancelScope abortable(&s->aborted, s->alarm.get());
    PG_CHECK(op.end(pg::check_peers(s)));
    PG_CHECK(op.end(s->engine.wait_collectives()));
    return op.end(s->memory.release(ptr));
  });
}

pg_status pg_trace_dump(void) {
  return guarded("pg_trace_dump", [&] {
    if (!pg::trace::dump("request"))
      return pg::fail(PG_ERR_STATE, "pg_trace_dump: nothing is recorded (PGS_TRACE was not set when a strategy "
                                    "was created) or a dump could not be written");
    return PG_OK;
  });
}

pg_status pg_allreduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                       pg_dtype dtype, pg_op op) {
  return blocking("pg_allreduce", s, CollArgs::reduction(Coll::allreduce, sendbuf, recvbuf, count, dtype, op));
}
pg_status pg_broadcast(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int root) {
  return blocking("pg_broadcast", s, CollArgs::movement(Coll::broadcast, nullptr, buf, count, dtype, root));
}
pg_status pg_reduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                    pg_dtype dtype, pg_op op, int root) {
  return blocking("pg_reduce", s, CollArgs::reduction(Coll::reduce, sendbuf, recvbuf, count, dtype, op, root));
}
pg_status pg_allgather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                       pg_dtype dtype) {
  return blocking("pg_allgather", s, CollArgs::movement(Coll::allgather, sendbuf, recvbuf, sendcount, dtype));
}
pg_status pg_reduce_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                            pg_dtype dtype, pg_op op) {
  return blocking("pg_reduce_scatter", s, CollArgs::reduction(Coll::reduce_scatter, sendbuf, recvbuf, recvcount, dtype, op));
}
pg_status pg_alltoall(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                      pg_dtype dtype) {
  return blocking("pg_alltoall", s, CollArgs::movement(Coll::alltoall, sendbuf, recvbuf, count, dtype));
}
pg_status pg_gather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                    pg_dtype dtype, int root) {
  return blocking("pg_gather", s, CollArgs::movement(Coll::gather, sendbuf, recvbuf, sendcount, dtype, root));
}
pg_status pg_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                     pg_dtype dtype, int root) {
  return blocking("pg_scatter", s, CollArgs::movement(Coll::scatter, sendbuf, recvbuf, recvcount, dtype, root));
}
pg_status pg_barrier(pg_strategy *s) { return blocking("pg_barrier", s, CollArgs{}); }
pg_status pg_send(pg_strategy *s, const void *buf, size_t count, pg_dtype dtype, int peer, int tag) {
  return blocking("pg_send", s, CollArgs::point_to_point(Coll::send, buf, nullptr, count, dtype, peer, tag));
}
pg_status pg_recv(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int peer, int tag) {
  return blocking("pg_recv", s, CollArgs::point_to_point(Coll::recv, nullptr, buf, count, dtype, peer, tag));
}
pg_status pg_sendrecv(pg_strategy *s, const void *sendbuf, size_t sendcount, int dest,
                      void *recvbuf, size_t recvcount, int source, pg_dtype dtype, int tag) {
  CollArgs a = CollArgs::point_to_point(Coll::sendrecv, sendbuf, recvbuf, sendcount, dtype, dest, tag);
  a.recv_count = recvcount;
  a.source = source;
  return blocking("pg_sendrecv", s, a);
}

pg_status pg_allgatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                        const size_t *recvcounts, const size_t *displs, pg_dtype dtype) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, displs};
  return blocking("pg_allgatherv", s, CollArgs::movement(Coll::allgatherv, sendbuf, recvbuf, sendcount, dtype), &v);
}
pg_status pg_reduce_scatterv(pg_strategy *s, const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                             pg_dtype dtype, pg_op op) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, nullptr};
  return blocking("pg_reduce_scatterv", s, CollArgs::reduction(Coll::reduce_scatterv, sendbuf, recvbuf, 0, dtype, op),
                  &v);
}
pg_status pg_alltoallv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                       void *recvbuf, const size_t *recvcounts, const size_t *rdispls, pg_dtype dtype) {
  const pg::VArrays v{sendcounts, sdispls, recvcounts, rdispls};
  return blocking("pg_alltoallv", s, CollArgs::movement(Coll::alltoallv, sendbuf, recvbuf, 0, dtype), &v);
}
pg_status pg_gatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                     const size_t *displs, pg_dtype dtype, int root) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, displs};
  return blocking("pg_gatherv", s, CollArgs::movement(Coll::gatherv, sendbuf, recvbuf, sendcount, dtype, root), &v);
}
pg_status pg_scatterv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                      void *recvbuf, size_t recvcount, pg_dtype dtype, int root) {
  const pg::VArrays v{sendcounts, displs, nullptr, nullptr};
  return blocking("pg_scatterv", s, CollArgs::movement(Coll::scatterv, sendbuf, recvbuf, recvcount, dtype, root), &v);
}

pg_status pg_iallreduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                        pg_dtype dtype, pg_op op, pg_work **work) {
  return nonblocking("pg_iallreduce", s, CollArgs::reduction(Coll::allreduce, sendbuf, recvbuf, count, dtype, op), work);
}
pg_status pg_ibroadcast(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int root,
                        pg_work **work) {
  return nonblocking("pg_ibroadcast", s, CollArgs::movement(Coll::broadcast, nullptr, buf, count, dtype, root), work);
}
pg_status pg_ireduce(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                     pg_dtype dtype, pg_op op, int root, pg_work **work) {
  return nonblocking("pg_ireduce", s, CollArgs::reduction(Coll::reduce, sendbuf, recvbuf, count, dtype, op, root), work);
}
pg_status pg_iallgather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                        pg_dtype dtype, pg_work **work) {
  return nonblocking("pg_iallgather", s, CollArgs::movement(Coll::allgather, sendbuf, recvbuf, sendcount, dtype), work);
}
pg_status pg_ireduce_scatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                             pg_dtype dtype, pg_op op, pg_work **work) {
  return nonblocking("pg_ireduce_scatter", s,
                     CollArgs::reduction(Coll::reduce_scatter, sendbuf, recvbuf, recvcount, dtype, op), work);
}
pg_status pg_ialltoall(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t count,
                       pg_dtype dtype, pg_work **work) {
  return nonblocking("pg_ialltoall", s, CollArgs::movement(Coll::alltoall, sendbuf, recvbuf, count, dtype), work);
}
pg_status pg_igather(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t sendcount,
                     pg_dtype dtype, int root, pg_work **work) {
  return nonblocking("pg_igather", s, CollArgs::movement(Coll::gather, sendbuf, recvbuf, sendcount, dtype, root), work);
}
pg_status pg_iscatter(pg_strategy *s, const void *sendbuf, void *recvbuf, size_t recvcount,
                      pg_dtype dtype, int root, pg_work **work) {
  return nonblocking("pg_iscatter", s, CollArgs::movement(Coll::scatter, sendbuf, recvbuf, recvcount, dtype, root), work);
}
pg_status pg_ibarrier(pg_strategy *s, pg_work **work) {
  return nonblocking("pg_ibarrier", s, CollArgs{}, work);
}
pg_status pg_iallgatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf,
                         const size_t *recvcounts, const size_t *displs, pg_dtype dtype, pg_work **work) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, displs};
  return nonblocking("pg_iallgatherv", s, CollArgs::movement(Coll::allgatherv, sendbuf, recvbuf, sendcount, dtype),
                     work, &v);
}
pg_status pg_ireduce_scatterv(pg_strategy *s, const void *sendbuf, void *recvbuf, const size_t *recvcounts,
                              pg_dtype dtype, pg_op op, pg_work **work) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, nullptr};
  return nonblocking("pg_ireduce_scatterv", s,
                     CollArgs::reduction(Coll::reduce_scatterv, sendbuf, recvbuf, 0, dtype, op), work, &v);
}
pg_status pg_ialltoallv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts, const size_t *sdispls,
                        void *recvbuf, const size_t *recvcounts, const size_t *rdispls, pg_dtype dtype,
                        pg_work **work) {
  const pg::VArrays v{sendcounts, sdispls, recvcounts, rdispls};
  return nonblocking("pg_ialltoallv", s, CollArgs::movement(Coll::alltoallv, sendbuf, recvbuf, 0, dtype), work, &v);
}
pg_status pg_igatherv(pg_strategy *s, const void *sendbuf, size_t sendcount, void *recvbuf, const size_t *recvcounts,
                      const size_t *displs, pg_dtype dtype, int root, pg_work **work) {
  const pg::VArrays v{nullptr, nullptr, recvcounts, displs};
  return nonblocking("pg_igatherv", s, CollArgs::movement(Coll::gatherv, sendbuf, recvbuf, sendcount, dtype, root),
                     work, &v);
}
pg_status pg_iscatterv(pg_strategy *s, const void *sendbuf, const size_t *sendcounts, const size_t *displs,
                       void *recvbuf, size_t recvcount, pg_dtype dtype, int root, pg_work **work) {
  const pg::VArrays v{sendcounts, displs, nullptr, nullptr};
  return nonblocking("pg_iscatterv", s, CollArgs::movement(Coll::scatterv, sendbuf, recvbuf, recvcount, dtype, root),
                     work, &v);
}
pg_status pg_isend(pg_strategy *s, const void *buf, size_t count, pg_dtype dtype, int peer, int tag,
                   pg_work **work) {
  return nonblocking("pg_isend", s, CollArgs::point_to_point(Coll::send, buf, nullptr, count, dtype, peer, tag), work);
}
pg_status pg_irecv(pg_strategy *s, void *buf, size_t count, pg_dtype dtype, int peer, int tag,
                   pg_work **work) {
  return nonblocking("pg_irecv", s, CollArgs::point_to_point(Coll::recv, nullptr, buf, count, dtype, peer, tag), work);
}

pg_status pg_work_wait(pg_work *w, double timeout_seconds) {
  return guarded("pg_work_wait", [&] {
    if (!w) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_work_wait: the work is NULL");
    if (std::isnan(timeout_seconds))
      return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_work_wait: the timeout is NaN; expected seconds, or < 0 to wait forever");
    // Beyond any real wait (and beyond what a clock can add without overflow): forever.
    if (timeout_seconds > 1e9) timeout_seconds = -1;
    return pg::work_wait(w, timeout_seconds);
  });
}

pg_status pg_work_test(pg_work *w, int *done) {
  return guarded("pg_work_test", [&] {
    if (!w || !done) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_work_test: the work or done is NULL");
    return pg::work_test(w, done);
  });
}

pg_status pg_work_source(pg_work *w, int *source) {
  return guarded("pg_work_source", [&] {
    if (!w || !source) return pg::fail(PG_ERR_INVALID_ARGUMENT, "pg_work_source: the work or source is NULL");
    return pg::work_source(w, source);
  });
}

pg_status pg_work_free(pg_work *w) {
  return guarded("pg_work_free", [&] { return w ? pg::work_free(w) : PG_OK; });
}

}  // extern "C"
