#include "report.h"

#include <algorithm>
#include <cerrno>
#include <string>

#include "timing.h"

namespace pgbench {
namespace {

// An optional column: a space and `text` right-aligned in `width`, or
// nothing when it is not shown. The min-max of a row's time over
// repetitions (shown with -r > 1); its time over the bound's (with --bound).
constexpr int kSpreadWidth = 19, kBoundWidth = 8;
std::string optional_cell(bool shown, int width, const std::string &text) {
  if (!shown) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, " %*s", width, text.c_str());
  return buf;
}
std::string spread_cell(bool shown, const std::string &text) { return optional_cell(shown, kSpreadWidth, text); }
std::string bound_cell(bool shown, const std::string &text) { return optional_cell(shown, kBoundWidth, text); }

const char *redop_label(Collective c, pg_op op) { return is_reduction(c) ? pg_op_name(op) : "none"; }

std::string rstrip(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

std::string centered(const std::string &text, size_t width) {
  if (text.size() >= width) return text;
  const size_t left = (width - text.size()) / 2;
  return std::string(left, ' ') + text + std::string(width - text.size() - left, ' ');
}

// One line, tabs and runs of spaces squeezed ("MPICH Version:\t4.0.2" -> "MPICH Version: 4.0.2").
std::string one_line(const char *text) {
  std::string out;
  for (const char *p = text; *p && *p != '\n' && *p != '\r'; ++p) {
    const char c = *p == '\t' ? ' ' : *p;
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  return rstrip(out);
}

// One row over the repetitions: the median time, its spread, what was wrong.
struct Row {
  double time_us = 0, min_us = 0, max_us = 0;
  unsigned long long wrong = 0;
  bool checked = false;
};

// False when no repetition ran the row.
bool row_over_repetitions(const Results &res, size_t c, size_t s, size_t b, int ip, Row *row) {
  std::vector<double> times;
  *row = Row{};
  for (int r = 0; r < res.repetitions; ++r) {
    const Measurement &m = res.at(r, c, s, b, ip);
    if (!m.ran) continue;
    times.push_back(m.time_us);
    row->wrong += m.wrong;
    row->checked = row->checked || m.checked;
  }
  if (times.empty()) return false;
  row->time_us = median(times);
  row->min_us = *std::min_element(times.begin(), times.end());
  row->max_us = *std::max_element(times.begin(), times.end());
  return true;
}

// Per-size ratio to mpi-raw: median over repetitions of busbw(b) / busbw(mpi-raw),
// both measured in the same repetition. False when either is missing.
bool size_ratio(const Results &res, size_t c, size_t s, size_t b, size_t raw, int ip, double *ratio) {
  const double factors = res.busbw_factor(c, b) / res.busbw_factor(c, raw);
  std::vector<double> r;
  for (int rep = 0; rep < res.repetitions; ++rep) {
    const Measurement &x = res.at(rep, c, s, b, ip);
    const Measurement &y = res.at(rep, c, s, raw, ip);
    if (x.ran && y.ran && x.time_us > 0) r.push_back(y.time_us / x.time_us * factors);
  }
  if (r.empty()) return false;
  *ratio = median(r);
  return true;
}

// The bound's backend index (--bound), or res.backends.size() where it has no
// rows: it did not run, or collective c is not an allreduce.
size_t bound_index(const Results &res, size_t c) {
  if (res.collectives[c] != Collective::Allreduce) return res.backends.size();
  return static_cast<size_t>(std::find(res.backends.begin(), res.backends.end(), "bound") - res.backends.begin());
}

}  // namespace

double algbw(size_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / (time_us * 1e-6) / 1e9 : 0.0;
}

size_t Report::name_width(const Results &res) const {
  size_t w = 8;
  for (const auto &n : res.backends) w = std::max(w, n.size());
  return w;
}

void Report::header(int nranks, const std::vector<std::string> &descriptions,
                    const std::vector<std::string> &skipped_backends) const {
  int major = 0, minor = 0, patch = 0;
  pg_version(&major, &minor, &patch);
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  const std::string mpi_line = one_line(mpi);
  int provided = 0;
  MPI_Query_thread(&provided);
  const char *levels[] = {"single", "funneled", "serialized", "multiple"};
  const int level = provided == MPI_THREAD_MULTIPLE     ? 3
                    : provided == MPI_THREAD_SERIALIZED ? 2
                    : provided == MPI_THREAD_FUNNELED   ? 1
                                                        : 0;
  std::fprintf(out_, "# pg-bench, pgstrategy %d.%d.%d: %d ranks\n", major, minor, patch, nranks);
  std::fprintf(out_, "# MPI: %s (thread level %s)\n", mpi_line.c_str(), levels[level]);
  std::fprintf(out_, "# device %s, dtype %s, op %s, sizes %s to %s (x%llu), %d iterations after %d warm-up, %d repetition%s, check %s\n",
               opts_.device.c_str(), pg_dtype_name(opts_.dtype), pg_op_name(opts_.op), human_bytes(opts_.min_bytes).c_str(),
               human_bytes(opts_.max_bytes).c_str(), static_cast<unsigned long long>(opts_.factor),
               opts_.iters, opts_.warmup, opts_.repetitions, opts_.repetitions == 1 ? "" : "s",
               opts_.check ? "on" : "off");
  if (opts_.load > 0)
    std::fprintf(out_, "# load: %d CPU-bound process%s beside rank 0 for the whole sweep\n", opts_.load,
                 opts_.load == 1 ? "" : "es");
  if (opts_.fresh_input) std::fprintf(out_, "# inputs written again before each timed call (--fresh-input)\n");
  std::fprintf(out_, "# time: median over iterations of the slowest rank's time, each iteration after the backend's own barrier\n"
                     "#   (MPI_Barrier: mpi-raw, nccl-raw; pg_barrier: pgstrategy backends; gloo::barrier: gloo-raw; a flag round: bound)%s\n",
               opts_.repetitions > 1 ? "; rows: median over repetitions, min-max: the fastest and slowest repetition's time" : "");
  std::fprintf(out_, "# algbw = size / time; busbw = algbw * factor (allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; broadcast 1, root 0;\n"
                     "#   memcpy, memcpy-pinned: factor 1, bytes copied / time)\n");
  if (opts_.bound)
    std::fprintf(out_, "# x bound = time / the bound's time, same size and placement (the bound: an allreduce's data "
                       "movement in shared memory, copies and flag rounds only)\n");
  for (Collective c : opts_.collectives)
    if (is_uneven(c)) {
      std::fprintf(out_, "# uneven collectives: pattern %s (size: allgatherv's result, reduce_scatterv's input, what each "
                         "rank sends in alltoallv)\n", pattern_name(opts_.pattern));
      break;
    }
  for (const auto &d : descriptions) std::fprintf(out_, "# backend %s\n", d.c_str());
  for (const auto &s : skipped_backends) std::fprintf(out_, "# skipped %s\n", s.c_str());
  std::fflush(out_);
}

void Report::table_header(const Results &res, size_t c) const {
  const Collective coll = res.collectives[c];
  const int w = static_cast<int>(name_width(res));
  const bool spread = res.repetitions > 1;
  const bool bound = bound_index(res, c) < res.backends.size();
  const int block = 36 + (spread ? 1 + kSpreadWidth : 0) + (bound ? 1 + kBoundWidth : 0);
  std::fprintf(out_, "#\n# %s (busbw factor %.3f on %d ranks)\n", collective_name(coll),
               busbw_factor(coll, res.nranks), res.nranks);
  // Each placement's block is `block` columns wide, after 44 + w columns of row key.
  std::fprintf(out_, "#%*s%s%s\n", 44 + w, "", centered("out-of-place", block).c_str(),
               rstrip(centered("in-place", block)).c_str());
  std::string names, units;
  for (int ip = 0; ip < 2; ++ip) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "  %10s%s %7s %7s %7s%s", "time", spread_cell(spread, "min-max").c_str(), "algbw",
                  "busbw", "#wrong", bound_cell(bound, "x bound").c_str());
    names += buf;
    std::snprintf(buf, sizeof buf, "  %10s%s %7s %7s %7s%s", "(us)", spread_cell(spread, "(us)").c_str(), "(GB/s)",
                  "(GB/s)", "", bound_cell(bound, "(time)").c_str());
    units += buf;
  }
  std::fprintf(out_, "#%12s %12s %9s %7s %*s%s\n", "size", "count", "type", "redop", w, "backend", names.c_str());
  char key[128];
  std::snprintf(key, sizeof key, "#%12s %12s %9s %7s %*s", "(B)", "(elements)", "", "", w, "");
  std::fprintf(out_, "%s\n", rstrip(key + units).c_str());
}

void Report::rows_done(const Results &res, size_t c, size_t s) const {
  if (s == 0) table_header(res, c);
  const Collective coll = res.collectives[c];
  const Layout &l = res.layouts[c][s];
  const int w = static_cast<int>(name_width(res));
  const bool spread = res.repetitions > 1;
  const size_t bound = bound_index(res, c);
  const bool bounded = bound < res.backends.size();
  for (size_t b = 0; b < res.backends.size(); ++b) {
    std::string cells;
    bool any = false;
    for (int ip = 0; ip < 2; ++ip) {
      Row row, limit;
      char range[64], times[32] = "-", buf[192];
      if (row_over_repetitions(res, c, s, b, ip, &row)) {
        any = true;
        const double alg = algbw(l.bytes, row.time_us);
        std::snprintf(range, sizeof range, "%.2f-%.2f", row.min_us, row.max_us);
        if (bounded && row_over_repetitions(res, c, s, bound, ip, &limit) && limit.time_us > 0)
          std::snprintf(times, sizeof times, "%.2f", row.time_us / limit.time_us);
        std::snprintf(buf, sizeof buf, "  %10.2f%s %7.2f %7.2f %7s%s", row.time_us, spread_cell(spread, range).c_str(),
                      alg, alg * res.busbw_factor(c, b), row.checked ? std::to_string(row.wrong).c_str() : "N/A",
                      bound_cell(bounded, times).c_str());
      } else {
        std::snprintf(buf, sizeof buf, "  %10s%s %7s %7s %7s%s", "-", spread_cell(spread, "-").c_str(), "-", "-", "-",
                      bound_cell(bounded, "-").c_str());
      }
      cells += buf;
    }
    if (!any) continue;
    std::fprintf(out_, " %12zu %12zu %9s %7s %*s%s\n", l.bytes, l.count, pg_dtype_name(opts_.dtype),
                 redop_label(coll, opts_.op), w, res.backends[b].c_str(), cells.c_str());
  }
  std::fflush(out_);
  if (s + 1 == res.layouts[c].size()) footer(res, c);
}

void Report::footer(const Results &res, size_t c) const {
  const Collective coll = res.collectives[c];
  size_t raw = res.backends.size();
  for (size_t b = 0; b < res.backends.size(); ++b)
    if (res.backends[b] == "mpi-raw") raw = b;
  const int w = static_cast<int>(name_width(res));
  for (const auto &s : res.skipped[c]) std::fprintf(out_, "# %s skipped for %s\n", collective_name(coll), s.c_str());
  std::fprintf(out_, "#\n# %s summary over %zu sizes: average busbw (out-of-place and in-place rows);\n",
               collective_name(coll), res.layouts[c].size());
  if (raw < res.backends.size())
    std::fprintf(out_,
                 "# ratio = median over sizes of busbw / mpi-raw busbw (per size: median over %d repetition%s,\n"
                 "# each ratio from the same repetition)%s; time ratio = its inverse\n",
                 res.repetitions, res.repetitions == 1 ? "" : "s",
                 res.repetitions < 5 ? " — use -r 5 or more before quoting ratios" : "");
  std::fprintf(out_, "#  %-*s %16s %10s %10s %10s %10s\n", w, "backend", "avg busbw", "ratio oop",
               "ratio ip", "time oop", "time ip");
  for (size_t b = 0; b < res.backends.size(); ++b) {
    double sum = 0;
    size_t n = 0;
    std::vector<double> ratios[2];
    for (size_t s = 0; s < res.layouts[c].size(); ++s)
      for (int ip = 0; ip < 2; ++ip) {
        double r = 0;
        Row row;
        if (row_over_repetitions(res, c, s, b, ip, &row)) {
          sum += algbw(res.layouts[c][s].bytes, row.time_us) * res.busbw_factor(c, b);
          ++n;
        }
        if (raw < res.backends.size() && size_ratio(res, c, s, b, raw, ip, &r))
          ratios[ip].push_back(r);
      }
    if (n == 0) continue;
    char cols[4][32];
    for (int ip = 0; ip < 2; ++ip) {
      if (ratios[ip].empty()) {
        std::snprintf(cols[ip], sizeof cols[ip], "%s", "-");
        std::snprintf(cols[2 + ip], sizeof cols[2 + ip], "%s", "-");
      } else {
        const double r = median(ratios[ip]);
        std::snprintf(cols[ip], sizeof cols[ip], "%.3f", r);
        std::snprintf(cols[2 + ip], sizeof cols[2 + ip], "%.3f", r > 0 ? 1.0 / r : 0.0);
      }
    }
    std::fprintf(out_, "#  %-*s %9.3f GB/s %10s %10s %10s %10s\n", w, res.backends[b].c_str(),
                 sum / static_cast<double>(n), cols[0], cols[1], cols[2], cols[3]);
  }
  std::fflush(out_);
}

void Report::summary(const Results &res) const {
  std::fprintf(out_, "#\n");
  if (!opts_.check)
    std::fprintf(out_, "# Wrong values: not checked (-c 0)\n");
  else
    std::fprintf(out_, "# Wrong values: %llu %s\n", total_wrong(res), total_wrong(res) ? "FAILED" : "OK");
  std::fflush(out_);
}

unsigned long long total_wrong(const Results &res) {
  unsigned long long n = 0;
  for (const auto &rep : res.data)
    for (const auto &coll : rep)
      for (const auto &size : coll)
        for (const auto &b : size)
          for (const auto &m : b) n += m.wrong;
  return n;
}

const char *csv_header() {
  return "backend,collective,bytes,count,dtype,op,in_place,time_us,algbw,busbw,wrong,rep,nranks";
}

bool write_csv(const Results &res, const Options &opts, FILE *f) {
  errno = 0;
  std::fprintf(f, "%s\n", csv_header());
  for (int rep = 0; rep < res.repetitions; ++rep)
    for (size_t c = 0; c < res.collectives.size(); ++c) {
      const Collective coll = res.collectives[c];
      for (size_t s = 0; s < res.layouts[c].size(); ++s) {
        const Layout &l = res.layouts[c][s];
        for (size_t b = 0; b < res.backends.size(); ++b)
          for (int ip = 0; ip < 2; ++ip) {
            const Measurement &m = res.at(rep, c, s, b, ip);
            if (!m.ran) continue;
            const double alg = algbw(l.bytes, m.time_us);
            std::fprintf(f, "%s,%s,%zu,%zu,%s,%s,%d,%.3f,%.6g,%.6g,%s,%d,%d\n", res.backends[b].c_str(),
                         collective_name(coll), l.bytes, l.count, pg_dtype_name(opts.dtype),
                         redop_label(coll, opts.op), ip, m.time_us, alg, alg * res.busbw_factor(c, b),
                         m.checked ? std::to_string(m.wrong).c_str() : "", rep, res.nranks);
          }
      }
    }
  return std::fflush(f) == 0 && !std::ferror(f);
}

}  // namespace pgbench
