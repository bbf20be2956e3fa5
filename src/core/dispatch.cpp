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
  if (st == PG_ERR_UNSUPPORTED && inst == s->primary.get() &&
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

void complete(pg_work *w, pg_status st, const std::string &error) {
  std::lock_guard<std::mutex> lock(w->mutex);
  w->status = st;
  if (st != PG_OK) w->error = error;
  w->finished = true;
  w->finished_cv.notify_all();
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

}  // namespace

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
    pg_status st = PG_ERR_UNSUPPORTED;
    CollArgs a = args;
    // A native start keeps the order only when nothing is queued before it.
    if (s->progress.idle() && !needs_stage(s, a)) {
      Instance *inst = nullptr;
      PG_CHECK(pick(s, a.coll, &inst));
      st = inst->backend->start(a, &w->native);
      if (st != PG_OK && st != PG_ERR_UNSUPPORTED) return poison_on_failure(s, st);
    }
    if (st == PG_ERR_UNSUPPORTED) {
      w->native.reset();
      stage_alltoall(s, &a, &w->stage);
      if (runtime::thread_level() == MPI_THREAD_MULTIPLE) {
        pg_work *raw = w.get();
        s->progress.submit([s, raw, a] {
          pg_status r = execute(s, a);
          complete(raw, r, last_error());
        });
      } else {
        pg_status r = execute(s, a);
        complete(w.get(), r, last_error());
      }
    }
  }
  s->works.insert(w.get());
  *out = w.release();
  return PG_OK;
}

pg_status work_wait(pg_work *w, double timeout_s) {
  if (w->native) {
    if (!w->finished) {
      pg_status st = PG_OK;
      bool done = false;
      if (timeout_s < 0) {
        st = w->native->wait();
        done = true;
      } else {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        while (true) {
          st = w->native->test(&done);
          if (done || st != PG_OK || std::chrono::steady_clock::now() >= deadline) break;
          std::this_thread::yield();
        }
        if (st != PG_OK) done = true;
      }
      if (!done)
        return fail(PG_ERR_TIMEOUT, "the work has not finished after %g s; wait again", timeout_s);
      if (w->strategy) poison_on_failure(w->strategy, st);
      complete(w, st, last_error());
    }
  } else {
    std::unique_lock<std::mutex> lock(w->mutex);
    auto finished = [w] { return w->finished; };
    if (timeout_s < 0) {
      w->finished_cv.wait(lock, finished);
    } else if (!w->finished_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), finished)) {
      return fail(PG_ERR_TIMEOUT, "the work has not finished after %g s; wait again", timeout_s);
    }
  }
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status work_test(pg_work *w, int *done) {
  pg_status st = work_wait(w, 0);
  *done = st != PG_ERR_TIMEOUT;
  return st == PG_ERR_TIMEOUT ? PG_OK : st;
}

pg_status work_free(pg_work *w) {
  int done = 0;
  work_test(w, &done);
  if (!done) return fail(PG_ERR_STATE, "the work has not finished; wait for it before freeing it");
  if (w->strategy) w->strategy->works.erase(w);
  delete w;
  return PG_OK;
}

}  // namespace pg
