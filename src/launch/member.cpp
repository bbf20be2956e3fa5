#include "launch/member.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/auth.h"
#include "launch/rendezvous.h"
#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The next frame from `fd` before `deadline`: 1 got one, 0 timed out, -1
// the connection closed or broke (*error says).
int read_frame(int fd, FrameReader &reader, Clock::time_point deadline, Fields *f, std::string *error) {
  char buf[65536];
  while (true) {
    const int got = reader.next(f, error);
    if (got != 0) return got;
    const int ready = wait_readable(fd, deadline);
    if (ready == 0) return 0;
    const ssize_t n = ready < 0 ? -1 : recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *error = n == 0 ? "the connection was closed" : std::string("the connection failed: ") + std::strerror(errno);
      return -1;
    }
    reader.feed(buf, static_cast<std::size_t>(n));
  }
}

// A FAIL or REFUSED frame: rank 0's status and message.
pg_status refused(const Fields &f, std::string *why) {
  int st = PG_ERR_STATE;
  text::parse_number(f[1], &st);
  *why = f[2];
  return static_cast<pg_status>(st);
}

pg_status failed(pg_status st, const std::string &message, std::string *why) {
  *why = message;
  return st;
}

}  // namespace

bool Member::send(const Fields &f, std::string *error) {
  std::string bytes, why;
  if (!frame(f, &bytes, &why)) {
    if (error) *error = why;
    return false;
  }
  std::lock_guard<std::mutex> lock(send_mutex);
  return send_all(tcp, bytes);
}

pg_status greet(Member &m, const std::string &secret, const std::string &shown, const std::string &hint,
                Clock::time_point deadline, std::string *why) {
  Fields f;
  std::string error;
  int got = 0;
  auto pause = std::chrono::milliseconds(20);
  while (true) {
    m.reader = FrameReader(kMaxHelloFrame);
    got = read_frame(m.tcp, m.reader, std::min(deadline, after(kHelloSeconds)), &f, &error);
    if (got != 1 || f.size() != 1 || f[0] != "BUSY") break;
    // As many connections from this host as the rendezvous lets one host
    // hold are proving the secret: it asks this one to come back.
    ::close(m.tcp);
    m.tcp = -1;
    if (Clock::now() + pause >= deadline)
      return failed(PG_ERR_TIMEOUT,
                    "the rendezvous at " + shown + " was busy with other connections from this host until the "
                    "deadline",
                    why);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
    if (connect_to(m.at, m.what.empty() ? "the rendezvous" : m.what, deadline, &m.tcp) != PG_OK)
      return failed(PG_ERR_TIMEOUT, last_error(), why);
  }
  if (got <= 0 || f.size() != 3 || f[0] != "HELLO")
    return failed(PG_ERR_INVALID_ARGUMENT,
                  "what answered at " + shown + " is not pgstrategy's rendezvous (" +
                      (got == 0 ? "it said nothing" : got < 0 ? error : "it greeted oddly") + ")" + hint,
                  why);
  if (f[1] != kProtocol)
    return failed(PG_ERR_INVALID_ARGUMENT,
                  "the rendezvous at " + shown + " speaks " + text::printable(f[1]) + ", this process " + kProtocol +
                      ": every process of a job must run the same pgstrategy",
                  why);
  const std::string server_nonce = f[2].substr(0, 128);
  const std::string nonce = random_hex(16);
  if (nonce.empty()) return failed(PG_ERR_INTERNAL, "the kernel gave no random bytes (getrandom)", why);
  const std::string rank = std::to_string(m.rank), size = std::to_string(m.size);
  const std::string mine = proof(secret, "join", server_nonce, nonce, rank + "\n" + size);
  if (mine.empty())
    return failed(PG_ERR_INTERNAL, "libcrypto could not compute HMAC-SHA-256 (" + crypto_error() + ")", why);
  m.send({"JOIN", kProtocol, nonce, mine, rank, size, host_name(), std::to_string(getpid())});
  got = read_frame(m.tcp, m.reader, std::min(deadline, after(kHelloSeconds)), &f, &error);
  if (got == 1 && (f[0] == "REFUSED" || f[0] == "FAIL") && f.size() >= 3) return refused(f, why);
  if (got <= 0 || f.size() != 2 || f[0] != "WELCOME")
    return failed(PG_ERR_STATE,
                  "the rendezvous at " + shown + " did not admit this process (" +
                      (got == 0 ? "no answer" : got < 0 ? error : "an odd answer") + ")",
                  why);
  if (!same_secret(f[1], proof(secret, "welcome", nonce, server_nonce, rank)))
    return failed(PG_ERR_INVALID_ARGUMENT,
                  "the rendezvous at " + shown + " did not prove the job's secret: it is not this job's", why);
  m.reader.set_limit(kMaxFrame);
  return PG_OK;
}

pg_status await_ready(Member &m, const std::string &shown, double timeout_s, std::string *why) {
  Fields f;
  std::string error;
  const int got = read_frame(m.tcp, m.reader, after(timeout_s + kHelloSeconds), &f, &error);
  if (got == 1 && f[0] == "FAIL" && f.size() >= 3) return refused(f, why);
  if (got <= 0 || f[0] != "READY" || f.size() != 4)
    return failed(PG_ERR_STATE,
                  "the rendezvous at " + shown + " did not report the job complete (" +
                      (got == 0 ? "no word within PGS_BOOTSTRAP_TIMEOUT" : got < 0 ? error : "an odd answer") + ")",
                  why);
  // What came after READY (the news of a death) stays in m.reader, for the relay.
  m.kvsname = f[2].substr(0, kPmiKvsnameMax);
  m.rank0_host = f[3].substr(0, 255);
  return PG_OK;
}

pg_status open_pmi(Member &m, std::string *why) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return failed(PG_ERR_INTERNAL, std::string("socketpair failed: ") + std::strerror(errno), why);
  m.pmi = pair[0];
  m.pmi_client = pair[1];
  m.session = new PmiSession(m.rank, m.size, m.kvsname);
  return PG_OK;
}

}  // namespace pg::launch
