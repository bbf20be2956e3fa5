#include "collectives.h"

#include <algorithm>

namespace pgbench {
namespace {

struct CollectiveInfo {
  Collective coll;
  const char *name;
};
const CollectiveInfo kCollectives[] = {{Collective::Allreduce, "allreduce"},
                                       {Collective::Allgather, "allgather"},
                                       {Collective::ReduceScatter, "reduce_scatter"},
                                       {Collective::Broadcast, "broadcast"},
                                       {Collective::Alltoall, "alltoall"},
                                       {Collective::Allgatherv, "allgatherv"},
                                       {Collective::ReduceScatterv, "reduce_scatterv"},
                                       {Collective::Alltoallv, "alltoallv"}};

// Shares of `total` in proportion to `weights`, the rounding remainder to the
// largest weight, so they add up to `total` exactly.
std::vector<size_t> shares(size_t total, const std::vector<double> &weights) {
  double sum = 0;
  for (double w : weights) sum += w;
  std::vector<size_t> out(weights.size());
  size_t given = 0, largest = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    out[i] = static_cast<size_t>(static_cast<double>(total) * weights[i] / sum);
    given += out[i];
    if (weights[i] > weights[largest]) largest = i;
  }
  out[largest] += total - given;
  return out;
}

}  // namespace

const char *collective_name(Collective c) {
  for (const auto &i : kCollectives)
    if (i.coll == c) return i.name;
  return "?";
}

bool parse_collective(const std::string &name, Collective *out) {
  for (const auto &i : kCollectives)
    if (name == i.name) {
      *out = i.coll;
      return true;
    }
  return false;
}

std::string collective_names() {
  std::string s;
  for (const auto &i : kCollectives) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

const std::vector<Collective> &all_collectives() {
  static const std::vector<Collective> all = {Collective::Allreduce,  Collective::Allgather,
                                              Collective::ReduceScatter, Collective::Broadcast,
                                              Collective::Alltoall,   Collective::Allgatherv,
                                              Collective::ReduceScatterv, Collective::Alltoallv};
  return all;
}

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::Allreduce: return 2.0 * (n - 1) / n;
    case Collective::Allgather:
    case Collective::ReduceScatter:
    case Collective::Alltoall:
    case Collective::Allgatherv:
    case Collective::ReduceScatterv:
    case Collective::Alltoallv: return static_cast<double>(n - 1) / n;
    case Collective::Broadcast: return 1.0;
  }
  return 1.0;
}

const char *pattern_name(Pattern p) { return p == Pattern::Moe ? "moe" : "skewed"; }

bool parse_pattern(const std::string &name, Pattern *out) {
  if (name == "skewed") *out = Pattern::Skewed;
  else if (name == "moe") *out = Pattern::Moe;
  else return false;
  return true;
}

bool is_uneven(Collective c) {
  return c == Collective::Allgatherv || c == Collective::ReduceScatterv || c == Collective::Alltoallv;
}

UnevenCounts uneven_counts(const Layout &l, int rank) {
  UnevenCounts u;
  const auto n = static_cast<size_t>(l.nranks), me = static_cast<size_t>(rank);
  const std::vector<size_t> &m = *l.split;
  auto packed = [](const std::vector<size_t> &counts, size_t *total) {
    std::vector<size_t> d(counts.size());
    size_t at = 0;
    for (size_t i = 0; i < counts.size(); ++i) d[i] = at, at += counts[i];
    *total = at;
    return d;
  };
  switch (l.coll) {
    case Collective::Allgatherv:
      u.rc = m;
      u.rd = packed(u.rc, &u.recv);
      u.send = m[me];
      break;
    case Collective::ReduceScatterv:
      u.rc = m;
      u.sd = packed(u.rc, &u.send);
      u.recv = m[me];
      break;
    default:  // alltoallv
      u.sc.resize(n), u.rc.resize(n);
      for (size_t r = 0; r < n; ++r) u.sc[r] = m[me * n + r], u.rc[r] = m[r * n + me];
      u.sd = packed(u.sc, &u.send);
      u.rd = packed(u.rc, &u.recv);
      break;
  }
  return u;
}

bool has_out_of_place(Collective c) { return c != Collective::Broadcast; }

bool is_reduction(Collective c) {
  return c == Collective::Allreduce || c == Collective::ReduceScatter || c == Collective::ReduceScatterv;
}

Layout make_layout(Collective c, size_t bytes, size_t elem_size, int nranks, Pattern pattern) {
  Layout l{};
  l.coll = c;
  l.nranks = nranks;
  l.elem_size = elem_size;
  const auto n = static_cast<size_t>(nranks);
  size_t count = bytes / elem_size;
  if (is_uneven(c)) {
    // The row's elements: allgatherv's whole result, reduce_scatterv's input,
    // what each rank sends in alltoallv.
    if (count == 0) count = 1;
    l.count = l.call_count = count;
    l.bytes = count * elem_size;
    std::vector<double> w(n);
    for (size_t r = 0; r < n; ++r) w[r] = pattern == Pattern::Moe ? 1.0 / static_cast<double>(r + 1) : double(r + 1);
    auto split = std::make_shared<std::vector<size_t>>();
    if (c == Collective::Alltoallv) {
      for (size_t q = 0; q < n; ++q) {
        std::vector<double> row(n);
        for (size_t r = 0; r < n; ++r) row[r] = pattern == Pattern::Moe ? w[r] : double(1 + (q + r) % n);
        const std::vector<size_t> part = shares(count, row);
        split->insert(split->end(), part.begin(), part.end());
      }
    } else {
      *split = shares(count, w);
    }
    l.split = split;
    for (int r = 0; r < nranks; ++r) {
      const UnevenCounts u = uneven_counts(l, r);
      l.send_bytes = std::max(l.send_bytes, u.send * elem_size);
      l.recv_bytes = std::max(l.recv_bytes, u.recv * elem_size);
    }
    return l;
  }
  const bool per_rank = c == Collective::Allgather || c == Collective::ReduceScatter ||
                        c == Collective::Alltoall;
  if (per_rank) count = count / n * n;
  if (count == 0) count = per_rank ? n : 1;
  l.count = count;
  l.bytes = count * elem_size;
  switch (c) {
    case Collective::Allreduce:
    case Collective::Broadcast:
      l.call_count = count;
      l.send_bytes = l.recv_bytes = l.bytes;
      break;
    case Collective::Allgather:
      l.call_count = count / n;
      l.send_bytes = l.bytes / n;
      l.recv_bytes = l.bytes;
      break;
    case Collective::ReduceScatter:
      l.call_count = count / n;
      l.send_bytes = l.bytes;
      l.recv_bytes = l.bytes / n;
      break;
    case Collective::Alltoall:
      l.call_count = count / n;
      l.send_bytes = l.recv_bytes = l.bytes;
      break;
    default:
      break;
  }
  return l;
}

}  // namespace pgbench
