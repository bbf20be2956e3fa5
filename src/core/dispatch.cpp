// Running operations: the PGS_DEBUG check, ordering with nonblocking work,
// delegation to the device default, poisoning, the watchdog, and works.
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "core/agree.h"
#include "core/dtype.h"
#include "core/runtime.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/watchdog.h"

namespace pg {
namespace {

bool is_p2p(Coll c) { return c == Coll::send || c == Coll::recv || c == Coll::sendrecv; }

// Collectives on zero elements have nothing to do (messages of zero elements
// still have to match, so point-to-point is not trivial).
bool trivial(const CollArgs &a) { return a.count == 0 && !is_p2p(a.coll) && a.coll != Coll::barrier; }

pg_status check_usable(pg_strategy *s) {
  if (runtime::finalizing())
    return fail(PG_ERR_STATE, "MPI has been finalized; only pg_strategy_destroy is allowed");
  if (s->poisoned)
    return fail(PG_ERR_STATE, "the strategy is unusable after an earlier failure (%s); destroy it",
                s->poison_reason.c_str());
  return PG_OK;
}

pg_status poison_on_failure(pg_strategy *s, pg_status st) {
  if (st == PG_ERR_BACKEND && !s->poisoned) {
    s->poison_reason = last_error();
    s->poisoned = true;
  }
  return st;
}

// What every rank must agree on: the collective, its sequence number, and the
// arguments that shape it (op only for reductions, root only for rooted ones).
std::string fingerprint(const pg_strategy *s, const CollArgs &a) {
  std::string text = std::string(coll_name(a.coll)) + " #" + std::to_string(s->sequence);
  if (a.coll == Coll::barrier) return text;
  text += " count=" + std::to_string(a.count) + " dtype=" + dtype_name(a.dtype);
  if (a.coll == Coll::allreduce || a.coll == Coll::reduce || a.coll == Coll::reduce_scatter)
    text += std::string(" op=") + op_name(a.op);
  if (a.coll == Coll::broadcast || a.coll == Coll::reduce || a.coll == Coll::gather ||
      a.coll == Coll::scatter)
    text += " root=" + std::to_string(a.root);
  return text;
}

// PGS_DEBUG=detail: before a collective every rank compares what it was asked
// to run; a mismatch, or a bad argument on any rank, fails every rank.
pg_status debug_check(pg_strategy *s, const CollArgs &a, pg_status local) {
  std::string local_message = local == PG_OK ? std::string() : last_error();
  PG_CHECK(agree_same(s->comm, fingerprint(s, a), "the collective (PGS_DEBUG=detail)"));
  return agree(s->comm, local, local_message);
}

// The common entry checks of run and start.
pg_status enter(pg_strategy *s, const CollArgs &a, pg_status local) {
  PG_CHECK(check_usable(s));
  if (is_p2p(a.coll)) return local;
  ++s->sequence;
  if (!s->settings.debug_detail) return local;
  watchdog::begin(s, a.coll);  // a rank that never arrives hangs the check itself
  pg_status st = debug_check(s, a, local);
  watchdog::end(s);
  return st;
}

// The instance an operation goes to.
pg_status pick(pg_strategy *s, Coll coll, Instance **out) {
  if (delegates(s, coll)) {
    PG_CHECK(ensure_fallback(s));
    *out = s->fallback.get();
  } else {
    *out = s->primary.get();
  }
  return PG_OK;
}

// In-place alltoall on CPU memory is staged into a copy, so CPU backends never
// see it; CUDA backends get it as it is (the copy would be device memory).
bool needs_stage(const pg_strategy *s, const CollArgs &a) {
  return a.coll == Coll::alltoall && a.send == a.recv && !s->device.cuda;
}

inline void stage_alltoall(const pg_strategy *s, CollArgs *a, std::vector<char> *stage) {
  if (!needs_stage(s, *a)) return;
  const char *p = static_cast<const char *>(a->send);
  stage->assign(p, p + a->count * dtype_size(a->dtype) * static_cast<std::size_t>(s->size));
  a->send = stage->data();
}

pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a);

// Runs on `inst`, polling for the watchdog in this thread below MPI_THREAD_MULTIPLE.
pg_status run_on(pg_strategy *s, Instance *inst, const CollArgs &a) {
  if (s->settings.timeout_s > 0 && runtime::thread_level() < MPI_THREAD_MULTIPLE) {
    std::unique_ptr<Request> request;
    pg_status st = inst->backend->start(a, &request);
    if (st == PG_OK) {
      bool done = false;
      while (true) {
        st = request->test(&done);
        if (done || st != PG_OK) return st;
        if (watchdog::expired(s)) watchdog::abort_job(s);
        std::this_thread::yield();
      }
    }
    if (st != PG_ERR_UNSUPPORTED) return st;
  }
  if (a.coll == Coll::sendrecv && !inst->backend->implements(Coll::sendrecv)) return compose_sendrecv(s, a);
  return inst->backend->run(a);
}

// The blocking body shared by run and queued nonblocking work.
pg_status execute(pg_strategy *s, const CollArgs &args) {
  CollArgs a = args;
  std::vector<char> stage;
  stage_alltoall(s, &a, &stage);
  Instance *inst = nullptr;
  PG_CHECK(pick(s, a.coll, &inst));
  const bool watched = s->settings.timeout_s > 0 && !is_p2p(a.coll);
  if (watched) watchdog::begin(s, a.coll);
  pg_status st = run_on(s, inst, a);
  // Point-to-point is never delegated call by call: the peer would wait on the
  // other communicator.
  if (st == PG_ERR_UNSUPPORTED && inst == s->primary.get() && !is_p2p(a.coll) &&
      s->selection.backend != default_backend(s->device)) {
    // The backend declined before communicating: the device default runs it.
    st = ensure_fallback(s);
    if (st == PG_OK) {
      s->delegated.set(static_cast<int>(a.coll));
      st = run_on(s, s->fallback.get(), a);
    }
  }
  if (watched) watchdog::end(s);
  if (st == PG_ERR_UNSUPPORTED)  // declined, and nothing left to delegate to
    fail(st, "backend '%s' does not run %s on %s (op %s) and no other backend can", inst->name.c_str(),
         coll_name(a.coll), dtype_name(a.dtype), op_name(a.op));
  return poison_on_failure(s, st);
}

// A backend with send and recv but no sendrecv: the send goes asynchronously
// (progress thread at MPI_THREAD_MULTIPLE, else before the receive).
pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a) {
  CollArgs send = a, recv = a;
  send.coll = Coll::send;
  recv.coll = Coll::recv;
  recv.count = a.recv_count;
  recv.root = a.source;
  pg_work *w = nullptr;
  PG_CHECK(start(s, send, PG_OK, &w));
  pg_status st = execute(s, recv);
  pg_status sent = work_wait(w, -1);
  work_free(w);
  return st != PG_OK ? st : sent;
}

// The body of a nonblocking operation that could not start at once. It issues
// the same MPI calls as one started at once (the backend's native start, else
// its blocking entry), so whether this rank's queue was busy never changes what
// its peers must match.
pg_status execute_nonblocking(pg_strategy *s, const CollArgs &a) {
  PG_CHECK(check_usable(s));  // queued work after a failure does not run
  Instance *inst = nullptr;
  PG_CHECK(pick(s, a.coll, &inst));
  std::unique_ptr<Request> request;
  pg_status st = inst->backend->start(a, &request);
  if (st == PG_ERR_UNSUPPORTED) return execute(s, a);
  const bool watched = s->settings.timeout_s > 0 && !is_p2p(a.coll);
  if (watched) watchdog::begin(s, a.coll);
  if (st == PG_OK) st = request->wait();
  if (watched) watchdog::end(s);
  return poison_on_failure(s, st);
}

}  // namespace

void complete(pg_work *w, pg_status st, const std::string &error) {
  std::lock_guard<std::mutex> lock(w->mutex);
  w->status = st;
  if (st != PG_OK) w->error = error;
  w->finished = true;
  w->finished_cv.notify_all();
}

pg_status run(pg_strategy *s, const CollArgs &args, pg_status local) {
  PG_CHECK(enter(s, args, local));
  if (trivial(args)) return PG_OK;
  s->progress.drain();  // blocking calls run after the work started before them
  return execute(s, args);
}

pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out) {
  *out = nullptr;
  PG_CHECK(enter(s, args, local));
  auto w = std::make_unique<pg_work>();
  w->strategy = s;
  if (trivial(args)) {
    w->finished = true;
  } else {
    CollArgs a = args;
    stage_alltoall(s, &a, &w->stage);
    pg_status st = PG_ERR_UNSUPPORTED;
    // A native start keeps the order only when nothing is queued before it.
    if (s->progress.idle()) {
      Instance *inst = nullptr;
      PG_CHECK(pick(s, a.coll, &inst));
      st = inst->backend->start(a, &w->native);
      if (st != PG_OK && st != PG_ERR_UNSUPPORTED) return poison_on_failure(s, st);
      if (st == PG_OK && !is_p2p(a.coll)) w->watch = {watchdog::now_ns(), s->sequence, a.coll};
    }
    if (st == PG_ERR_UNSUPPORTED) {
      w->native.reset();
      if (runtime::thread_level() == MPI_THREAD_MULTIPLE) {
        pg_work *raw = w.get();
        s->progress.submit([s, raw, a] { complete(raw, execute_nonblocking(s, a), last_error()); });
      } else {
        complete(w.get(), execute_nonblocking(s, a), last_error());
      }
    }
  }
  s->works.insert(w.get());
  *out = w.release();
  return PG_OK;
}

namespace {

// Polls a native work until it finishes or `timeout_s` passes (< 0: forever).
// With PGS_TIMEOUT the watchdog's deadline applies too. Sets *done.
pg_status poll_native(pg_work *w, double timeout_s, bool *done) {
  pg_strategy *s = w->strategy;
  const bool watched = s && s->settings.timeout_s > 0 && w->watch.started_ns != 0;
  if (timeout_s < 0 && !watched) {
    *done = true;
    return w->native->wait();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    pg_status st = w->native->test(done);
    if (*done || st != PG_OK) {
      *done = true;
      return st;
    }
    if (watched && watchdog::overdue(s, w->watch)) watchdog::abort_job(s, w->watch);
    if (timeout_s >= 0 && std::chrono::steady_clock::now() >= deadline) return PG_OK;
    std::this_thread::yield();
  }
}

// Brings w up to date without waiting; true when it has finished.
bool settle(pg_work *w, double timeout_s) {
  if (w->native) {
    if (!w->finished) {
      bool done = false;
      pg_status st = poll_native(w, timeout_s, &done);
      if (!done) return false;
      if (w->strategy) poison_on_failure(w->strategy, st);
      complete(w, st, last_error());
    }
    return true;
  }
  std::unique_lock<std::mutex> lock(w->mutex);
  auto finished = [w] { return w->finished; };
  if (timeout_s < 0) {
    w->finished_cv.wait(lock, finished);
    return true;
  }
  return w->finished_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), finished);
}

}  // namespace

pg_status work_wait(pg_work *w, double timeout_s) {
  if (!settle(w, timeout_s))
    return fail(PG_ERR_TIMEOUT, "the work has not finished after %g s; wait again", timeout_s);
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status work_test(pg_work *w, int *done) {
  *done = settle(w, 0);  // an unfinished work is not a failure: the last error stays
  if (!*done || w->status == PG_OK) return PG_OK;
  return fail_message(w->status, w->error);
}

pg_status work_free(pg_work *w) {
  if (!settle(w, 0)) return fail(PG_ERR_STATE, "the work has not finished; wait for it before freeing it");
  if (w->strategy) w->strategy->works.erase(w);
  delete w;
  return PG_OK;
}

}  // namespace pg
