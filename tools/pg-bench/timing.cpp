#include "timing.h"

#include <algorithm>

namespace pgbench {
namespace {

unsigned char *offset(void *p, size_t bytes) { return static_cast<unsigned char *>(p) + bytes; }

// Where a call reads and writes, in pg_strategy.h's layouts.
struct Placement {
  void *input;   // filled before the checked call
  void *send;
  void *recv;
  void *result;  // what the check reads (layout.recv_bytes)
};

Placement place(const Layout &l, const BufferPair &buf, bool in_place, int rank, const UnevenCounts &u) {
  const auto r = static_cast<size_t>(rank);
  if (!in_place) return {buf.a, buf.a, buf.b, buf.b};
  switch (l.coll) {
    case Collective::Allgatherv: {
      void *mine = offset(buf.b, u.rd[r] * l.elem_size);
      return {mine, mine, buf.b, buf.b};
    }
    case Collective::ReduceScatterv: {
      void *mine = offset(buf.b, u.sd[r] * l.elem_size);
      return {buf.b, buf.b, mine, mine};
    }
    case Collective::Allgather: {
      void *mine = offset(buf.b, r * l.send_bytes);
      return {mine, mine, buf.b, buf.b};
    }
    case Collective::ReduceScatter: {
      void *mine = offset(buf.b, r * l.recv_bytes);
      return {buf.b, buf.b, mine, mine};
    }
    default:
      return {buf.b, buf.b, buf.b, buf.b};
  }
}

// Fills the call's input for the check; results start as the sentinel so a
// call that writes nothing is caught.
void prepare(Backend &b, const Layout &l, const Placement &p, bool in_place, const Checker &chk,
             std::vector<unsigned char> &stage) {
  const bool direct = b.host_accessible();
  const bool sentinel_first = !in_place || l.coll == Collective::Allgather || l.coll == Collective::Allgatherv;
  // Allgather in place: the whole result buffer gets the sentinel, then this
  // rank's block its input.
  if (sentinel_first) {
    if (direct) {
      Checker::fill_sentinel(p.result, l.recv_bytes);
    } else {
      Checker::fill_sentinel(stage.data(), l.recv_bytes);
      b.copy_in(p.result, stage.data(), l.recv_bytes);
    }
  }
  if (direct) {
    chk.fill_input(l, p.input);
  } else {
    chk.fill_input(l, stage.data());
    b.copy_in(p.input, stage.data(), l.send_bytes);
  }
}

unsigned long long wrong_here(Backend &b, const Layout &l, const Placement &p, const Checker &chk,
                              std::vector<unsigned char> &stage) {
  if (b.host_accessible()) return chk.count_wrong(l, p.result);
  b.copy_out(stage.data(), p.result, l.recv_bytes);
  return chk.count_wrong(l, stage.data());
}

// --fresh-input: one byte of every cache line written back as it is, so the
// line is modified in this rank's cache and any copy a peer's cache kept from
// the previous call is invalidated, as when a code computes its input anew.
void rewrite(void *input, size_t bytes) {
  volatile unsigned char *p = static_cast<unsigned char *>(input);
  for (size_t i = 0; i < bytes; i += 64) p[i] = p[i];
}

[[noreturn]] void fail(const Backend &b, const Layout &l, bool in_place, int rank,
                       const std::string &what) {
  throw Fatal("rank " + std::to_string(rank) + ": " + b.name() + " " + collective_name(l.coll) +
              " of " + std::to_string(l.bytes) + " bytes (" + (in_place ? "in-place" : "out-of-place") +
              ") failed after succeeding once: " + what);
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

Measurement measure_row(Backend &b, const BufferPair &buffers, const Layout &l, bool in_place,
                        const Options &opts, const Checker *checker, MPI_Comm comm,
                        std::vector<unsigned char> &stage, std::string *why_not) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const UnevenCounts u = is_uneven(l.coll) ? uneven_counts(l, rank) : UnevenCounts{};
  const Placement p = place(l, buffers, in_place, rank, u);
  Call call{l.coll, p.send, p.recv, l.call_count, opts.dtype, opts.op, /*root=*/0, in_place};
  if (is_uneven(l.coll)) {
    auto array = [](const std::vector<size_t> &v) { return v.empty() ? nullptr : v.data(); };
    call.sendcounts = array(u.sc), call.sdispls = array(u.sd), call.recvcounts = array(u.rc), call.rdispls = array(u.rd);
    call.count = l.coll == Collective::Allgatherv ? u.send : u.recv;  // allgatherv: sendcount; the others unused
  }
  const size_t input_bytes = is_uneven(l.coll) ? u.send * l.elem_size : l.send_bytes;
  Measurement m;
  if (!b.checked()) checker = nullptr;

  // First call: untimed, checked, and agreed on.
  if (checker) prepare(b, l, p, in_place, *checker, stage);
  std::string err = b.run(call);
  if (err.empty()) b.synchronize();
  err = agree_on_failure(comm, err);
  if (!err.empty()) {
    *why_not = err;
    return m;
  }
  if (checker) {
    const unsigned long long mine = wrong_here(b, l, p, *checker, stage);
    MPI_Allreduce(&mine, &m.wrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    m.checked = true;
  }

  for (int i = 0; i < opts.warmup; ++i) {
    err = b.run(call);
    if (!err.empty()) fail(b, l, in_place, rank, err);
  }
  b.synchronize();

  std::vector<double> local(static_cast<size_t>(opts.iters)), slowest(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    if (opts.fresh_input && b.host_accessible()) rewrite(p.input, input_bytes);
    err = b.barrier();
    if (!err.empty()) fail(b, l, in_place, rank, err);
    const double t0 = MPI_Wtime();
    err = b.run(call);
    b.synchronize();
    local[i] = MPI_Wtime() - t0;
    if (!err.empty()) fail(b, l, in_place, rank, err);
  }
  MPI_Allreduce(local.data(), slowest.data(), static_cast<int>(local.size()), MPI_DOUBLE, MPI_MAX,
                comm);
  m.time_us = median(slowest) * 1e6;
  m.ran = true;
  return m;
}

}  // namespace pgbench
