// Checking a call as it enters: under PGS_DEBUG=detail every rank compares
// what it was asked to run before a collective, so that a mismatch fails
// every rank instead of hanging MPI or NCCL; a receive from any source is
// checked against the backend that would serve it.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "core/watchdog.h"
#include "mpi/agree.h"
#include "util/dtype.h"
#include "util/keep_alive.h"
#include "util/status.h"

namespace pg {
namespace {

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
        if (!*done) s->engine.pass(false);
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
    case Coll::allreduce: case Coll::broadcast: case Coll::reduce: case Coll::allgather: case Coll::reduce_scatter:
    case Coll::alltoall: case Coll::gather: case Coll::scatter: case Coll::barrier: case Coll::send: case Coll::recv:
    case Coll::sendrecv:
      return fail(PG_ERR_INTERNAL, "pg_%s has no counts to check", coll_name(a.coll));
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

// A receive from any source goes to a backend that has one (checked as the
// call enters, before it is queued or issued, so that the caller learns at once).
pg_status check_source(pg_strategy *s, const CollArgs &a) {
  if (a.coll != Coll::recv || a.peer != PG_ANY_SOURCE) return PG_OK;
  const Instance *inst = instance_for(s, a.coll);
  if (inst->backend->receives_from_any()) return PG_OK;
  return fail(PG_ERR_UNSUPPORTED, "pg_recv: backend '%s' cannot receive from any source (PG_ANY_SOURCE); give the "
              "sender's rank, or use the mpi or fairring backend", inst->name.c_str());
}

}  // namespace

pg_status check_call(pg_strategy *s, const CollArgs &a, pg_status local, bool nonblocking) {
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

}  // namespace pg
