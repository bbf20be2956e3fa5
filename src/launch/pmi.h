// The PMI-1 wire protocol ("simple PMI", what MPICH's Hydra serves; Flux RFC
// 13 describes it), server side, as the bootstrap serves it to its own
// process's MPI: one command per line, "cmd=NAME key=value ...", each answered
// by one reply line. This part only parses and answers; the PMI relay
// (pmi_relay.cpp) carries the barriers and the gets it cannot answer itself
// over the rendezvous. A malformed or unknown line is answered with rc=-1 and
// a message; nothing here throws.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pg::launch {

// What the server advertises (cmd=maxes) and enforces.
constexpr std::size_t kPmiMaxLine = 4096;  // bytes per line, '\n' excluded
constexpr std::size_t kPmiKvsnameMax = 256;
constexpr std::size_t kPmiKeyMax = 64;
constexpr std::size_t kPmiValueMax = 1024;
constexpr std::size_t kPmiMaxKeys = 65536;  // puts per process

struct PmiCommand {
  std::string cmd;
  std::vector<std::pair<std::string, std::string>> args;  // in order, cmd excluded
  const std::string *find(std::string_view key) const;
};

// "cmd=NAME key=value ..." (spaces separate tokens; a value ends at the next
// space, except that abort's message= takes the rest of the line). False, with
// the reason, for a line that is not of that form.
bool parse_pmi(std::string_view line, PmiCommand *out, std::string *error);

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// What each process sees (PMI-1): its own puts at once; everyone's puts once
// a barrier has ended, and until then the values of the barriers before.
// Those live at rank 0, which keeps them all: a get this process cannot
// answer itself asks for the key there (Then::fetch), and the answer is kept
// until the next barrier, after which rank 0 may hold a newer value.
class PmiSession {
 public:
  PmiSession(int rank, int size, std::string kvsname);

  struct Step {
    std::string reply;  // line(s) for MPI, each ending in '\n'; empty: none now
    enum class Then { nothing, barrier, fetch, finalize, abort } then = Then::nothing;
    int exit_code = 0;    // abort
    std::string message;  // abort
    std::string key;      // fetch: the key to ask rank 0 for; fetched() answers MPI
  };
  // One line from MPI, without its '\n'.
  Step on_line(std::string_view line);
  // A line that exceeded kPmiMaxLine (its rest is discarded by the reader).
  Step on_overlong_line();
  // This process's puts for the barrier in progress, in order.
  const KeyValues &barrier_puts() const { return in_flight_; }
  // The barrier in progress ended: the reply to MPI.
  std::string barrier_done();
  // It could not be carried out (`why`): the reply to MPI, rc=-1.
  std::string barrier_failed(const std::string &why);
  // Rank 0's answer for the key of a fetch (`found`, and its `value`): the reply to MPI.
  std::string fetched(const std::string &key, bool found, const std::string &value);
  bool finalized() const { return finalized_; }
  long barriers() const { return barriers_; }

 private:
  Step error(const std::string &reply_cmd, const std::string &why);
  static std::string get_result(const std::string &key, const std::string *value);

  int rank_, size_;
  std::string kvsname_;
  KeyValues puts_;                              // since the last barrier_in, in order
  KeyValues in_flight_;                         // those of the barrier in progress
  std::map<std::string, std::string> mine_;     // both, by key: this process sees them at once
  std::map<std::string, std::string> fetched_;  // rank 0's values, until the next barrier
  std::set<std::string> absent_;                // keys rank 0 does not hold, until the next barrier
  std::size_t put_count_ = 0;
  long barriers_ = 0;  // barriers ended
  bool in_barrier_ = false;
  bool in_mcmd_ = false;  // between "mcmd=spawn" and "endcmd": spawn is refused
  bool finalized_ = false;
};

}  // namespace pg::launch
