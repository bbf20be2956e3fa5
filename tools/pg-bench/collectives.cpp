#include "collectives.h"

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
                                       {Collective::Alltoall, "alltoall"}};

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
  static const std::vector<Collective> all = {Collective::Allreduce, Collective::Allgather,
                                              Collective::ReduceScatter, Collective::Broadcast,
                                              Collective::Alltoall};
  return all;
}

double busbw_factor(Collective c, int n) {
  switch (c) {
    case Collective::Allreduce: return 2.0 * (n - 1) / n;
    case Collective::Allgather:
    case Collective::ReduceScatter:
    case Collective::Alltoall: return static_cast<double>(n - 1) / n;
    case Collective::Broadcast: return 1.0;
  }
  return 1.0;
}

bool has_out_of_place(Collective c) { return c != Collective::Broadcast; }

bool is_reduction(Collective c) {
  return c == Collective::Allreduce || c == Collective::ReduceScatter;
}

Layout make_layout(Collective c, size_t bytes, size_t elem_size, int nranks) {
  Layout l{};
  l.coll = c;
  l.nranks = nranks;
  l.elem_size = elem_size;
  const auto n = static_cast<size_t>(nranks);
  size_t count = bytes / elem_size;
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
  }
  return l;
}

}  // namespace pgbench
