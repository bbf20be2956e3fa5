#include "options.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <set>
#include <sstream>

#include "dtypes.h"

namespace pgbench {
namespace {

std::vector<std::string> split_commas(const std::string &s) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

bool parse_int(const std::string &text, long min, long max, long *out) {
  if (text.empty()) return false;
  char *end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_size(const std::string &text, size_t *out) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return false;
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  const std::string suffix(end);
  unsigned shift = 0;
  if (!suffix.empty() && suffix != "B" && suffix != "b") {
    switch (suffix[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: return false;
    }
    const std::string rest = suffix.substr(1);
    if (!rest.empty() && rest != "B" && rest != "iB") return false;
  }
  if (shift && v > (static_cast<unsigned long long>(SIZE_MAX) >> shift)) return false;
  *out = static_cast<size_t>(v) << shift;
  return true;
}

std::string human_bytes(size_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  size_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

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
    << dtype_names()
    << " (default float32)\n"
       "  -o, --op OP             "
    << op_names()
    << " (default sum)\n"
       "  -C, --collectives LIST  comma list of "
    << collective_names()
    << ", or all\n"
       "                          (default allreduce)\n"
       "  -B, --backends LIST     comma list of backends: any pgstrategy backend or plugin\n"
       "                          by name (created for device cpu), and the baselines\n"
       "                          mpi-raw (MPI on a duplicate of MPI_COMM_WORLD), gloo-raw\n"
       "                          (Gloo over TCP) and nccl-raw (NCCL on the local GPU).\n"
       "                          Default: the CPU default backend, mpi-raw, and gloo-raw\n"
       "                          when built with Gloo. Unavailable ones are skipped.\n"
       "  -r, --repetitions R     repeat the whole interleaved sweep R times and report\n"
       "                          medians over repetitions (default 1; use >= 5 for ratios)\n"
       "      --csv FILE          also write one CSV row per repetition, backend,\n"
       "                          collective, size and placement\n"
       "      --mem-alloc         allocate pgstrategy backends' buffers with pg_mem_alloc\n"
       "      --thread-level L    MPI thread level to ask for: single, funneled,\n"
       "                          serialized, multiple (default multiple)\n"
       "  -h, --help              this text\n"
       "\n"
       "Each timed iteration starts after the backend's own barrier (MPI_Barrier,\n"
       "pg_barrier, gloo::barrier); its time is the slowest rank's; a row reports\n"
       "the median. algbw = size / time; busbw = algbw * factor\n"
       "(allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; broadcast 1).\n"
       "Exit status: 0 when all ran and every check passed, 1 when a check found wrong\n"
       "values, 2 on bad arguments.\n";
  return o.str();
}

std::string parse_options(int argc, char **argv, Options *out) {
  Options o;
  std::set<std::string> seen_backends;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg, value;
    bool has_value = false;
    // --name=value and -xVALUE forms.
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      }
    } else if (arg.size() > 2 && arg[0] == '-') {
      flag = arg.substr(0, 2);
      value = arg.substr(2);
      has_value = true;
    }
    static const std::set<std::string> no_value = {"-h", "--help", "--mem-alloc"};
    if (flag.empty() || flag[0] != '-' || flag == "-" || flag == "--")
      return "unexpected argument '" + arg + "' (see -h)";
    if (no_value.count(flag)) {
      if (has_value) return "flag " + flag + " takes no value (given '" + arg + "')";
      if (flag == "--mem-alloc")
        o.mem_alloc = true;
      else
        o.help = true;
      continue;
    }
    static const std::set<std::string> with_value = {
        "-b", "--minbytes", "-e", "--maxbytes", "-f", "--stepfactor", "-n", "--iters",
        "-w", "--warmup_iters", "-c", "--check", "-d", "--datatype", "-o", "--op",
        "-C", "--collectives", "-B", "--backends", "-r", "--repetitions", "--csv",
        "--thread-level"};
    if (!with_value.count(flag)) return "unknown flag '" + flag + "' (see -h)";
    if (!has_value) {
      if (i + 1 >= argc) return "flag " + flag + " needs a value (see -h)";
      value = argv[++i];
    }
    auto bad = [&](const std::string &what) {
      return "bad value '" + value + "' for " + flag + ": " + what;
    };
    long v = 0;
    if (flag == "-b" || flag == "--minbytes") {
      if (!parse_size(value, &o.min_bytes)) return bad("expected a size such as 8, 4K, 256M, 1G");
    } else if (flag == "-e" || flag == "--maxbytes") {
      if (!parse_size(value, &o.max_bytes)) return bad("expected a size such as 8, 4K, 256M, 1G");
    } else if (flag == "-f" || flag == "--stepfactor") {
      if (!parse_int(value, 2, 1L << 20, &v)) return bad("expected an integer >= 2");
      o.factor = static_cast<uint64_t>(v);
    } else if (flag == "-n" || flag == "--iters") {
      if (!parse_int(value, 1, 100000000, &v)) return bad("expected an integer >= 1");
      o.iters = static_cast<int>(v);
    } else if (flag == "-w" || flag == "--warmup_iters") {
      if (!parse_int(value, 0, 100000000, &v)) return bad("expected an integer >= 0");
      o.warmup = static_cast<int>(v);
    } else if (flag == "-c" || flag == "--check") {
      if (value != "0" && value != "1") return bad("expected 0 or 1");
      o.check = value == "1";
    } else if (flag == "-d" || flag == "--datatype") {
      if (!parse_dtype(value, &o.dtype)) return bad("expected one of " + dtype_names());
    } else if (flag == "-o" || flag == "--op") {
      if (!parse_op(value, &o.op)) return bad("expected one of " + op_names());
    } else if (flag == "-C" || flag == "--collectives") {
      o.collectives.clear();
      for (const auto &name : split_commas(value)) {
        if (name == "all") {
          o.collectives = all_collectives();
          continue;
        }
        Collective c;
        if (!parse_collective(name, &c))
          return bad("unknown collective '" + name + "'; expected a comma list of " +
                     collective_names() + ", or all");
        bool dup = false;
        for (auto x : o.collectives) dup = dup || x == c;
        if (!dup) o.collectives.push_back(c);
      }
    } else if (flag == "-B" || flag == "--backends") {
      o.backends.clear();
      seen_backends.clear();
      for (const auto &name : split_commas(value)) {
        if (name.empty()) return bad("empty backend name in the comma list");
        if (!seen_backends.insert(name).second) return bad("backend '" + name + "' named twice");
        o.backends.push_back(name);
      }
    } else if (flag == "-r" || flag == "--repetitions") {
      if (!parse_int(value, 1, 1000000, &v)) return bad("expected an integer >= 1");
      o.repetitions = static_cast<int>(v);
    } else if (flag == "--csv") {
      if (value.empty()) return bad("expected a file name");
      o.csv_path = value;
    } else if (flag == "--thread-level") {
      if (value != "single" && value != "funneled" && value != "serialized" && value != "multiple")
        return bad("expected single, funneled, serialized or multiple");
      o.thread_level = value;
    } else {
      return "unknown flag '" + flag + "' (see -h)";
    }
  }
  if (o.min_bytes == 0) return "bad value 0 for -b: sizes start at 1 byte";
  if (o.min_bytes > o.max_bytes)
    return "-b (" + std::to_string(o.min_bytes) + ") is larger than -e (" +
           std::to_string(o.max_bytes) + ")";
  const std::string why = op_dtype_mismatch(o.dtype, o.op);
  if (!why.empty()) return why;
  *out = o;
  return "";
}

}  // namespace pgbench
