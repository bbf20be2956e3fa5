// libFuzzer target for what the bootstrap parses (src/launch, docs/launch.md):
// the frames a peer sends the rendezvous, the PMI-1 lines MPI sends the
// process's PMI server, host:port addresses, the job's variables and the
// PGS_BOOTSTRAP_* values. The first byte picks the part, the rest is its
// input. Beyond crashes and sanitizer reports, what each part accepts is
// checked against what docs/launch.md promises; a violation ends the run.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "launch/job.h"
#include "launch/pmi.h"
#include "launch/settings.h"
#include "launch/wire.h"

namespace {

using namespace pg::launch;

[[noreturn]] void broken(const char *what, const std::string &input) {
  std::fprintf(stderr, "%s (input of %zu bytes)\n", what, input.size());
  std::abort();
}

void frames(const std::string &in) {
  // Fed in pieces of varying size, as a socket delivers them.
  FrameReader r(kMaxHelloFrame);
  std::size_t pos = 0, step = 1;
  Fields f;
  std::string error;
  while (pos < in.size()) {
    const std::size_t n = std::min(step, in.size() - pos);
    r.feed(in.data() + pos, n);
    pos += n;
    step = step % 7 + 1;
    int got;
    while ((got = r.next(&f, &error)) == 1) {
      std::size_t bytes = f.empty() ? 0 : f.size() - 1;
      for (const std::string &s : f) bytes += s.size();
      if (bytes > kMaxHelloFrame) broken("a frame above the limit was accepted", in);
      std::string again, why;
      if (!frame(f, &again, &why, kMaxHelloFrame) || again.size() != bytes + kFrameHeader)
        broken("a frame does not round-trip", in);
    }
    if (got < 0) return;  // the connection would be dropped
  }
}

void pmi(const std::string &in) {
  PmiSession s(1, 4, "kvs_fuzz");
  std::size_t start = 0;
  while (start <= in.size()) {
    std::size_t end = in.find('\n', start);
    if (end == std::string::npos) end = in.size();
    const std::string line = in.substr(start, end - start);
    const PmiSession::Step step = line.size() > kPmiMaxLine ? s.on_overlong_line() : s.on_line(line);
    const std::string &r = step.reply;
    if (!r.empty() && (r.rfind("cmd=", 0) != 0 || r.back() != '\n')) broken("a reply that is not a PMI line", in);
    const std::size_t msg = r.find(" msg=");
    if (msg != std::string::npos && r.find_first_of(" \t", msg + 5) < r.size() - 1)
      broken("an error message with a space (the client splits on spaces)", in);
    if (step.then == PmiSession::Step::Then::barrier) {
      for (const auto &kv : s.barrier_puts())
        if (kv.first.size() > kPmiKeyMax || kv.second.size() > kPmiValueMax) broken("an oversized put passed", in);
      s.barrier_done();
    }
    if (step.then == PmiSession::Step::Then::fetch) {
      if (step.key.empty() || step.key.size() > kPmiKeyMax || !r.empty()) broken("a fetch of a bad key", in);
      // Rank 0 answers every other get "not found", the rest with the key itself.
      const bool found = step.key.size() % 2 == 0;
      const std::string answer = s.fetched(step.key, found, step.key);
      if (answer.rfind("cmd=get_result rc=", 0) != 0 || answer.back() != '\n') broken("a fetch answered oddly", in);
    }
    start = end + 1;
  }
}

void address(const std::string &in) {
  Address a;
  std::string why;
  if (!parse_address(in, &a, &why)) return;
  if (a.host.empty() || a.port < 0 || a.port > 65535) broken("an address out of range was accepted", in);
  Address again;
  if (!parse_address(a.text(), &again, &why) || again.host != a.host || again.port != a.port)
    broken("an accepted address does not round-trip", in);
}

void job(const std::string &in) {
  // NAME=value lines.
  std::map<std::string, std::string> vars;
  std::size_t start = 0;
  while (start < in.size()) {
    std::size_t end = in.find('\n', start);
    if (end == std::string::npos) end = in.size();
    const std::string line = in.substr(start, end - start);
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1).c_str();
    start = end + 1;
  }
  EnvLookup env = [&vars](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  Job j;
  if (read_job(env, &j) != PG_OK) return;
  if (j.mode == Job::Mode::bootstrap && (j.size < 2 || j.rank < 0 || j.rank >= j.size))
    broken("a bootstrap job with a rank outside its size", in);
  if (j.local_size > 0 && (j.local_rank >= j.local_size || j.local_size > j.size)) broken("a bad local rank passed", in);
  Settings s;
  Address a;
  std::string what;
  if (rendezvous_address(env, s, &a, &what) == PG_OK && (a.port < 1 || a.port > 65535))
    broken("a rendezvous port out of range", in);
}

void settings(const std::string &in) {
  double t = 0;
  std::string secret;
  Address a;
  const std::string v = in.substr(0, in.find('\0'));
  if (parse_timeout("PGS_BOOTSTRAP_TIMEOUT", v.c_str(), &t) == PG_OK && !(t > 0 && t <= 1e6 && std::isfinite(t)))
    broken("PGS_BOOTSTRAP_TIMEOUT accepted a value out of range", in);
  if (parse_secret("PGS_BOOTSTRAP_SECRET", v.c_str(), &secret) == PG_OK) {
    if (secret.size() < kSecretMin || secret.size() > kSecretMax) broken("a secret of the wrong length passed", in);
    for (char c : secret)
      if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
        broken("a secret with a space or control character passed", in);
  }
  parse_addr("PGS_BOOTSTRAP_ADDR", v.c_str(), &a);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const std::string in(reinterpret_cast<const char *>(data + 1), size - 1);
  switch (data[0] % 5) {
    case 0: frames(in); break;
    case 1: pmi(in); break;
    case 2: address(in); break;
    case 3: job(in); break;
    default: settings(in); break;
  }
  return 0;
}
