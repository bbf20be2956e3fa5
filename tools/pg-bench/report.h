// What rank 0 prints: nccl-tests-style rows (size, count, type, redop,
// backend, then time, algbw, busbw and #wrong out-of-place and in-place), a
// footer per collective with each backend's average busbw and its ratio to
// mpi-raw, and the CSV file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "options.h"
#include "sweep.h"

namespace pgbench {

class Report {
 public:
  Report(const Options &opts, FILE *out) : opts_(opts), out_(out) {}

  // Run-wide header: ranks, library versions, settings, backends and skips.
  void header(int nranks, const std::vector<std::string> &descriptions,
              const std::vector<std::string> &skipped_backends) const;
  // Rows of one (collective, size) once its last repetition is in; the
  // collective's column header before its first size, its footer after its last.
  void rows_done(const Results &res, size_t coll, size_t size) const;
  // Closing lines: wrong values in total.
  void summary(const Results &res) const;

 private:
  void table_header(const Results &res, size_t coll) const;
  void footer(const Results &res, size_t coll) const;
  size_t name_width(const Results &res) const;

  const Options &opts_;
  FILE *out_;
};

// Total of wrong elements over everything checked.
unsigned long long total_wrong(const Results &res);

// algbw (GB/s, 1e9 bytes) of a row that took time_us.
double algbw(size_t bytes, double time_us);

// The CSV: a header line, then one row per repetition, backend, collective,
// size and placement that ran. Returns false (errno set) on a write error.
bool write_csv(const Results &res, const Options &opts, FILE *f);
// The CSV's header line (without newline).
const char *csv_header();

}  // namespace pgbench
