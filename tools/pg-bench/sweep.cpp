#include "sweep.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "timing.h"

namespace pgbench {
namespace {

// Rank 0's progress line on stderr: quiet for short sweeps, then at most one
// update every two seconds (in place on a terminal, one line each otherwise).
class Progress {
 public:
  Progress(bool enabled, size_t total) : enabled_(enabled), total_(total), start_(MPI_Wtime()) {
    tty_ = enabled && isatty(STDERR_FILENO);
  }
  void update(size_t done, int rep, int reps, Collective c, size_t bytes, const std::string &backend) {
    if (!enabled_) return;
    const double now = MPI_Wtime();
    if (now - start_ < 2.0 || now - last_ < 2.0) return;
    last_ = now;
    const double elapsed = now - start_;
    const double left = done ? elapsed * static_cast<double>(total_ - done) / static_cast<double>(done) : 0;
    std::fprintf(stderr, "%spg-bench: rep %d/%d %s %s %s: %zu/%zu rows, %.0f s elapsed, ~%.0f s left%s",
                 tty_ ? "\r" : "", rep + 1, reps, collective_name(c), human_bytes(bytes).c_str(),
                 backend.c_str(), done, total_, elapsed, left, tty_ ? "\033[K" : "\n");
    std::fflush(stderr);
    shown_ = true;
  }
  ~Progress() {
    if (shown_ && tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  bool tty_ = false;
  bool shown_ = false;
  size_t total_;
  double start_;
  double last_ = 0;
};

void *host_alloc(size_t bytes) {
  const size_t align = 4096;
  const size_t rounded = (bytes + align - 1) / align * align;
  void *p = std::aligned_alloc(align, rounded);
  if (!p) throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  std::memset(p, 0, rounded);  // touch every page before timing
  return p;
}

}  // namespace

std::vector<std::vector<Layout>> plan_layouts(const Options &opts, int nranks, size_t *max_bytes) {
  std::vector<std::vector<Layout>> plan;
  *max_bytes = 0;
  const size_t es = pg_dtype_size(opts.dtype);
  for (Collective c : opts.collectives) {
    std::vector<Layout> layouts;
    for (size_t bytes : sweep_sizes(opts)) {
      const Layout l = make_layout(c, bytes, es, nranks, opts.pattern);
      if (!layouts.empty() && layouts.back().bytes == l.bytes) continue;
      layouts.push_back(l);
      *max_bytes = std::max({*max_bytes, l.send_bytes, l.recv_bytes});
    }
    plan.push_back(layouts);
  }
  return plan;
}

Results run_sweep(const Options &opts, MPI_Comm comm, std::vector<std::unique_ptr<Backend>> &backends,
                  const std::function<void(const Results &, size_t, size_t)> &on_rows_done) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);

  Results res;
  res.collectives = opts.collectives;
  res.repetitions = opts.repetitions;
  res.nranks = nranks;
  size_t max_bytes = 0;
  res.layouts = plan_layouts(opts, nranks, &max_bytes);
  for (const auto &b : backends) {
    res.backends.push_back(b->name());
    res.copies_only.push_back(b->copies_only());
  }
  res.skipped.resize(res.collectives.size());
  res.data.resize(static_cast<size_t>(opts.repetitions));
  for (auto &rep : res.data) {
    rep.resize(res.collectives.size());
    for (size_t c = 0; c < rep.size(); ++c) {
      rep[c].resize(res.layouts[c].size());
      for (auto &size : rep[c]) size.assign(backends.size(), std::vector<Measurement>(2));
    }
  }

  // Buffers: one host pair shared by every backend that takes host memory,
  // one pair of its own for each backend that needs it (allocated in the same
  // order everywhere, since pg_mem_alloc is collective).
  bool any_shared = false;
  for (const auto &b : backends) any_shared = any_shared || !b->own_buffers();
  BufferPair shared;
  std::string failed;
  try {
    if (any_shared) shared = {host_alloc(max_bytes), host_alloc(max_bytes)};
  } catch (const Error &e) {
    failed = e.what();
  }
  // Every rank must agree before the collective allocations and the sweep.
  failed = agree_on_failure(comm, failed);
  if (!failed.empty()) throw Error(failed);
  std::vector<BufferPair> buffers(backends.size());
  for (size_t i = 0; i < backends.size(); ++i) {
    Backend &b = *backends[i];
    buffers[i] = b.own_buffers() ? BufferPair{b.alloc(max_bytes), b.alloc(max_bytes)} : shared;
  }
  std::vector<unsigned char> stage;
  for (const auto &b : backends)
    if (!b->host_accessible()) stage.resize(max_bytes);

  const Checker checker(opts.dtype, opts.op, rank, nranks, /*root=*/0);
  const Checker *chk = opts.check ? &checker : nullptr;

  // Which backends run which collective, decided once (the same on every rank).
  std::vector<std::vector<bool>> runs(res.collectives.size(), std::vector<bool>(backends.size(), true));
  size_t total = 0;
  for (size_t c = 0; c < res.collectives.size(); ++c)
    for (size_t i = 0; i < backends.size(); ++i) {
      const std::string why = backends[i]->unsupported(res.collectives[c], opts.dtype, opts.op);
      if (!why.empty()) {
        runs[c][i] = false;
        res.skipped[c].push_back(backends[i]->name() + ": " + why);
      } else {
        total += res.layouts[c].size() * (has_out_of_place(res.collectives[c]) ? 2 : 1);
      }
    }
  total *= static_cast<size_t>(opts.repetitions);

  Progress progress(rank == 0, total);
  size_t done = 0;
  for (int rep = 0; rep < opts.repetitions; ++rep) {
    for (size_t c = 0; c < res.collectives.size(); ++c) {
      const Collective coll = res.collectives[c];
      for (size_t s = 0; s < res.layouts[c].size(); ++s) {
        const Layout &l = res.layouts[c][s];
        for (size_t i = 0; i < backends.size(); ++i) {
          if (!runs[c][i]) continue;
          for (int ip = has_out_of_place(coll) ? 0 : 1; ip < 2; ++ip) {
            progress.update(done, rep, opts.repetitions, coll, l.bytes, backends[i]->name());
            std::string why;
            res.at(rep, c, s, i, ip) =
                measure_row(*backends[i], buffers[i], l, ip == 1, opts, chk, comm, stage, &why);
            ++done;
            if (!res.at(rep, c, s, i, ip).ran) {
              // The backend cannot run this collective: drop it for the rest.
              runs[c][i] = false;
              res.skipped[c].push_back(backends[i]->name() + ": " + why);
              break;
            }
          }
        }
        if (rep == opts.repetitions - 1) on_rows_done(res, c, s);
      }
    }
  }

  for (size_t i = 0; i < backends.size(); ++i)
    if (backends[i]->own_buffers()) {
      backends[i]->release(buffers[i].b);
      backends[i]->release(buffers[i].a);
    }
  std::free(shared.a);
  std::free(shared.b);
  return res;
}

}  // namespace pgbench
