// The PMI-1 wire protocol ("simple PMI", what MPICH's Hydra serves; Flux RFC
// 13 describes it), server side, as the bootstrap serves it to its own
// process's MPI: one command per line, "cmd=NAME key=value ...", each answered
// by one reply line. This part only parses and answers; the bootstrap
// (bootstrap.cpp) carries the barriers over the rendezvous. A malformed or
// unknown line is answered with rc=-1 and a message; nothing here throws.
#pragma once

#include <map>
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

class PmiSession {
 public:
  PmiSession(int rank, int size, std::string kvsname);

  struct Step {
    std::string reply;  // line(s) for MPI, each ending in '\n'; empty: none now
    enum class Then { nothing, barrier, finalize, abort } then = Then::nothing;
    int exit_code = 0;    // abort
    std::string message;  // abort
  };
  // One line from MPI, without its '\n'.
  Step on_line(std::string_view line);
  // A line that exceeded kPmiMaxLine (its rest is discarded by the reader).
  Step on_overlong_line();
  // The puts since the last barrier (for the barrier in progress).
  KeyValues take_puts();
  // Every process's puts of the barrier that ended: the reply to MPI.
  std::string barrier_done(const KeyValues &job_puts);
  bool finalized() const { return finalized_; }
  std::size_t keys() const { return kvs_.size(); }

 private:
  Step error(const std::string &reply_cmd, const std::string &why);

  int rank_, size_;
  std::string kvsname_;
  std::map<std::string, std::string> kvs_;
  KeyValues puts_;
  std::size_t put_count_ = 0;
  bool in_barrier_ = false;
  bool in_mcmd_ = false;  // between "mcmd=spawn" and "endcmd": spawn is refused
  bool finalized_ = false;
};

}  // namespace pg::launch
