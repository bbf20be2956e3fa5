#include "launch/pmi_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launch/rendezvous.h"
#include "util/log.h"
#include "util/text.h"

namespace pg::launch {
namespace {

// The relay's state between reads.
struct Relay {
  explicit Relay(Member &member) : m(member) {}
  Member &m;
  std::string pending;      // bytes from MPI not yet handled
  bool discarding = false;  // inside an overlong line
  std::string fetching;     // the key asked of rank 0; lines after its get wait for the answer
};

// The rendezvous sent what this process cannot read: rank 0 hears why (and
// ends the job saying so), then this process ends.
[[noreturn]] void reject(Member &m, const std::string &why) {
  m.send({"REJECT", why});
  end_job(1, "this process could not read what the job's rendezvous at " + m.at.text() + " sent it (" + why + ")");
}

void barrier_in(Member &m) {
  Fields f = {"BARRIER", std::to_string(m.epoch++)};
  for (const auto &kv : m.session->barrier_puts()) {
    f.push_back(kv.first);
    f.push_back(kv.second);
  }
  std::string error;
  if (m.send(f, &error) || error.empty()) return;
  // Too much put since the last barrier for one frame: MPI hears why, and
  // decides (MPICH aborts, which ends the job).
  const std::string why = "rank " + std::to_string(m.rank) + "'s PMI puts since the last barrier make " + error;
  log::write(params::LogLevel::error, "bootstrap: %s", why.c_str());
  send_all(m.pmi, m.session->barrier_failed(why));
}

void on_pmi_line(Relay &r, std::string_view line) {
  Member &m = r.m;
  PG_LOG(debug, "bootstrap: PMI line from MPI: %s", text::printable(line).c_str());
  const PmiSession::Step s = m.session->on_line(line);
  if (!s.reply.empty()) send_all(m.pmi, s.reply);
  switch (s.then) {
    case PmiSession::Step::Then::barrier:
      barrier_in(m);
      break;
    case PmiSession::Step::Then::fetch:
      r.fetching = s.key;
      m.send({"GET", s.key});
      break;
    case PmiSession::Step::Then::finalize:
      m.finalized = true;
      m.send({"FINALIZE"});
      break;
    case PmiSession::Step::Then::abort:
      m.aborting = true;
      m.send({"ABORT", std::to_string(s.exit_code), s.message.empty() ? "(no message)" : s.message});
      break;
    case PmiSession::Step::Then::nothing:
      break;
  }
}

// The whole lines MPI sent, in order; none while a get waits for rank 0's
// answer, since MPI reads the answers in the order it asked.
void handle_lines(Relay &r) {
  std::size_t start = 0, end;
  while (r.fetching.empty() && (end = r.pending.find('\n', start)) != std::string::npos) {
    if (!r.discarding) on_pmi_line(r, std::string_view(r.pending).substr(start, end - start));
    r.discarding = false;
    start = end + 1;
  }
  r.pending.erase(0, start);
  if (!r.fetching.empty()) return;
  if (r.pending.size() > kPmiMaxLine && !r.discarding) {
    send_all(r.m.pmi, r.m.session->on_overlong_line().reply);
    r.discarding = true;
  }
  if (r.discarding) r.pending.clear();
}

void on_got(Relay &r, const Fields &f) {
  const bool found = f.size() == 4 && f[2] == "1", absent = f.size() == 3 && f[2] == "0";
  if (r.fetching.empty() || f[1] != r.fetching || !(found || absent))
    reject(r.m, "an answer to a PMI get it did not ask for ('" + text::printable(f[1].substr(0, 64)) + "')");
  r.fetching.clear();
  if (r.m.pmi >= 0) send_all(r.m.pmi, r.m.session->fetched(f[1], found, found ? f[3] : std::string()));
  handle_lines(r);
}

void on_rendezvous_frame(Relay &r, const Fields &f) {
  Member &m = r.m;
  if (f[0] == "GOT" && f.size() >= 3) {
    on_got(r, f);
  } else if (f[0] == "BARRIER-OUT" && f.size() == 2) {
    if (m.pmi >= 0) send_all(m.pmi, m.session->barrier_done());
  } else if (f[0] == "END" && f.size() >= 3) {
    int code = 1;
    if (!text::parse_number(f[1], &code) || code == 0) code = 1;
    end_job(code, f[2]);
  } else {
    PG_LOG(debug, "bootstrap: ignored a '%s' message from the rendezvous", text::printable(f[0]).c_str());
  }
}

void on_pmi_readable(Relay &r, std::vector<char> &buf) {
  Member &m = r.m;
  const ssize_t n = read(m.pmi, buf.data(), buf.size());
  if (n <= 0) {
    // MPI closed its end (after PMI finalize, or at exit).
    ::close(m.pmi);
    m.pmi = -1;
    return;
  }
  r.pending.append(buf.data(), static_cast<std::size_t>(n));
  handle_lines(r);
}

// False when the rendezvous is gone (*why says how).
bool on_tcp_readable(Relay &r, std::vector<char> &buf, std::string *why) {
  Member &m = r.m;
  const ssize_t n = recv(m.tcp, buf.data(), buf.size(), 0);
  if (n <= 0) {
    *why = n == 0 ? "it closed the connection" : std::string("the connection failed: ") + std::strerror(errno);
    return false;
  }
  m.reader.feed(buf.data(), static_cast<std::size_t>(n));
  Fields f;
  std::string error;
  int got;
  while ((got = m.reader.next(&f, &error)) == 1) on_rendezvous_frame(r, f);
  if (got < 0) reject(m, error);
  return true;
}

}  // namespace

// The PMI server of this process, and the watch on the rendezvous.
void serve(Member *m) {
  Relay r(*m);
  std::vector<char> buf(1 << 16);
  while (true) {
    pollfd fds[2] = {{m->tcp, POLLIN, 0}, {m->pmi, POLLIN, 0}};
    // While a get waits for rank 0, MPI's further lines wait in the socket.
    const bool read_pmi = m->pmi >= 0 && r.fetching.empty();
    const int rc = poll(fds, read_pmi ? 2 : 1, 1000);
    if (rc < 0 && errno != EINTR) return;
    if (rc <= 0) continue;
    if (read_pmi && fds[1].revents) on_pmi_readable(r, buf);
    std::string why;
    if (!fds[0].revents || on_tcp_readable(r, buf, &why)) continue;
    if (m->exiting || m->finalized || m->aborting) return;
    end_job(1, "rank 0 (host " + (m->rank0_host.empty() ? std::string("?") : m->rank0_host) +
                   "), which serves the job's rendezvous at " + m->at.text() +
                   ", died: this process lost its connection to it (" + why + ") before finalizing MPI");
  }
}

}  // namespace pg::launch
