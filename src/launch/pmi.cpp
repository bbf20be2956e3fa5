#include "launch/pmi.h"

#include <climits>

#include "util/text.h"

namespace pg::launch {
namespace {

// A message for rc=-1: the client splits on spaces, so there are none.
std::string no_spaces(std::string text) {
  for (char &c : text)
    if (c == ' ' || c == '\t' || c == '=') c = '_';
  return text;
}

bool valid_token(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s)
    if (static_cast<unsigned char>(c) <= ' ' || c == '=' || static_cast<unsigned char>(c) == 0x7f) return false;
  return true;
}

}  // namespace

const std::string *PmiCommand::find(std::string_view key) const {
  for (const auto &kv : args)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

bool parse_pmi(std::string_view line, PmiCommand *out, std::string *error) {
  *out = PmiCommand{};
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  for (char c : line)
    if (c == '\0' || c == '\n') {
      *error = "a NUL or newline inside the line";
      return false;
    }
  std::size_t pos = 0;
  bool first = true;
  while (pos < line.size()) {
    if (line[pos] == ' ' || line[pos] == '\t') {
      ++pos;
      continue;
    }
    std::size_t end = line.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = line.size();
    std::string_view token = line.substr(pos, end - pos);
    const std::size_t eq = token.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      *error = "token '" + text::printable(token) + "' is not key=value";
      return false;
    }
    std::string key(token.substr(0, eq));
    std::string value(token.substr(eq + 1));
    // abort's message is free text: the rest of the line.
    if (key == "message" && out->cmd == "abort") {
      value = std::string(line.substr(pos + eq + 1));
      end = line.size();
    }
    if (first) {
      if (key != "cmd" || value.empty()) {
        *error = "the line does not start with cmd=<name>";
        return false;
      }
      out->cmd = value;
      first = false;
    } else {
      out->args.emplace_back(std::move(key), std::move(value));
    }
    pos = end;
  }
  if (first) {
    *error = "an empty line";
    return false;
  }
  return true;
}

PmiSession::PmiSession(int rank, int size, std::string kvsname)
    : rank_(rank), size_(size), kvsname_(std::move(kvsname)) {}

PmiSession::Step PmiSession::error(const std::string &reply_cmd, const std::string &why) {
  Step s;
  s.reply = "cmd=" + reply_cmd + " rc=-1 msg=" + no_spaces(why) + "\n";
  return s;
}

PmiSession::Step PmiSession::on_overlong_line() {
  return error("error", "line longer than " + std::to_string(kPmiMaxLine) + " bytes");
}

PmiSession::Step PmiSession::on_line(std::string_view line) {
  if (in_mcmd_) {
    // A multi-line command (spawn): refused once it ends.
    if (line == "endcmd" || line == "endcmd\r") {
      in_mcmd_ = false;
      return error("spawn_result", "spawn is not supported by pgstrategy's bootstrap");
    }
    return Step{};
  }
  if (line.rfind("mcmd=", 0) == 0) {
    in_mcmd_ = true;
    return Step{};
  }
  PmiCommand c;
  std::string why;
  if (!parse_pmi(line, &c, &why)) return error("error", "malformed line: " + why);
  const std::string &cmd = c.cmd;
  Step s;
  if (cmd == "init") {
    s.reply = "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";
  } else if (cmd == "initack") {
    // PMI_PORT/PMI_ID: the rank and size come from the server.
    s.reply = "cmd=initack rc=0\ncmd=set size=" + std::to_string(size_) + "\ncmd=set rank=" +
              std::to_string(rank_) + "\ncmd=set debug=0\n";
  } else if (cmd == "get_maxes") {
    s.reply = "cmd=maxes kvsname_max=" + std::to_string(kPmiKvsnameMax) + " keylen_max=" +
              std::to_string(kPmiKeyMax) + " vallen_max=" + std::to_string(kPmiValueMax) + " rc=0\n";
  } else if (cmd == "get_appnum") {
    s.reply = "cmd=appnum appnum=0 rc=0\n";
  } else if (cmd == "get_my_kvsname") {
    s.reply = "cmd=my_kvsname kvsname=" + kvsname_ + " rc=0\n";
  } else if (cmd == "get_universe_size") {
    s.reply = "cmd=universe_size size=" + std::to_string(size_) + " rc=0\n";
  } else if (cmd == "put") {
    const std::string *kvs = c.find("kvsname"), *key = c.find("key"), *value = c.find("value");
    if (kvs && *kvs != kvsname_) return error("put_result", "unknown kvsname " + text::printable(*kvs));
    if (!key || !valid_token(*key, kPmiKeyMax))
      return error("put_result", "the key is missing, empty, longer than " + std::to_string(kPmiKeyMax) +
                                     " bytes or holds spaces");
    if (!value || value->size() > kPmiValueMax)
      return error("put_result", "the value is missing or longer than " + std::to_string(kPmiValueMax) + " bytes");
    if (put_count_ >= kPmiMaxKeys)
      return error("put_result", "more than " + std::to_string(kPmiMaxKeys) + " puts from one process");
    ++put_count_;
    mine_[*key] = *value;
    puts_.emplace_back(*key, *value);
    s.reply = "cmd=put_result rc=0\n";
  } else if (cmd == "get") {
    const std::string *kvs = c.find("kvsname"), *key = c.find("key");
    if (kvs && *kvs != kvsname_) return error("get_result", "unknown kvsname " + text::printable(*kvs));
    if (!key || key->empty() || key->size() > kPmiKeyMax)
      return error("get_result", "the key is missing, empty or too long");
    auto mine = mine_.find(*key);
    auto known = fetched_.find(*key);
    if (mine != mine_.end()) {
      s.reply = get_result(*key, &mine->second);
    } else if (known != fetched_.end()) {
      s.reply = get_result(*key, &known->second);
    } else if (barriers_ == 0 || absent_.count(*key) != 0) {
      // Before the first barrier rank 0 holds nothing this process may see
      // (MPICH's PMI_process_mapping comes here): answered without asking.
      s.reply = get_result(*key, nullptr);
    } else {
      s.then = Step::Then::fetch;
      s.key = *key;
    }
  } else if (cmd == "barrier_in") {
    if (in_barrier_) return error("barrier_out", "barrier_in twice without barrier_out");
    in_barrier_ = true;
    in_flight_.swap(puts_);
    puts_.clear();
    s.then = Step::Then::barrier;
  } else if (cmd == "finalize") {
    finalized_ = true;
    s.reply = "cmd=finalize_ack rc=0\n";
    s.then = Step::Then::finalize;
  } else if (cmd == "abort") {
    s.then = Step::Then::abort;
    s.exit_code = 1;
    if (const std::string *code = c.find("exitcode")) {
      int v = 0;
      if (text::parse_number(*code, &v)) s.exit_code = v;
    }
    if (const std::string *message = c.find("message")) s.message = *message;
  } else if (cmd == "publish_name" || cmd == "unpublish_name" || cmd == "lookup_name") {
    const std::string reply = cmd.substr(0, cmd.size() - 5) + "_result";
    return error(reply, cmd + " is not supported by pgstrategy's bootstrap");
  } else if (cmd == "create_kvs" || cmd == "destroy_kvs" || cmd == "getbyidx" || cmd == "spawn") {
    return error(cmd == "getbyidx" ? "getbyidx_results" : cmd + "_result",
                 cmd + " is not supported by pgstrategy's bootstrap");
  } else {
    bool plain = cmd.size() <= 32;
    for (char ch : cmd) plain = plain && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
    return error(plain ? cmd + "_result" : "error", "unknown command " + text::printable(cmd));
  }
  return s;
}

std::string PmiSession::get_result(const std::string &key, const std::string *value) {
  if (!value) return "cmd=get_result rc=-1 found=FALSE msg=key_" + no_spaces(key) + "_not_found\n";
  return "cmd=get_result rc=0 found=TRUE value=" + *value + "\n";
}

std::string PmiSession::fetched(const std::string &key, bool found, const std::string &value) {
  if (!found) {
    absent_.insert(key);
    return get_result(key, nullptr);
  }
  // Rank 0 holds only values a PMI server accepted; the cut guards against a broken peer.
  return get_result(key, &(fetched_[key] = value.substr(0, kPmiValueMax)));
}

std::string PmiSession::barrier_done() {
  // Everyone's puts of this barrier are at rank 0 now, and may have replaced
  // what was fetched before it.
  in_flight_.clear();
  mine_.clear();
  for (const auto &kv : puts_) mine_[kv.first] = kv.second;  // put since barrier_in (a client that did not wait)
  fetched_.clear();
  absent_.clear();
  in_barrier_ = false;
  ++barriers_;
  return "cmd=barrier_out rc=0\n";
}

std::string PmiSession::barrier_failed(const std::string &why) {
  // The puts stay for the next barrier; MPI decides whether there is one.
  puts_.insert(puts_.begin(), in_flight_.begin(), in_flight_.end());
  in_flight_.clear();
  in_barrier_ = false;
  return error("barrier_out", why).reply;
}

}  // namespace pg::launch
