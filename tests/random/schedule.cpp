// Each rank's own placement of its point-to-point calls.
//
// What MPI allows: collectives are ordered per communicator in the order
// they are issued, point-to-point per (sender, receiver, tag, communicator)
// in the order it is posted, and the two are independent. So every rank keeps
// the program's collectives in the program's order (the same calls on every
// rank; their waits where the program says), and its point-to-point calls in
// the program's order among themselves (the k-th send of a pair on a tag
// matches the k-th receive), and draws for each of its point-to-point calls,
// for itself: blocking or not (its peer draws its own); a receive from
// PG_ANY_SOURCE or from the peer (from any source only on an operation's own
// tag, which one sender uses); its place, up to three collectives earlier or
// later than in the program, never past its neighbouring point-to-point
// calls nor across the operation of the fault or of --stall-at; and where it
// waits for its works (at once, after one of the next collectives, or at the
// end).
//
// The rule that keeps it from deadlocking: a draw is kept only if every rank
// still runs to its end in a model in which everything that may wait does
// wait (Model):
// - a send completes once its receive is posted, and not before; a receive
//   once its send is posted (no message goes eagerly);
// - a collective completes once every rank of its group has started it, and
//   not before (any collective may synchronize);
// - conservatively, an operation a rank starts on a strategy counts as
//   started only once every message the rank posted on that strategy before
//   it has been matched: a progress thread runs its queue in order, and a
//   table backend's blocking send there has run only when its receive came
//   (docs/algorithms.md). So a message never needs a collective to have
//   finished first: a rank that posts a message and then waits in a
//   collective which its peer finishes before posting its end is a
//   deadlock in the model, and not drawn;
// - point-to-point never waits for a collective: posting a message needs
//   nothing but the messages posted before it on the strategy, as
//   pg_strategy.h promises (point-to-point works are not ordered with
//   collectives). A backend that queues a message behind a collective
//   deadlocks where the model does not: that is what the test looks for.
// Hence, among others: a blocking call moves before a collective only where
// its peer starts that collective nonblocking, or posts its end of the
// message before reaching the collective; and its peer's wait for the
// collective, if any, comes after the peer's end of the message.
//
// The draws are made in the program's order, one point-to-point operation at
// a time: the draws of every rank that takes part, checked in the model with
// those before; else drawn again; else each of those ranks makes the call
// blocking at its place in the program. Where every call is so, the program
// runs in its own order, each message matched before any rank goes on: the
// placement the draws start from, and one that always runs to its end.
#include "schedule.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <tuple>

namespace pgr {

std::vector<int> Layout::members(int strategy, int world_rank) const {
  const auto &g = group[static_cast<std::size_t>(strategy)], &k = rank[static_cast<std::size_t>(strategy)];
  std::vector<int> out;
  for (int q = 0; q < ranks(); ++q)
    if (g[static_cast<std::size_t>(q)] == g[static_cast<std::size_t>(world_rank)]) out.push_back(q);
  std::sort(out.begin(), out.end(),
            [&](int a, int b) { return k[static_cast<std::size_t>(a)] < k[static_cast<std::size_t>(b)]; });
  return out;
}

namespace {

// A rank's messages of a point-to-point operation, in the order it posts
// them, between world ranks; none when the rank takes no part.
std::vector<Message> own_messages(const Op &op, const Layout &layout, int world_rank) {
  const std::vector<int> members = layout.members(op.strategy, world_rank);
  const int me = layout.rank[static_cast<std::size_t>(op.strategy)][static_cast<std::size_t>(world_rank)];
  std::vector<Message> out;
  for (const Message &m : messages(op, static_cast<int>(members.size())))
    if (m.from == me || m.to == me)
      out.push_back({members[static_cast<std::size_t>(m.from)], members[static_cast<std::size_t>(m.to)]});
  return out;
}

// Where a step stands in its rank's sequence, which is sorted by it: at an
// operation's index (the number of operations: the end), then by slot.
enum Slot { kBefore, kAt, kAfter, kShared, kOwn };
struct Key {
  std::size_t at = 0;
  int slot = kAt;
  std::size_t index = 0;  // the operation the step is for
  int sub = 0;            // 1: the wait right after its start
  bool operator<(const Key &o) const { return std::tie(at, slot, index, sub) < std::tie(o.at, o.slot, o.index, o.sub); }
};

// A rank's draw for one of its point-to-point operations.
struct Placement {
  bool nonblocking = false, any_source = false;
  Key start, wait;
};
using Plans = std::map<std::size_t, Placement>;  // by operation

// Blocking, at its place in the program.
Placement in_place(std::size_t index) {
  Placement p;
  p.start = {index, kAt, index, 0};
  return p;
}

// A rank's steps: every operation started where its plan places it (else at
// its place in the program), the program's waits after the operation they
// follow, and with `own_waits` the point-to-point waits where the plans put
// them instead of the program's.
std::vector<Step> steps_of(const std::vector<Op> &ops, const Plans &plans, bool own_waits) {
  std::vector<std::pair<Key, Step>> keyed;
  auto settle = [&](const Key &key, std::size_t anchor, std::vector<std::size_t> works) {
    Step step;
    step.start = false;
    step.anchor = anchor;
    step.works = std::move(works);
    keyed.push_back({key, std::move(step)});
  };
  for (const Op &op : ops) {
    Step start;
    start.op = op;
    Key key{op.index, kAt, op.index, 0};
    const auto plan = plans.find(op.index);
    if (plan != plans.end()) {
      start.op.nonblocking = plan->second.nonblocking;
      start.op.any_source = plan->second.any_source;
      key = plan->second.start;
      if (plan->second.nonblocking) settle(plan->second.wait, op.index, {op.index});
    }
    keyed.push_back({key, std::move(start)});
    std::vector<std::size_t> shared;
    for (std::size_t index : op.settle)
      if (!own_waits || !is_point_to_point(ops[index].kind)) shared.push_back(index);
    if (!shared.empty()) settle({op.index, kShared, op.index, 0}, op.index, std::move(shared));
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<Step> steps;
  for (auto &k : keyed) steps.push_back(std::move(k.second));
  return steps;
}

std::vector<std::vector<Step>> all_steps(const std::vector<Op> &ops, const std::vector<Plans> &plans, bool own_waits) {
  std::vector<std::vector<Step>> steps;
  for (const Plans &mine : plans) steps.push_back(steps_of(ops, mine, own_waits));
  return steps;
}

// Every rank's steps as posts and waits, in the model of the comment at the
// top: run until every rank is at its end, or none can go on.
class Model {
 public:
  Model(const Layout &layout, const std::vector<std::vector<Step>> &steps);
  bool runs_to_end();

 private:
  struct Post {
    int rank = 0;
    std::size_t event = 0;
    int before = -1;  // the link its rank posted last on the strategy before it
    bool started = false;
  };
  struct Link {  // a message: the posts of its two ends
    int send = -1, recv = -1;
    bool matched = false;
  };
  struct Collective {  // on one group
    std::size_t ranks = 0;
    std::vector<int> posts;
  };
  struct Wait {
    std::vector<int> links, collectives;
  };
  struct Event {  // a post, or a wait
    int post = -1;
    Wait wait;
  };

  bool started(int post);
  bool matched(int link);
  bool ready(const Event &event);

  std::vector<Post> posts_;
  std::vector<Link> links_;
  std::vector<Collective> collectives_;
  std::vector<std::vector<Event>> events_;  // [world rank]
  std::vector<std::size_t> next_;           // [world rank]: its next event
};

Model::Model(const Layout &layout, const std::vector<std::vector<Step>> &steps)
    : events_(steps.size()), next_(steps.size(), 0) {
  std::map<std::tuple<std::size_t, int, int>, int> link_of;       // (operation, from, to)
  std::map<std::pair<std::size_t, int>, int> collective_of;       // (operation, group)
  for (int r = 0; r < static_cast<int>(steps.size()); ++r) {
    std::vector<Event> &events = events_[static_cast<std::size_t>(r)];
    std::vector<int> last(kStrategies, -1);  // the link this rank posted last on each strategy
    std::map<std::size_t, Wait> in_flight;   // its nonblocking operations
    auto post = [&](int before) {
      posts_.push_back({r, events.size(), before, false});
      events.push_back({static_cast<int>(posts_.size()) - 1, {}});
      return events.back().post;
    };
    for (const Step &step : steps[static_cast<std::size_t>(r)]) {
      if (!step.start) {
        Event e;
        for (std::size_t index : step.works) {
          const auto it = in_flight.find(index);
          if (it == in_flight.end()) continue;
          const Wait &w = it->second;
          e.wait.links.insert(e.wait.links.end(), w.links.begin(), w.links.end());
          e.wait.collectives.insert(e.wait.collectives.end(), w.collectives.begin(), w.collectives.end());
          in_flight.erase(it);
        }
        events.push_back(std::move(e));
        continue;
      }
      const Op &op = step.op;
      const std::size_t s = static_cast<std::size_t>(op.strategy);
      Wait wait;  // what the operation's end needs
      bool waited = false;
      if (is_collective(op.kind)) {
        const auto [it, fresh] =
            collective_of.emplace(std::make_pair(op.index, layout.group[s][static_cast<std::size_t>(r)]),
                                  static_cast<int>(collectives_.size()));
        if (fresh) collectives_.push_back({layout.members(op.strategy, r).size(), {}});
        collectives_[static_cast<std::size_t>(it->second)].posts.push_back(post(last[s]));
        wait.collectives.push_back(it->second);
      } else if (is_point_to_point(op.kind)) {
        // send_recv posts its messages one after the other (blocking: each
        // waited for before the next), sendrecv both at once.
        const int before = last[s];
        waited = op.kind == Kind::send_recv && !op.nonblocking;
        for (const Message &m : own_messages(op, layout, r)) {
          const auto [it, fresh] =
              link_of.emplace(std::make_tuple(op.index, m.from, m.to), static_cast<int>(links_.size()));
          if (fresh) links_.emplace_back();
          const int after = op.kind == Kind::send_recv ? last[s] : before;
          if (m.from == r) links_[static_cast<std::size_t>(it->second)].send = post(after);
          if (m.to == r) links_[static_cast<std::size_t>(it->second)].recv = post(after);
          if (waited) events.push_back({-1, {{it->second}, {}}});
          last[s] = it->second;
          wait.links.push_back(it->second);
        }
      } else {
        continue;  // the local refusal
      }
      if (op.nonblocking)
        in_flight[op.index] = std::move(wait);
      else if (!waited)
        events.push_back({-1, std::move(wait)});
    }
  }
}

bool Model::started(int post) {
  Post &p = posts_[static_cast<std::size_t>(post)];
  if (!p.started) p.started = next_[static_cast<std::size_t>(p.rank)] > p.event && (p.before < 0 || matched(p.before));
  return p.started;
}

bool Model::matched(int link) {
  Link &l = links_[static_cast<std::size_t>(link)];
  if (!l.matched) l.matched = l.send >= 0 && l.recv >= 0 && started(l.send) && started(l.recv);
  return l.matched;
}

bool Model::ready(const Event &event) {
  if (event.post >= 0) return true;
  for (int link : event.wait.links)
    if (!matched(link)) return false;
  for (int c : event.wait.collectives) {
    const Collective &collective = collectives_[static_cast<std::size_t>(c)];
    if (collective.posts.size() < collective.ranks) return false;
    for (int post : collective.posts)
      if (!started(post)) return false;
  }
  return true;
}

bool Model::runs_to_end() {
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t r = 0; r < events_.size(); ++r)
      for (; next_[r] < events_[r].size() && ready(events_[r][next_[r]]); ++next_[r]) moved = true;
  }
  for (std::size_t r = 0; r < events_.size(); ++r)
    if (next_[r] < events_[r].size()) return false;
  return true;
}

// What every draw for one program sees.
struct Frame {
  std::vector<std::size_t> collectives, fences;  // in order; fences: the fault's and --stall-at's operations
  std::vector<bool> blocking;                    // by operation: a blocking collective
  std::size_t end = 0;                           // the number of operations
  bool any_source = false;
};

// The collectives a rank's point-to-point operation may move before or
// after, nearest first: not past its neighbouring point-to-point calls
// (`mine`), nor across a fence.
struct Room {
  std::vector<std::size_t> earlier, later;
};

Room room_for(const Op &op, const Plans &mine, const Frame &frame) {
  const std::size_t i = op.index;
  const auto here = mine.find(i);
  const Key low = here == mine.begin() ? Key{0, kBefore, 0, 0} : std::prev(here)->second.start;
  std::size_t high = std::next(here) == mine.end() ? SIZE_MAX : std::next(here)->first;
  std::size_t floor = 0;  // the earliest collective it may move before
  for (std::size_t f : frame.fences) {
    if (f < i) floor = std::max(floor, f + 1);
    if (f > i) high = std::min(high, f);
  }
  Room room;
  for (std::size_t c : frame.collectives) {
    if (c < i && c >= floor && low < Key{c, kBefore, i, 0}) room.earlier.insert(room.earlier.begin(), c);
    if (c > i && c < high) room.later.push_back(c);
  }
  return room;
}

Placement draw(Rng &rng, const Op &op, const Room &room, const Frame &frame) {
  const std::size_t i = op.index;
  Placement p = in_place(i);
  // Earlier, mostly blocking, or at its place or later, mostly not, so that
  // a blocking call before collectives that its peer starts, nonblocking,
  // before its own end (the case that deadlocks where point-to-point waits
  // behind collectives) comes often. Never a blocking call before a blocking
  // collective: its peer could not reach its end of the message (the model
  // would refuse it).
  const std::uint64_t where = rng.below(100), far = rng.below(3);
  p.nonblocking = op.kind == Kind::send_recv && rng.chance(where < 45 ? 30 : 60);
  std::size_t reach = 0;
  while (reach < room.earlier.size() && (p.nonblocking || !frame.blocking[room.earlier[reach]])) ++reach;
  if (where < 45 && reach > 0)
    p.start = {room.earlier[std::min<std::size_t>(far, reach - 1)], kBefore, i, 0};
  else if (where >= 75 && !room.later.empty())
    p.start = {room.later[std::min<std::size_t>(far, room.later.size() - 1)], kAfter, i, 0};
  p.any_source = frame.any_source && op.kind == Kind::send_recv && op.tag == 1 + static_cast<int>(i) && rng.chance(30);
  if (!p.nonblocking) return p;
  // Its wait: at once, after one of the next three collectives that start
  // after it, or at the end.
  const std::uint64_t when = rng.below(100), next = rng.below(3);
  const auto first = std::lower_bound(frame.collectives.begin(), frame.collectives.end(), p.start.at);
  const std::size_t following = static_cast<std::size_t>(frame.collectives.end() - first);
  if (when < 35)
    p.wait = {p.start.at, p.start.slot, i, 1};
  else if (when < 85 && following > 0)
    p.wait = {*(first + static_cast<long>(std::min<std::size_t>(next, following - 1))), kOwn, i, 0};
  else
    p.wait = {frame.end, kAt, i, 0};
  return p;
}

}  // namespace

std::vector<std::vector<Step>> schedule(const std::vector<Op> &ops, const Limits &limits, const Layout &layout,
                                        std::uint64_t seed, const Reordering &how) {
  const int ranks = layout.ranks();
  std::vector<Plans> plans(static_cast<std::size_t>(ranks));
  if (!how.on) return all_steps(ops, plans, false);
  Frame frame;
  frame.end = ops.size();
  frame.any_source = how.any_source;
  for (const Op &op : ops) {
    if (is_collective(op.kind)) frame.collectives.push_back(op.index);
    frame.blocking.push_back(is_collective(op.kind) && !op.nonblocking);
    if (!is_point_to_point(op.kind)) continue;
    for (int r = 0; r < ranks; ++r)
      if (!own_messages(op, layout, r).empty()) plans[static_cast<std::size_t>(r)][op.index] = in_place(op.index);
  }
  for (long f : {limits.fault_index, limits.forced_index})
    if (f >= 0) frame.fences.push_back(static_cast<std::size_t>(f));
  std::vector<Rng> draws;
  for (int r = 0; r < ranks; ++r) draws.emplace_back(hash(seed, static_cast<std::uint64_t>(r), 0x9e0d, 0));
  for (const Op &op : ops) {
    if (!is_point_to_point(op.kind)) continue;
    std::vector<std::size_t> takers;
    for (int r = 0; r < ranks; ++r)
      if (plans[static_cast<std::size_t>(r)].count(op.index)) takers.push_back(static_cast<std::size_t>(r));
    for (int attempt = 0;; ++attempt) {
      for (std::size_t r : takers)
        plans[r][op.index] =
            attempt < 2 ? draw(draws[r], op, room_for(op, plans[r], frame), frame) : in_place(op.index);
      if (attempt == 2 || Model(layout, all_steps(ops, plans, true)).runs_to_end()) break;
    }
  }
  return all_steps(ops, plans, true);
}

std::string describe_placement(const std::vector<Step> &steps, const Layout &layout, int world_rank) {
  std::string out;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Op &op = steps[k].op;
    if (!steps[k].start || !is_point_to_point(op.kind) || own_messages(op, layout, world_rank).empty()) continue;
    // The collectives started next to it; the step that waits for it, and
    // the operation started last before that.
    long before = -1, after = -1, last_start = -1;
    std::size_t wait = 0;
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const long index = static_cast<long>(steps[j].op.index);
      const bool collective = steps[j].start && is_collective(steps[j].op.kind);
      if (collective && j < k) before = index;
      if (collective && j > k && after < 0) after = index;
      if (steps[j].start && j >= k && !wait) last_start = index;
      if (!steps[j].start && j > k && !wait && steps[j].works == std::vector<std::size_t>{op.index}) wait = j;
    }
    const long index = static_cast<long>(op.index);
    out += (out.empty() ? "#" : "; #") + std::to_string(index) + " " +
           (op.kind == Kind::send_recv && op.nonblocking ? "isend/irecv" : kind_name(op.kind));
    if (op.any_source) out += ", from any source";
    if (after >= 0 && after < index) out += ", before #" + std::to_string(after);
    if (before > index) out += ", after #" + std::to_string(before);
    const bool starts_after = std::any_of(steps.begin() + static_cast<long>(wait), steps.end(),
                                          [](const Step &step) { return step.start; });
    if (wait && !starts_after)
      out += ", waited at the end";
    else if (wait)
      out += last_start == index ? ", waited at once" : ", waited after #" + std::to_string(last_start);
  }
  return out.empty() ? "no point-to-point" : out;
}

std::size_t crossings(const std::vector<std::vector<Step>> &steps, const Layout &layout) {
  std::vector<std::map<std::size_t, std::size_t>> at(steps.size());  // [rank][operation]: its start's step
  for (std::size_t r = 0; r < steps.size(); ++r)
    for (std::size_t k = 0; k < steps[r].size(); ++k)
      if (steps[r][k].start) at[r][steps[r][k].op.index] = k;
  std::size_t count = 0;
  for (std::size_t r = 0; r < steps.size(); ++r) {
    for (std::size_t k = 0; k < steps[r].size(); ++k) {
      const Op &op = steps[r][k].op;
      if (!steps[r][k].start || !is_point_to_point(op.kind) || op.nonblocking) continue;
      bool crossed = false;
      for (const Message &m : own_messages(op, layout, static_cast<int>(r))) {
        const std::size_t q = static_cast<std::size_t>(m.from == static_cast<int>(r) ? m.to : m.from);
        const std::size_t theirs = at[q].at(op.index);
        if (!steps[q][theirs].op.nonblocking) continue;
        for (std::size_t j = k + 1; j < steps[r].size() && !crossed; ++j) {
          const Op &c = steps[r][j].op;
          crossed = steps[r][j].start && is_collective(c.kind) && c.strategy == op.strategy && at[q].at(c.index) < theirs;
        }
      }
      count += crossed;
    }
  }
  return count;
}

}  // namespace pgr
