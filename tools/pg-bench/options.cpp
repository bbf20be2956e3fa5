#include "options.h"

#include <getopt.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <string_view>

#include "util/text.h"  // header-only string helpers

namespace pgbench {
namespace {

bool parse_int(const std::string &text, long min, long max, long *out) {
  long v = 0;
  if (!pg::text::parse_number(text, &v) || v < min || v > max) return false;
  *out = v;
  return true;
}

// Every value of an enum that counts from 0 (pg_dtype, pg_op): those the
// library has a name for.
template <typename T>
std::vector<T> every(const char *(*name)(T)) {
  std::vector<T> all;
  for (int v = 0; std::string_view(name(static_cast<T>(v))) != "invalid"; ++v) all.push_back(static_cast<T>(v));
  return all;
}
const std::vector<pg_dtype> kDtypes = every<pg_dtype>(pg_dtype_name);
const std::vector<pg_op> kOps = every<pg_op>(pg_op_name);

// The library's names of `values`, comma-separated, for help and messages.
template <typename T>
std::string names(const std::vector<T> &values, const char *(*name)(T)) {
  std::vector<std::string> all;
  for (T v : values) all.push_back(name(v));
  return pg::text::join(all, ", ");
}

// The value of `values` whose library name is `text`; false when none is.
template <typename T>
bool parse_name(const std::string &text, const std::vector<T> &values, const char *(*name)(T), T *out) {
  for (T v : values)
    if (text == name(v)) {
      *out = v;
      return true;
    }
  return false;
}

// "" when `op` applies to `dtype` (the rule of pg_strategy.h), otherwise why not.
std::string op_dtype_mismatch(pg_dtype dtype, pg_op op) {
  if (pg_op_supported(dtype, op)) return "";
  std::vector<pg_dtype> wanted;
  for (pg_dtype d : kDtypes)
    if (pg_op_supported(d, op)) wanted.push_back(d);
  return std::string("op '") + pg_op_name(op) + "' needs " +
         (op == PG_AVG ? "a floating" : "an integer") + " type (" + names(wanted, pg_dtype_name) +
         "), not '" + pg_dtype_name(dtype) + "'";
}

}  // namespace

bool parse_size(const std::string &text, size_t *out) { return pg::text::parse_size(text, out, /*spelled=*/true); }

std::string human_bytes(size_t bytes) { return pg::text::format_bytes(bytes); }

std::vector<size_t> sweep_sizes(const Options &opts) {
  std::vector<size_t> sizes;
  size_t s = opts.min_bytes;
  while (true) {
    sizes.push_back(s);
    if (s >= opts.max_bytes || s > SIZE_MAX / opts.factor) break;
    s *= opts.factor;
    if (s > opts.max_bytes) break;
  }
  return sizes;
}

std::string usage_text() {
  std::ostringstream o;
  o << "usage: mpiexec -n N pg-bench [options]\n"
       "Measures collectives, nccl-tests style, for pgstrategy backends and for the\n"
       "libraries underneath them, interleaved per size so ratios are fair.\n"
       "\n"
       "  -b, --minbytes SIZE     smallest size (default 8); SIZE: bytes with K, M or G\n"
       "  -e, --maxbytes SIZE     largest size (default 32M)\n"
       "  -f, --stepfactor F      multiply the size by F (integer >= 2) at each step (default 2)\n"
       "  -n, --iters N           timed iterations per row (default 20)\n"
       "  -w, --warmup_iters N    untimed iterations before them (default 5)\n"
       "  -c, --check 0|1         check every result against its exact expectation (default 1)\n"
       "  -d, --datatype TYPE     "
    << names(kDtypes, pg_dtype_name)
    << " (default float32)\n"
       "  -o, --op OP             "
    << names(kOps, pg_op_name)
    << " (default sum)\n"
       "  -C, --collectives LIST  comma list of "
    << collective_names()
    << ", or all\n"
       "                          (default allreduce); allgatherv, reduce_scatterv and\n"
       "                          alltoallv split each row's elements by --pattern\n"
       "      --pattern P         skewed (default): allgatherv and reduce_scatterv blocks\n"
       "                          in proportion to rank+1, alltoallv pairs to 1+(q+r) mod n;\n"
       "                          moe: every rank's elements over the ranks (one expert\n"
       "                          each) by the same Zipf law, rank r's share 1/(r+1)\n"
       "  -B, --backends LIST     comma list of backends: any pgstrategy backend or plugin\n"
       "                          by name (created for --device; NAME+trace: the same with\n"
       "                          the flight recorder on, its dumps in PGS_TRACE, which\n"
       "                          the other backends then do without; NAME+VAR=VALUE, any\n"
       "                          number: the same made with VAR=VALUE, to compare settings\n"
       "                          side by side), and the baselines\n"
       "                          mpi-raw (MPI on a duplicate of MPI_COMM_WORLD), gloo-raw\n"
       "                          (Gloo over TCP), nccl-raw (NCCL on the local GPU),\n"
       "                          memcpy (every rank copies the allreduce row's bytes:\n"
       "                          the memory-copy ceiling; device to device with --device\n"
       "                          cuda) and memcpy-pinned (--device cuda: every rank copies\n"
       "                          the row's bytes device to pinned host memory and back at\n"
       "                          once, on two streams: the ceiling of a pipeline staged\n"
       "                          through the host), bound (as --bound). Copy rows and the\n"
       "                          bound's are not checked.\n"
       "                          Default: the device's default backend and its raw library\n"
       "                          (cpu: mpi, mpi-raw, and gloo-raw when built with Gloo;\n"
       "                          cuda: nccl, nccl-raw). Unavailable ones are skipped.\n"
       "      --device DEV        cpu (default) or cuda: pgstrategy backends are created\n"
       "                          for DEV; on cuda their buffers are device memory from\n"
       "                          pg_mem_alloc and their calls are enqueued on a stream of\n"
       "                          pg-bench's (pg_strategy_set_stream), each timed to the end\n"
       "                          of that stream, as nccl-raw's\n"
       "  -r, --repetitions R     repeat the whole interleaved sweep R times and report\n"
       "                          medians over repetitions, each row's min-max beside\n"
       "                          its median (default 1; use >= 5 for ratios)\n"
       "      --load N            N CPU-bound processes run beside rank 0 for the whole\n"
       "                          sweep (a busy core: a data loader, an OpenMP thread)\n"
       "      --pause MS          every rank sleeps MS milliseconds between the header\n"
       "                          (its backend lines come after every create) and the\n"
       "                          sweep, for a script that changes the job's surroundings\n"
       "                          then (compare/shared_core.sh)\n"
       "      --csv FILE          also write one CSV row per repetition, backend,\n"
       "                          collective, size and placement\n"
       "      --mem-alloc         allocate pgstrategy backends' buffers with pg_mem_alloc\n"
       "      --fresh-input       before each timed call (untimed), every rank writes each\n"
       "                          cache line of its input again, same values, as a code\n"
       "                          that computes its input every step; without it an\n"
       "                          out-of-place input that calls only read stays in every\n"
       "                          reader's cache from call to call (--device cpu)\n"
       "      --bound             also run the bound: the data movement an allreduce\n"
       "                          needs in one node's shared memory, copies and flag\n"
       "                          rounds only (docs/performance.md); each allreduce row\n"
       "                          then shows its time over the bound's (x bound)\n"
       "      --thread-level L    MPI thread level to ask for: single, funneled,\n"
       "                          serialized, multiple (default multiple)\n"
       "  -h, --help              this text\n"
       "\n"
       "Each timed iteration starts after the backend's own barrier (MPI_Barrier,\n"
       "pg_barrier, gloo::barrier, the bound's flag round); its time is the slowest\n"
       "rank's; a row reports the median. algbw = size / time; busbw = algbw * factor\n"
       "(allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; broadcast 1;\n"
       "memcpy, memcpy-pinned 1: bytes copied / time).\n"
       "Exit status: 0 when all ran and every check passed, 1 when a check found wrong\n"
       "values, 2 on bad arguments.\n";
  return o.str();
}

std::string parse_options(int argc, char **argv, Options *out) {
  enum { kCsv = 256, kMemAlloc, kThreadLevel, kDevice, kPattern, kLoad, kFreshInput, kBound, kPause };  // long-only flags
  static const option kFlags[] = {
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'},
      {"op", required_argument, nullptr, 'o'},
      {"collectives", required_argument, nullptr, 'C'},
      {"backends", required_argument, nullptr, 'B'},
      {"repetitions", required_argument, nullptr, 'r'},
      {"csv", required_argument, nullptr, kCsv},
      {"mem-alloc", no_argument, nullptr, kMemAlloc},
      {"fresh-input", no_argument, nullptr, kFreshInput},
      {"bound", no_argument, nullptr, kBound},
      {"device", required_argument, nullptr, kDevice},
      {"thread-level", required_argument, nullptr, kThreadLevel},
      {"pattern", required_argument, nullptr, kPattern},
      {"load", required_argument, nullptr, kLoad},
      {"pause", required_argument, nullptr, kPause},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  // '+': stop at the first non-flag instead of reordering argv (MPI_Init sees
  // it next); ':': a missing value is told apart from an unknown flag.
  static const char kShort[] = "+:b:e:f:n:w:c:d:o:C:B:r:h";

  Options o;
  opterr = 0;  // the messages below name the flag, the value and what is accepted
  optind = 1;
  int c = 0, index = -1;
  while ((c = getopt_long(argc, argv, kShort, kFlags, &index)) != -1) {
    // The flag as written: "-b" or "--minbytes" (getopt_long sets `index`
    // only for a long flag it accepted).
    std::string flag = index >= 0 ? std::string("--") + kFlags[index].name : std::string("-") + char(c);
    index = -1;
    if (c == '?' || c == ':') {
      // A bad long flag is the argument getopt_long just passed; a bad short
      // one may sit inside a cluster ("-hZ"), so it is named by optopt.
      const std::string arg = argv[optind - 1];
      const bool no_value = c == '?' && (optopt == 'h' || optopt == kMemAlloc || optopt == kFreshInput ||
                                           optopt == kBound);
      const bool written_long = arg.rfind("--", 0) == 0 && (c == ':' || optopt == 0 || no_value);
      flag = written_long ? arg.substr(0, arg.find('=')) : std::string("-") + char(optopt);
      if (c == ':') return "flag " + flag + " needs a value (see -h)";
      if (no_value) return "flag " + flag + " takes no value (given '" + arg + "')";
      return "unknown flag '" + flag + "' (see -h)";
    }
    const std::string value = optarg ? optarg : "";
    auto bad = [&](const std::string &what) {
      return "bad value '" + value + "' for " + flag + ": " + what;
    };
    long v = 0;
    switch (c) {
      case 'b':
        if (!parse_size(value, &o.min_bytes)) return bad("expected a size such as 8, 4K, 256M, 1G");
        break;
      case 'e':
        if (!parse_size(value, &o.max_bytes)) return bad("expected a size such as 8, 4K, 256M, 1G");
        break;
      case 'f':
        if (!parse_int(value, 2, 1L << 20, &v)) return bad("expected an integer >= 2");
        o.factor = static_cast<uint64_t>(v);
        break;
      case 'n':
        if (!parse_int(value, 1, 100000000, &v)) return bad("expected an integer >= 1");
        o.iters = static_cast<int>(v);
        break;
      case 'w':
        if (!parse_int(value, 0, 100000000, &v)) return bad("expected an integer >= 0");
        o.warmup = static_cast<int>(v);
        break;
      case 'c':
        if (value != "0" && value != "1") return bad("expected 0 or 1");
        o.check = value == "1";
        break;
      case 'd':
        if (!parse_name(value, kDtypes, pg_dtype_name, &o.dtype))
          return bad("expected one of " + names(kDtypes, pg_dtype_name));
        break;
      case 'o':
        if (!parse_name(value, kOps, pg_op_name, &o.op))
          return bad("expected one of " + names(kOps, pg_op_name));
        break;
      case 'C':
        o.collectives.clear();
        for (const auto &name : pg::text::split(value, ',')) {
          if (name == "all") {
            o.collectives = all_collectives();
            continue;
          }
          Collective coll;
          if (!parse_collective(name, &coll))
            return bad("unknown collective '" + name + "'; expected a comma list of " +
                       collective_names() + ", or all");
          if (std::find(o.collectives.begin(), o.collectives.end(), coll) == o.collectives.end())
            o.collectives.push_back(coll);
        }
        break;
      case 'B': {
        o.backends.clear();
        std::set<std::string> seen;
        for (const auto &name : pg::text::split(value, ',')) {
          if (name.empty()) return bad("empty backend name in the comma list");
          if (!seen.insert(name).second) return bad("backend '" + name + "' named twice");
          o.backends.push_back(name);
        }
        break;
      }
      case 'r':
        if (!parse_int(value, 1, 1000000, &v)) return bad("expected an integer >= 1");
        o.repetitions = static_cast<int>(v);
        break;
      case kLoad:
        if (!parse_int(value, 0, 1024, &v)) return bad("expected a number of processes, 0 to 1024");
        o.load = static_cast<int>(v);
        break;
      case kPause:
        if (!parse_int(value, 0, 60000, &v)) return bad("expected milliseconds, 0 to 60000");
        o.pause_ms = static_cast<int>(v);
        break;
      case kCsv:
        if (value.empty()) return bad("expected a file name");
        o.csv_path = value;
        break;
      case kMemAlloc:
        o.mem_alloc = true;
        break;
      case kFreshInput:
        o.fresh_input = true;
        break;
      case kBound:
        o.bound = true;
        break;
      case kDevice:
        if (value != "cpu" && value != "cuda") return bad("expected cpu or cuda");
        o.device = value;
        break;
      case kPattern:
        if (!parse_pattern(value, &o.pattern)) return bad("expected skewed or moe");
        break;
      case kThreadLevel:
        if (value != "single" && value != "funneled" && value != "serialized" && value != "multiple")
          return bad("expected single, funneled, serialized or multiple");
        o.thread_level = value;
        break;
      case 'h':
        o.help = true;
        break;
    }
  }
  if (optind < argc) return "unexpected argument '" + std::string(argv[optind]) + "' (see -h)";
  if (o.min_bytes == 0) return "bad value 0 for -b: sizes start at 1 byte";
  if (o.min_bytes > o.max_bytes)
    return "-b (" + std::to_string(o.min_bytes) + ") is larger than -e (" +
           std::to_string(o.max_bytes) + ")";
  if (o.fresh_input && o.device != "cpu")
    return "--fresh-input rewrites host buffers: it needs --device cpu (given --device " + o.device + ")";
  if (o.bound && o.device != "cpu")
    return "--bound measures host memory shared between a node's cores: it needs --device cpu (given --device " +
           o.device + ")";
  const std::string why = op_dtype_mismatch(o.dtype, o.op);
  if (!why.empty()) return why;
  *out = o;
  return "";
}

}  // namespace pgbench
