#include "core/table_backend.h"

#include <mpi.h>

#include "util/log.h"
#include "util/status.h"

namespace pg {
namespace {

// Backends cannot set pg_last_error(), so the library words their failures,
// with the error lines the backend logged during the call.
pg_status checked(const pg_backend_ops &ops, const char *what, pg_status st,
                  const log::Capture &logged) {
  if (st == PG_OK || st == PG_ERR_UNSUPPORTED) return st;
  std::string why = logged.text().empty() ? "" : ": " + logged.text();
  if (!known_status(st))
    return fail(PG_ERR_BACKEND, "backend '%s': %s returned %d, which is not a pg_status%s",
                ops.name, what, static_cast<int>(st), why.c_str());
  return fail(st, "backend '%s': %s failed with %s%s", ops.name, what, status_name(st), why.c_str());
}

class TableRequest final : public Request {
 public:
  TableRequest(const pg_backend_ops &ops, void *state, void *request)
      : ops_(ops), state_(state), request_(request) {}
  ~TableRequest() override {
    // After MPI_Finalize the backend could only fail in MPI; its request is left.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) ops_.request_free(state_, request_);
  }
  pg_status test(bool *done) override {
    int finished = 0;
    log::Capture logged;
    pg_status st = ops_.test(state_, request_, &finished);
    *done = finished != 0 || st != PG_OK;
    return checked(ops_, "test", st, logged);
  }

 private:
  const pg_backend_ops &ops_;
  void *state_;
  void *request_;
};

class TableBackend final : public Backend {
 public:
  TableBackend(const pg_backend_ops &ops, void *state) : ops_(ops), state_(state) {}

  ~TableBackend() override {
    // After MPI_Finalize the backend could only fail in MPI; its state is left.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (ops_.destroy && !finalized && !abandoned_) ops_.destroy(state_);
  }

  void abandon() override { abandoned_ = true; }  // destroy is collective

  bool implements(Coll coll) const override {
    switch (coll) {
#define PG_TABLE_ENTRY(name, kinds) \
  case Coll::name: return ops_.name != nullptr;
#define PG_NO_TABLE_ENTRY(name, kinds) \
  case Coll::name: return false;
      PG_COLLECTIVES(PG_TABLE_ENTRY, PG_NO_TABLE_ENTRY)
#undef PG_TABLE_ENTRY
#undef PG_NO_TABLE_ENTRY
    }
    return false;
  }

  bool polls() const override { return false; }

  pg_status run(const CollArgs &a) override {
    log::Capture logged;
    pg_status st = PG_ERR_UNSUPPORTED;
    switch (a.coll) {
      case Coll::allreduce: st = ops_.allreduce(state_, a.send, a.recv, a.count, a.dtype, a.op); break;
      case Coll::broadcast: st = ops_.broadcast(state_, a.recv, a.count, a.dtype, a.root); break;
      case Coll::reduce: st = ops_.reduce(state_, a.send, a.recv, a.count, a.dtype, a.op, a.root); break;
      case Coll::allgather: st = ops_.allgather(state_, a.send, a.recv, a.count, a.dtype); break;
      case Coll::reduce_scatter:
        st = ops_.reduce_scatter(state_, a.send, a.recv, a.count, a.dtype, a.op);
        break;
      case Coll::alltoall: st = ops_.alltoall(state_, a.send, a.recv, a.count, a.dtype); break;
      case Coll::gather: st = ops_.gather(state_, a.send, a.recv, a.count, a.dtype, a.root); break;
      case Coll::scatter: st = ops_.scatter(state_, a.send, a.recv, a.count, a.dtype, a.root); break;
      case Coll::barrier: st = ops_.barrier(state_); break;
      case Coll::send: st = ops_.send(state_, a.send, a.count, a.dtype, a.peer, a.tag); break;
      case Coll::recv: st = ops_.recv(state_, a.recv, a.count, a.dtype, a.peer, a.tag); break;
      case Coll::sendrecv: break;
      case Coll::allgatherv:
        st = ops_.allgatherv(state_, a.send, a.count, a.recv, array(a.v->recv_counts), array(a.v->recv_displs), a.dtype);
        break;
      case Coll::reduce_scatterv:
        st = ops_.reduce_scatterv(state_, a.send, a.recv, array(a.v->recv_counts), a.dtype, a.op);
        break;
      case Coll::alltoallv:
        st = ops_.alltoallv(state_, a.send, array(a.v->send_counts), array(a.v->send_displs), a.recv,
                            array(a.v->recv_counts), array(a.v->recv_displs), a.dtype);
        break;
      case Coll::gatherv:
        st = ops_.gatherv(state_, a.send, a.count, a.recv, array(a.v->recv_counts), array(a.v->recv_displs), a.dtype,
                          a.root);
        break;
      case Coll::scatterv:
        st = ops_.scatterv(state_, a.send, array(a.v->send_counts), array(a.v->send_displs), a.recv, a.count, a.dtype,
                           a.root);
        break;
    }
    return checked(ops_, coll_name(a.coll), st, logged);
  }

  // An array of the call's counts, NULL where the call has none on this rank.
  static const std::size_t *array(const std::vector<std::size_t> &v) { return v.empty() ? nullptr : v.data(); }

  pg_status start(const CollArgs &a, std::unique_ptr<Request> *out) override {
    if (a.coll != Coll::allreduce || !ops_.iallreduce) return PG_ERR_UNSUPPORTED;
    void *request = nullptr;
    log::Capture logged;
    pg_status st = ops_.iallreduce(state_, a.send, a.recv, a.count, a.dtype, a.op, &request);
    if (st != PG_OK) return checked(ops_, "iallreduce", st, logged);
    *out = std::make_unique<TableRequest>(ops_, state_, request);
    return PG_OK;
  }

  pg_status set_stream(void *stream) override {
    if (!ops_.set_stream) return PG_ERR_UNSUPPORTED;
    log::Capture logged;
    return checked(ops_, "set_stream", ops_.set_stream(state_, stream), logged);
  }

 private:
  const pg_backend_ops &ops_;  // the registry's copy, never freed
  void *state_;
  bool abandoned_ = false;
};

}  // namespace

pg_status make_table_backend(const pg_backend_ops &ops, const pg_backend_context &ctx,
                             std::unique_ptr<Backend> *out) {
  void *state = nullptr;
  log::Capture logged;
  pg_status st = ops.create(&ctx, ops.user_data, &state);
  // UNSUPPORTED means "run elsewhere" only for operations; here it is a failure.
  if (st == PG_ERR_UNSUPPORTED) st = PG_ERR_BACKEND;
  if (st != PG_OK) return checked(ops, "create", st, logged);
  *out = std::make_unique<TableBackend>(ops, state);
  return PG_OK;
}

}  // namespace pg
