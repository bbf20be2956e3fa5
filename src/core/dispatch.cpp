// Running operations: the PGS_DEBUG check, ordering with nonblocking work,
// delegation to the device default, poisoning, the watchdog, and works.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include "core/runtime.h"
#include "core/strategy.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "mpi/agree.h"
#include "util/dtype.h"
#include "util/keep_alive.h"
#include "util/poll.h"
#include "util/status.h"

namespace pg {
namespace {

// Collectives on zero elements have nothing to do (messages of zero elements
// still have to match, so point-to-point is not trivial; nor are the uneven
// collectives, whose other ranks may move data while this one has none).
bool trivial(const CollArgs &a) {
  return a.count == 0 && !is_point_to_point(a.coll) && a.coll != Coll::barrier && !is_uneven(a.coll);
}


// What every rank must agree on: the collective (a nonblocking twin, which does
// not match the blocking call, is named as such), its sequence number, and the
// arguments that shape it (op only for reductions, root only for rooted ones).
std::string fingerprint(const pg_strategy *s, const CollArgs &a, bool nonblocking) {
  std::string text = std::string(nonblocking ? "i" : "") + coll_name(a.coll) + " #" + std::to_string(s->sequence);
  if (a.coll == Coll::barrier) return text;
  // The uneven collectives' counts differ by rank: check_counts compares them.
  if (!is_uneven(a.coll)) text += " count=" + std::to_string(a.count);
  text += std::string(" dtype=") + dtype_name(a.dtype);
  if (is_reduction(a.coll)) text += std::string(" op=") + op_name(a.op);
  if (is_rooted(a.coll)) text += " root=" + std::to_string(a.root);
  return text;
}

// The ranks of s whose fingerprint has not arrived, as "1, 3".
std::string missing_ranks(const std::vector<MPI_Request> &receives) {
  std::string out;
  for (std::size_t r = 0; r < receives.size(); ++r)
    if (receives[r] != MPI_REQUEST_NULL) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

bool settle(pg_work *w, double timeout_s);
pg_status check_source(pg_strategy *s, const CollArgs &a);
bool drive(pg_work *w, double timeout_s);
void try_drive(pg_work *w);

// A work its starting thread moves: started natively, not adopted by a
// queued task, not finished.
bool moved_by_starter(const pg_work *w) { return w->native && !w->adopted && !w->finished; }

// The strategy's started native collectives that no queued task has adopted:
// a task queued now adopts them (it moves them to their end before it runs,
// and the caller's thread no longer tests them).
std::vector<pg_work *> adopt_started(pg_strategy *s) {
  std::vector<pg_work *> adopted;
  for (const auto &[order, w] : s->works)
    if (w->collective && moved_by_starter(w)) {
      w->adopted = true;
      adopted.push_back(w);
    }
  return adopted;
}

// Below MPI_THREAD_MULTIPLE with PGS_TIMEOUT there is no watchdog thread: the
// caller's own polls check the collective it has in flight.
Until polled_by_caller(pg_strategy *s) {
  Until until;
  if (s->settings.timeout_s > 0 && runtime::thread_level() < MPI_THREAD_MULTIPLE) {
    until.check = [s] { watchdog::abort_if_overdue(s, watchdog::own_marks(s).current()); };
  }
  return until;
}

// Lets the strategy's started nonblocking collectives move without waiting: a
// peer may be waiting for one of them before it comes to this collective.
void poke_started(pg_strategy *s) {
  for (const auto &[order, w] : s->works)
    if (w->collective && moved_by_starter(w)) try_drive(w);
}

// The calling thread becomes the one whose waits move s's works (a strategy
// may pass from thread to thread); not the progress thread.
void claim(pg_strategy *s) {
  const std::thread::id me = std::this_thread::get_id();
  if (s->driver.load(std::memory_order_relaxed) != me && !s->progress.on_thread())
    s->driver.store(me, std::memory_order_relaxed);
}

// The buffers and requests of one fingerprint exchange: MPI's until every
// request has finished.
struct FingerprintExchange {
  static constexpr int kSlot = 256;  // fingerprints are short
  explicit FingerprintExchange(std::size_t ranks)
      : out(kSlot, '\0'), in(ranks * kSlot, '\0'), receives(ranks, MPI_REQUEST_NULL), sends(ranks, MPI_REQUEST_NULL) {}
  bool active() const {
    auto live = [](MPI_Request r) { return r != MPI_REQUEST_NULL; };
    return std::any_of(receives.begin(), receives.end(), live) || std::any_of(sends.begin(), sends.end(), live);
  }
  std::vector<char> out, in;
  std::vector<MPI_Request> receives, sends;
};

// PGS_DEBUG=detail: every rank sends its fingerprint to every other rank point
// to point rather than in one allgather, so that while it waits it knows which
// peers have arrived (the watchdog names the others), and it polls, so that
// below MPI_THREAD_MULTIPLE the watchdog still runs.
pg_status post_and_wait(pg_strategy *s, const std::string &mine, FingerprintExchange &x) {
  constexpr int kSlot = FingerprintExchange::kSlot, kTag = 1;  // s->comm carries nothing else point to point
  std::copy_n(mine.data(), std::min<std::size_t>(mine.size(), kSlot - 1), x.out.begin());
  for (int r = 0; r < s->size; ++r) {
    if (r == s->rank) continue;
    PG_MPI_CHECK(MPI_Irecv(&x.in[r * kSlot], kSlot, MPI_CHAR, r, kTag, s->comm, &x.receives[r]));
    PG_MPI_CHECK(MPI_Isend(x.out.data(), kSlot, MPI_CHAR, r, kTag, s->comm, &x.sends[r]));
  }
  std::copy(x.out.begin(), x.out.end(), x.in.begin() + s->rank * kSlot);
  std::string missing = missing_ranks(x.receives);
  watchdog::Marks &marks = watchdog::own_marks(s);
  marks.set_missing(missing);
  bool arrived = false;
  PG_CHECK(poll(
      [&](bool *done) {
        for (MPI_Request &r : x.receives) {
          int received = 0;
          if (r != MPI_REQUEST_NULL) PG_MPI_CHECK(MPI_Test(&r, &received, MPI_STATUS_IGNORE));
        }
        const std::string now = missing_ranks(x.receives);
        if (now != missing) marks.set_missing(missing = now);
        int sent = 0;
        PG_MPI_CHECK(MPI_Testall(s->size, x.sends.data(), &sent, MPI_STATUSES_IGNORE));
        *done = missing.empty() && sent;
        if (!*done) poke_started(s);
        return PG_OK;
      },
      polled_by_caller(s), &arrived));
  marks.set_missing({});
  return PG_OK;
}

pg_status exchange_fingerprints(pg_strategy *s, const std::string &mine, std::vector<std::string> *all) {
  auto x = std::make_shared<FingerprintExchange>(static_cast<std::size_t>(s->size));
  const pg_status st = post_and_wait(s, mine, *x);
  // A wait that ended early (an abort, a failed peer) leaves requests that
  // MPI may still complete into these buffers.
  if (x->active()) keep_until_exit(x);
  PG_CHECK(st);
  all->clear();
  for (int r = 0; r < s->size; ++r) all->emplace_back(&x->in[static_cast<std::size_t>(r) * FingerprintExchange::kSlot]);
  return PG_OK;
}

// PGS_DEBUG=detail, an uneven collective whose arguments passed on every
// rank: what each rank sends to each peer against what that peer expects from
// it, in one alltoall of the counts sent. A pair that disagrees fails every
// rank (mismatched counts hang MPI and NCCL).
pg_status check_counts(pg_strategy *s, const CollArgs &a) {
  const std::size_t p = static_cast<std::size_t>(s->size), me = static_cast<std::size_t>(s->rank);
  const std::size_t root = static_cast<std::size_t>(a.root);
  const VCounts &v = *a.v;
  // What MPI reads and writes: kept until exit if the wait ends early.
  auto exchanged = std::make_shared<std::array<std::vector<std::uint64_t>, 2>>();
  std::vector<std::uint64_t> &sends = (*exchanged)[0] = std::vector<std::uint64_t>(p, 0);
  std::vector<std::uint64_t> &arriving = (*exchanged)[1] = std::vector<std::uint64_t>(p, 0);
  std::vector<std::uint64_t> expects(p, 0);
  switch (a.coll) {
    case Coll::allgatherv:
      std::fill(sends.begin(), sends.end(), a.count);
      std::copy(v.recv_counts.begin(), v.recv_counts.end(), expects.begin());
      break;
    case Coll::reduce_scatterv:
      std::copy(v.recv_counts.begin(), v.recv_counts.end(), sends.begin());
      std::fill(expects.begin(), expects.end(), a.count);
      break;
    case Coll::alltoallv:
      std::copy(v.send_counts.begin(), v.send_counts.end(), sends.begin());
      std::copy(v.recv_counts.begin(), v.recv_counts.end(), expects.begin());
      break;
    case Coll::gatherv:
      sends[root] = a.count;
      if (me == root) std::copy(v.recv_counts.begin(), v.recv_counts.end(), expects.begin());
      break;
    case Coll::scatterv:
      if (me == root) std::copy(v.send_counts.begin(), v.send_counts.end(), sends.begin());
      expects[root] = a.count;
      break;
    default:
      return PG_OK;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  PG_MPI_CHECK(MPI_Ialltoall(sends.data(), 1, MPI_UINT64_T, arriving.data(), 1, MPI_UINT64_T, s->comm, &request));
  PG_CHECK(poll_request(&request, exchanged));
  pg_status local = PG_OK;
  for (std::size_t q = 0; q < p && local == PG_OK; ++q)
    if (arriving[q] != expects[q])
      local = fail(PG_ERR_MISMATCH,
                   "pg_%s: rank %zu expects %llu elements from rank %zu, which sends %llu (PGS_DEBUG=detail)",
                   coll_name(a.coll), me, static_cast<unsigned long long>(expects[q]), q,
                   static_cast<unsigned long long>(arriving[q]));
  return agree(s->comm, local, local == PG_OK ? std::string() : last_error());
}

// The common entry checks of run and start. With PGS_DEBUG=detail every rank
// compares what it was asked to run before a collective; a mismatch, or a bad
// argument on any rank, fails every rank.
pg_status enter(pg_strategy *s, const CollArgs &a, pg_status local, bool nonblocking) {
  if (is_point_to_point(a.coll)) return local == PG_OK ? check_source(s, a) : local;
  ++s->sequence;
  if (!s->settings.debug_detail) return local;
  watchdog::Scope watched(s, a.coll, s->sequence);  // a rank that never arrives hangs the check itself
  const std::string local_message = local == PG_OK ? std::string() : last_error();
  std::vector<std::string> fingerprints;
  PG_CHECK(exchange_fingerprints(s, fingerprint(s, a, nonblocking), &fingerprints));
  PG_CHECK(compare_values(fingerprints, "the collective (PGS_DEBUG=detail)"));
  // Every rank has arrived: agreeing on the argument checks cannot hang.
  PG_CHECK(agree(s->comm, local, local_message));
  return is_uneven(a.coll) ? check_counts(s, a) : PG_OK;
}

// The instance an operation goes to: the device default for operations the
// backend lacks (made on first need), else the backend itself.
pg_status pick(pg_strategy *s, Coll coll, Instance **out) {
  if (delegates(s, coll)) {
    PG_CHECK(ensure_fallback(s));
    *out = s->fallback.get();
  } else {
    *out = s->primary.get();
  }
  return PG_OK;
}

// A receive from any source goes to a backend that has one (checked as the
// call enters, before it is queued or issued, so that the caller learns at once).
pg_status check_source(pg_strategy *s, const CollArgs &a) {
  if (a.coll != Coll::recv || a.peer != PG_ANY_SOURCE) return PG_OK;
  Instance *inst = nullptr;
  PG_CHECK(pick(s, a.coll, &inst));
  if (inst->backend->receives_from_any()) return PG_OK;
  return fail(PG_ERR_UNSUPPORTED, "pg_recv: backend '%s' cannot receive from any source (PG_ANY_SOURCE); give the "
              "sender's rank, or use the mpi or fairring backend", inst->name.c_str());
}

// In-place alltoall on CPU memory is staged into a copy, so CPU backends never
// see it; CUDA backends get it as it is (the copy would be device memory).
// The same for alltoallv: the blocks sendcounts and sdispls describe.
void stage_alltoall(const pg_strategy *s, CollArgs *a, std::vector<char> *stage) {
  if ((a->coll != Coll::alltoall && a->coll != Coll::alltoallv) || !a->in_place || s->device.cuda) return;
  const char *p = static_cast<const char *>(a->send);
  const std::size_t elements = a->coll == Coll::alltoall ? a->count * static_cast<std::size_t>(s->size)
                                                         : VCounts::extent(a->v->send_counts, a->v->send_displs);
  stage->assign(p, p + elements * dtype_size(a->dtype));
  a->send = stage->data();
  a->in_place = false;
}

pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a);

// Runs on `inst`. Below MPI_THREAD_MULTIPLE with PGS_TIMEOUT the watchdog polls
// in this thread, so the operation is started and tested rather than blocked on;
// a backend without a native start for it blocks, and the watchdog's own thread
// watches that call.
pg_status run_on(pg_strategy *s, Instance *inst, const CollArgs &a) {
  std::optional<watchdog::Unpolled> unpolled;
  if (s->settings.timeout_s > 0 && runtime::thread_level() < MPI_THREAD_MULTIPLE) {
    std::unique_ptr<Request> request;
    pg_status st = inst->backend->start(a, &request);
    if (st == PG_OK) {
      bool done = false;
      return poll([&](bool *d) { return request->test(d); }, polled_by_caller(s), &done);
    }
    if (st != PG_ERR_UNSUPPORTED) return st;
    unpolled.emplace(s);
  }
  if (a.coll == Coll::sendrecv && !inst->backend->implements(Coll::sendrecv)) return compose_sendrecv(s, a);
  return inst->backend->run(a);
}

// The one pick-or-delegate step: runs on the instance that serves the
// operation; a call the backend declines (PG_ERR_UNSUPPORTED before it
// communicated) runs on the device default instead, that call alone.
// Point-to-point is never delegated call by call: the peer would wait on the
// other communicator.
pg_status serve(pg_strategy *s, const CollArgs &a) {
  Instance *inst = nullptr;
  PG_CHECK(pick(s, a.coll, &inst));
  if (inst != s->primary.get()) trace::annotate_fallback();
  pg_status st = run_on(s, inst, a);
  if (st == PG_ERR_UNSUPPORTED && inst == s->primary.get() && !is_point_to_point(a.coll) &&
      s->selection.backend != default_backend(s->device)) {
    PG_CHECK(ensure_fallback(s));
    s->delegated.set(static_cast<int>(a.coll));
    inst = s->fallback.get();
    trace::annotate_fallback();
    st = run_on(s, inst, a);
  }
  if (st == PG_ERR_UNSUPPORTED)
    return fail(st, "backend '%s' does not run %s on %s (op %s) and no other backend can",
                inst->name.c_str(), coll_name(a.coll), dtype_name(a.dtype), op_name(a.op));
  return st;
}

// A staged input (stage_alltoall) that MPI may still read: a call that
// failed or was aborted may have left its sends to MPI.
void keep_stage_if_failed(pg_status st, std::vector<char> *stage) {
  if (st != PG_OK && !stage->empty()) keep_until_exit(std::make_shared<std::vector<char>>(std::move(*stage)));
}

// The blocking body shared by run and queued nonblocking work.
pg_status execute(pg_strategy *s, const CollArgs &args, std::uint64_t sequence) {
  CollArgs a = args;
  std::vector<char> stage;
  stage_alltoall(s, &a, &stage);
  watchdog::Scope watched(s, a.coll, sequence);
  const pg_status st = poison_on_failure(s, serve(s, a));
  keep_stage_if_failed(st, &stage);
  return st;
}

// A backend with send and recv but no sendrecv: the send goes asynchronously
// (progress thread at MPI_THREAD_MULTIPLE, else before the receive).
pg_status compose_sendrecv(pg_strategy *s, const CollArgs &a) {
  CollArgs send = a, recv = a;
  send.coll = Coll::send;
  recv.coll = Coll::recv;
  recv.count = a.recv_count;
  recv.peer = a.source;
  pg_work *w = nullptr;
  PG_CHECK(start(s, send, PG_OK, &w));
  pg_status st = execute(s, recv, s->sequence);
  pg_status sent = work_wait(w, -1);
  work_free(w);
  return st != PG_OK ? st : sent;
}

// A queued point-to-point operation started natively passes to its work once
// posted: MPI needs such operations posted in order, not finished in order,
// and one finished on the progress thread would hold back this rank's later
// calls, a peer's matching operation perhaps waiting for one of them (a send
// too large to go eagerly, a receive posted later). The thread that started
// it moves it from now on, as one started at once.
void hand_over(pg_strategy *s, pg_work *w, std::unique_ptr<Request> request) {
  std::lock_guard<std::mutex> works(s->works_mutex);
  std::lock_guard<std::mutex> lock(w->mutex);
  w->native = std::move(request);
  set_progress_hook(move_started_elsewhere);
  w->finished_cv.notify_all();  // a wait for the queued work now moves it itself
}

// The body of a nonblocking operation that could not start at once. It issues
// the same MPI calls as one started at once (the backend's native start, else
// its blocking entry), so whether this rank's queue was busy never changes what
// its peers must match. *request is left with what started natively.
pg_status start_queued(pg_strategy *s, const CollArgs &a, std::uint64_t sequence, std::unique_ptr<Request> *request) {
  if (s->aborted) return aborted();               // queued before pg_strategy_abort: in flight
  PG_CHECK(check_usable(coll_name(a.coll), s));  // queued work after a failure does not run
  Instance *inst = nullptr;
  PG_CHECK(pick(s, a.coll, &inst));
  if (inst != s->primary.get()) trace::annotate_fallback();
  const pg_status st = inst->backend->start(a, request);
  if (st == PG_ERR_UNSUPPORTED) {
    request->reset();
    return execute(s, a, sequence);
  }
  return poison_on_failure(s, st);
}

// A queued task: runs w's operation and completes w, or hands it over.
void execute_nonblocking(pg_strategy *s, pg_work *w, const CollArgs &a, std::uint64_t sequence) {
  std::unique_ptr<Request> request;
  pg_status st = start_queued(s, a, sequence, &request);
  if (st == PG_OK && request && is_point_to_point(a.coll)) return hand_over(s, w, std::move(request));
  if (st == PG_OK && request) {
    watchdog::Scope watched(s, a.coll, sequence);
    st = poison_on_failure(s, request->wait());
  }
  complete(w, st, last_error());
}

}  // namespace

// The progress hook (util/poll.h): a thread that waits moves the started
// works of every strategy it started them on (collectives and
// point-to-point), other strategies' and those beside the one it waits for.
// fairring's fast path and schedule move only when tested, and MPI's requests
// only while the process calls MPI (a rendezvous send waits for its sender);
// a peer may be waiting for one of them while this thread waits for that peer.
void move_started_elsewhere() {
  thread_local bool moving = false;
  if (moving) return;
  moving = true;
  const std::thread::id me = std::this_thread::get_id();
  runtime::for_each_live([me](pg_strategy *s) {
    if (s->driver.load(std::memory_order_relaxed) != me) return;
    // Another thread that has taken the strategy over may be changing its works.
    std::unique_lock<std::mutex> lock(s->works_mutex, std::try_to_lock);
    if (!lock.owns_lock()) return;
    CancelScope abortable(&s->aborted, s->alarm.get());  // that strategy's abort and alarm, not the wait's
    for (const auto &[order, w] : s->works)
      if (moved_by_starter(w)) try_drive(w);
  });
  moving = false;
}

void complete(pg_work *w, pg_status st, const std::string &error) {
  std::lock_guard<std::mutex> lock(w->mutex);
  if (w->finished) return;  // an aborted strategy's destroy got there first
  if (w->trace_seq && w->strategy && w->strategy->trace) w->strategy->trace->end(w->trace_seq, st);
  w->status = st;
  if (st != PG_OK) w->error = error;
  w->finished = true;
  w->finished_cv.notify_all();
}

// A backend failure poisons the strategy and raises its alarm, so that the
// peers stop waiting for this rank (a failure learned from a peer's alarm
// raises nothing more); the flight recorder dumps then, while the job may
// still be alive to tell.
pg_status poison_on_failure(pg_strategy *s, pg_status st) {
  if (st == PG_ERR_BACKEND && !s->health.poisoned()) {
    s->health.poison(last_error());
    s->alarm->raise(Alarm::Cause::failed, true);
    if (s->trace) trace::dump("poison");
  }
  return st;
}

pg_status check_peers(pg_strategy *s) { return poison_on_failure(s, s->alarm->check_node()); }

// The number a collective's flight-recorder entry shares with every rank.
std::uint64_t coll_seq(const pg_strategy *s, const CollArgs &a) {
  return is_point_to_point(a.coll) ? 0 : s->sequence;
}

namespace {

// Whether this thread has started works that have not finished, on any strategy.
bool thread_has_started_works() {
  bool any = false;
  const std::thread::id me = std::this_thread::get_id();
  runtime::for_each_live([&](pg_strategy *s) {
    if (any || s->driver.load(std::memory_order_relaxed) != me) return;
    std::lock_guard<std::mutex> lock(s->works_mutex);
    any = std::any_of(s->works.begin(), s->works.end(),
                      [](const auto &entry) { return moved_by_starter(entry.second); });
  });
  return any;
}

// A blocking call into a backend that does not poll (a table's) would leave
// the works this thread started unmoved while it runs, and a peer may wait for
// one of them before it comes to this call (a rendezvous send needs its
// sender to call MPI; a point-to-point work is not finished before a
// collective). At MPI_THREAD_MULTIPLE such a collective runs on the progress
// thread while this thread waits for it, moving them. (Not point-to-point:
// a composed sendrecv queues its send on that thread.)
bool run_beside(pg_strategy *s, const CollArgs &a) {
  // What the device default serves polls; picking it could make it (collectively).
  if (s->primary_polls || is_point_to_point(a.coll) || delegates(s, a.coll)) return false;
  return runtime::thread_level() == MPI_THREAD_MULTIPLE && thread_has_started_works();
}

pg_status execute_beside(pg_strategy *s, const CollArgs &a, std::uint64_t trace_seq) {
  pg_work w;  // the call's own, in no strategy's list
  const std::uint64_t sequence = s->sequence;
  s->progress.submit([s, &w, a, sequence, trace_seq] {
    CancelScope abortable(&s->aborted, s->alarm.get());
    trace::Current current(s->trace.get(), trace_seq);
    complete(&w, execute(s, a, sequence), last_error());
  });
  settle(&w, -1);
  { std::lock_guard<std::mutex> lock(w.mutex); }  // complete() lets go of it first
  return w.status == PG_OK ? PG_OK : fail_message(w.status, w.error);
}

}  // namespace

pg_status run(pg_strategy *s, const CollArgs &args, pg_status local) {
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status entered = enter(s, args, local, false);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args));
  if (entered != PG_OK || trivial(args)) return op.end(entered);
  // Blocking collectives run after the work started before them; blocking
  // point-to-point calls after the point-to-point work queued before them
  // has been posted (MPI matches in posting order).
  if (is_point_to_point(args.coll)) {
    s->progress.drain_point_to_point(move_started_elsewhere);
  } else {
    s->progress.drain(move_started_elsewhere);
    settle_started(s);
  }
  trace::Current current(s->trace.get(), op.seq());
  if (run_beside(s, args)) return op.end(execute_beside(s, args, op.seq()));
  return op.end(execute(s, args, s->sequence));
}

pg_status start(pg_strategy *s, const CollArgs &args, pg_status local, pg_work **out) {
  *out = nullptr;
  CancelScope abortable(&s->aborted, s->alarm.get());
  PG_CHECK(check_peers(s));
  const pg_status entered = enter(s, args, local, true);
  trace::Op op(s, static_cast<std::uint8_t>(args.coll), &args, coll_seq(s, args), trace::kNonblocking);
  if (entered != PG_OK) return op.end(entered);
  auto w = std::make_unique<pg_work>();
  w->strategy = s;
  if (trivial(args)) {
    w->finished = true;
    op.end(PG_OK);
  } else {
    // Its end is recorded when the work completes.
    w->trace_seq = op.seq();
    op.keep();
    trace::Current current(s->trace.get(), w->trace_seq);
    CollArgs a = args;
    stage_alltoall(s, &a, &w->stage);
    pg_status st = PG_ERR_UNSUPPORTED;
    // A native start keeps the order only when nothing is queued before it.
    if (s->progress.idle()) {
      Instance *inst = nullptr;
      st = pick(s, a.coll, &inst);
      if (st == PG_OK) {
        if (inst != s->primary.get()) trace::annotate_fallback();
        st = inst->backend->start(a, &w->native);
      }
      if (st != PG_OK && st != PG_ERR_UNSUPPORTED) {
        if (s->trace) s->trace->end(w->trace_seq, st);
        return poison_on_failure(s, st);
      }
      if (st == PG_OK) {
        if (!is_point_to_point(a.coll)) w->watch = {watchdog::now_ns(), s->sequence, a.coll};
        set_progress_hook(move_started_elsewhere);
      }
    }
    if (st == PG_ERR_UNSUPPORTED) {
      w->native.reset();
      // It runs after the works started natively before it, which it
      // finishes first: they may move only when tested (fairring's fast
      // path), and it may wait for them (a later operation of the same kind).
      const std::vector<pg_work *> before = adopt_started(s);
      pg_work *raw = w.get();
      const std::uint64_t sequence = s->sequence;
      auto body = [s, raw, a, sequence, before] {
        for (pg_work *earlier : before) drive(earlier, -1);
        execute_nonblocking(s, raw, a, sequence);
      };
      if (runtime::thread_level() == MPI_THREAD_MULTIPLE) {
        s->progress.submit([s, raw, body] {
          CancelScope abortable(&s->aborted, s->alarm.get());
          trace::Current current(s->trace.get(), raw->trace_seq);
          body();
        }, is_point_to_point(a.coll));
      } else {
        body();
      }
    }
  }
  w->order = s->works_started++;
  w->collective = !is_point_to_point(args.coll);
  claim(s);
  {
    std::lock_guard<std::mutex> lock(s->works_mutex);
    s->works.emplace(w->order, w.get());
  }
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
  Until until;
  until.timeout_s = timeout_s;
  if (watched) until.check = [s, w] { watchdog::abort_if_overdue(s, w->watch); };
  const pg_status st = poll([w](bool *d) { return w->native->test(d); }, until, done);
  if (st != PG_OK) *done = true;
  return st;
}

// Moves a native work on, until it finishes or `timeout_s` passes (< 0:
// until it finishes): true when it has finished. The thread that owns the
// work's request calls it (the caller's, or the progress thread once a queued
// task has adopted the work), or a wait of the thread that started it, one
// round (try_drive); w->driving is held meanwhile.
bool drive_held(pg_work *w, double timeout_s) {
  if (!w->finished && runtime::finalizing()) {
    // MPI may not be called any more: the request is given up, not tested
    // (destroying a request makes no MPI call once MPI is finalized).
    w->native.reset();
    complete(w, PG_ERR_STATE, "MPI was finalized before this work finished; it can no longer finish");
  }
  if (!w->finished) {
    bool done = false;
    pg_status st = poll_native(w, timeout_s, &done);
    if (!done) return false;
    if (w->strategy) poison_on_failure(w->strategy, st);
    w->source = w->native->source();
    complete(w, st, last_error());
  }
  return true;
}

// drive_held, once no other thread polls the work (another thread's wait may
// be making one round on it).
bool drive(pg_work *w, double timeout_s) {
  while (w->driving.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  const bool finished = drive_held(w, timeout_s);
  w->driving.store(false, std::memory_order_release);
  return finished;
}

// One round on a work that no thread polls now (a wait moving the thread's
// other works; the work this thread polls itself is left alone).
void try_drive(pg_work *w) {
  if (w->driving.exchange(true, std::memory_order_acquire)) return;
  drive_held(w, 0);
  w->driving.store(false, std::memory_order_release);
}

// Whether the calling thread moves w itself: started natively (at once, or
// handed over by its queued task) and not adopted by a queued task.
// Only a queued point-to-point work gets its request later, from the progress
// thread (hand_over): a collective's is set before the caller sees the work,
// so its waits and tests read it without the lock.
bool moved_here_locked(const pg_work *w) { return w->native && !w->adopted; }
bool moved_here(pg_work *w) {
  if (w->collective) return moved_here_locked(w);
  std::lock_guard<std::mutex> lock(w->mutex);
  return moved_here_locked(w);
}

// Brings w up to date, waiting up to `timeout_s` (< 0: until it finishes);
// true when it has finished. A work this thread does not move (queued, or
// adopted by a queued task) is waited for, while this thread moves its other
// works every 200 us: the progress thread may be waiting for a peer that
// waits for one of them.
bool settle(pg_work *w, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  constexpr std::chrono::microseconds kMoveEvery{200};
  const Clock::time_point deadline =
      timeout_s < 0 ? Clock::time_point::max()
                    : Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (true) {
    if (moved_here(w)) {
      if (timeout_s < 0) return drive(w, -1);
      return drive(w, std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()));
    }
    if (w->finished || Clock::now() >= deadline) return w->finished;
    move_started_elsewhere();
    std::unique_lock<std::mutex> lock(w->mutex);
    const Clock::time_point next = std::min(deadline, Clock::now() + kMoveEvery);
    w->finished_cv.wait_until(lock, next, [w] { return w->finished.load() || moved_here_locked(w); });
  }
}

// settle, after the collectives of its strategy started before w (works finish
// in start order; a rank waiting for a later one while its peers wait for an
// earlier one must not keep the earlier one from moving).
bool settle_in_order(pg_work *w, double timeout_s) {
  pg_strategy *s = w->strategy;
  if (!s || !w->collective) return settle(w, timeout_s);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s < 0 ? 0 : timeout_s);
  auto left = [&] {
    if (timeout_s < 0) return -1.0;
    const double d = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    return d > 0 ? d : 0.0;
  };
  for (const auto &[order, earlier] : s->works) {
    if (order >= w->order) break;
    if (earlier->collective && earlier->native && !earlier->finished && !settle(earlier, left())) return false;
  }
  return settle(w, left());
}

}  // namespace

void settle_started(pg_strategy *s) {
  for (const auto &[order, w] : s->works)
    if (w->collective && w->native && !w->finished) settle(w, -1);
}

pg_status work_wait(pg_work *w, double timeout_s) {
  pg_strategy *s = w->strategy;
  if (s) claim(s);
  CancelScope abortable(s ? &s->aborted : nullptr, s ? s->alarm.get() : nullptr);
  if (!settle_in_order(w, timeout_s))
    return fail(PG_ERR_TIMEOUT, "the work has not finished after %g s; wait again", timeout_s);
  return w->status == PG_OK ? PG_OK : fail_message(w->status, w->error);
}

pg_status work_test(pg_work *w, int *done) {
  pg_strategy *s = w->strategy;
  if (s) claim(s);
  CancelScope abortable(s ? &s->aborted : nullptr, s ? s->alarm.get() : nullptr);
  *done = settle_in_order(w, 0);  // an unfinished work is not a failure: the last error stays
  if (!*done || w->status == PG_OK) return PG_OK;
  return fail_message(w->status, w->error);
}

pg_status work_source(pg_work *w, int *source) {
  if (!w->finished) return fail(PG_ERR_STATE, "pg_work_source: the work has not finished; wait for it first");
  if (w->source < 0)
    return fail(PG_ERR_STATE, "pg_work_source: the work is not a receive whose sender is known");
  *source = w->source;
  return PG_OK;
}

pg_status work_free(pg_work *w) {
  if (!settle(w, 0)) return fail(PG_ERR_STATE, "the work has not finished; wait for it before freeing it");
  keep_stage_if_failed(w->status, &w->stage);
  if (w->strategy) {
    std::lock_guard<std::mutex> lock(w->strategy->works_mutex);
    w->strategy->works.erase(w->order);
  }
  // The thread that finished w may still be letting go of it: complete() of
  // its lock, drive() of w->driving.
  { std::lock_guard<std::mutex> lock(w->mutex); }
  while (w->driving.load(std::memory_order_acquire)) std::this_thread::yield();
  delete w;
  return PG_OK;
}

}  // namespace pg
