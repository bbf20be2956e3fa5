#include "launch/pmi_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "launch/rendezvous.h"
#include "util/log.h"
#include "util/text.h"

namespace pg::launch {
namespace {

void on_pmi_line(Member &m, std::string_view line) {
  PG_LOG(debug, "bootstrap: PMI line from MPI: %s", text::printable(line).c_str());
  const PmiSession::Step s = m.session->on_line(line);
  if (!s.reply.empty()) send_all(m.pmi, s.reply);
  switch (s.then) {
    case PmiSession::Step::Then::barrier: {
      Fields f = {"BARRIER", std::to_string(m.epoch++)};
      for (auto &kv : m.session->take_puts()) {
        f.push_back(kv.first);
        f.push_back(kv.second);
      }
      m.send(f);
      break;
    }
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

void on_rendezvous_frame(Member &m, const Fields &f) {
  if (f[0] == "BARRIER-OUT" && f.size() % 2 == 0) {
    KeyValues kvs;
    for (std::size_t i = 2; i + 1 < f.size(); i += 2) kvs.emplace_back(f[i], f[i + 1]);
    if (m.pmi >= 0) send_all(m.pmi, m.session->barrier_done(kvs));
  } else if (f[0] == "END" && f.size() >= 3) {
    int code = 1;
    if (!text::parse_number(f[1], &code) || code == 0) code = 1;
    end_job(code, f[2]);
  } else {
    PG_LOG(debug, "bootstrap: ignored a '%s' message from the rendezvous", text::printable(f[0]).c_str());
  }
}

}  // namespace

// The PMI server of this process, and the watch on the rendezvous.
void serve(Member *m) {
  std::string pending;    // bytes from MPI not yet a whole line
  bool discarding = false;  // inside an overlong line
  std::vector<char> buf(1 << 16);
  while (true) {
    pollfd fds[2] = {{m->tcp, POLLIN, 0}, {m->pmi, POLLIN, 0}};
    const int rc = poll(fds, m->pmi >= 0 ? 2 : 1, 1000);
    if (rc < 0 && errno != EINTR) return;
    if (rc <= 0) continue;
    if (m->pmi >= 0 && fds[1].revents) {
      const ssize_t n = read(m->pmi, buf.data(), buf.size());
      if (n <= 0) {
        // MPI closed its end (after PMI finalize, or at exit).
        ::close(m->pmi);
        m->pmi = -1;
      } else {
        pending.append(buf.data(), static_cast<std::size_t>(n));
        std::size_t start = 0, end;
        while ((end = pending.find('\n', start)) != std::string::npos) {
          if (!discarding) on_pmi_line(*m, std::string_view(pending).substr(start, end - start));
          discarding = false;
          start = end + 1;
        }
        pending.erase(0, start);
        if (pending.size() > kPmiMaxLine && !discarding) {
          send_all(m->pmi, m->session->on_overlong_line().reply);
          discarding = true;
        }
        if (discarding) pending.clear();
      }
    }
    if (fds[0].revents) {
      const ssize_t n = recv(m->tcp, buf.data(), buf.size(), 0);
      if (n > 0) {
        m->reader.feed(buf.data(), static_cast<std::size_t>(n));
        Fields f;
        std::string error;
        int got;
        while ((got = m->reader.next(&f, &error)) == 1) on_rendezvous_frame(*m, f);
        if (got == 0) continue;
        // A rendezvous that breaks the framing is as good as gone.
      }
      if (m->exiting || m->finalized || m->aborting) return;
      end_job(1, "rank 0 (host " + (m->hosts.empty() ? std::string("?") : m->hosts[0]) +
                     "), which serves the job's rendezvous at " + m->at.text() +
                     ", died: this process lost its connection to it before finalizing MPI");
    }
  }
}

}  // namespace pg::launch
