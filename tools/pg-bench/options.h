// Command-line options of pg-bench. Parsing is pure (no MPI), so every rank
// parses the same arguments to the same result and a bad flag stops every rank
// the same way, without communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives.h"
#include "pg_strategy.h"

namespace pgbench {

struct Options {
  size_t min_bytes = 8;
  size_t max_bytes = size_t{32} << 20;
  uint64_t factor = 2;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  pg_dtype dtype = PG_FLOAT32;
  pg_op op = PG_SUM;
  std::vector<Collective> collectives = {Collective::Allreduce};
  Pattern pattern = Pattern::Skewed;      // --pattern: how uneven collectives split a row
  std::vector<std::string> backends;  // empty: the defaults (see default_backends)
  std::string csv_path;
  bool mem_alloc = false;
  std::string device = "cpu";             // --device: where pgstrategy backends' buffers live
  int repetitions = 1;
  int load = 0;                           // --load: CPU-bound processes beside rank 0
  int pause_ms = 0;                       // --pause: sleep between the header and the sweep
  bool fresh_input = false;               // --fresh-input: inputs written again before each timed call
  bool bound = false;                     // --bound: the bound's rows, and each row's time against them
  std::string thread_level = "multiple";  // MPI thread level pg-bench asks for
  bool help = false;
};

// Parses argv[1..]. Returns "" on success, otherwise a message naming the flag,
// the value given and what is accepted.
std::string parse_options(int argc, char **argv, Options *out);

// The help text.
std::string usage_text();

// "8", "4K", "256M", "1G" (binary multiples; a trailing B or iB is allowed).
bool parse_size(const std::string &text, size_t *out);

// min, min*f, min*f^2, ... up to max.
std::vector<size_t> sweep_sizes(const Options &opts);

// 4096 -> "4 KiB"; 3000 -> "3000 B".
std::string human_bytes(size_t bytes);

}  // namespace pgbench
