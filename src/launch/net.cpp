#include "launch/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "util/status.h"
#include "util/text.h"

namespace pg::launch {
namespace {

struct Resolved {
  addrinfo *list = nullptr;
  ~Resolved() {
    if (list) freeaddrinfo(list);
  }
};

int resolve(const Address &a, bool passive, Resolved *out, std::string *error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = (passive ? AI_PASSIVE : 0) | AI_NUMERICSERV;
  const std::string port = std::to_string(a.port);
  const int rc = getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), port.c_str(), &hints, &out->list);
  if (rc != 0) *error = gai_strerror(rc);
  return rc;
}

std::string numeric(const sockaddr *sa, socklen_t len) {
  char host[NI_MAXHOST] = "";
  if (getnameinfo(sa, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  return host;
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
  return -1;
}

// One listening socket on `ai`; -1 with errno set when it cannot be had.
int listen_one(const addrinfo *ai) {
  const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// Connects `s` to `ai` before `deadline`: 0, or why not (an errno;
// ETIMEDOUT when the deadline came first). Nonblocking, so that an address
// whose host never answers (its SYNs dropped) costs at most the time left,
// not the kernel's SYN retries (about 2 minutes); `s` is blocking again after.
int connect_before(int s, const addrinfo *ai, Clock::time_point deadline) {
  const int flags = fcntl(s, F_GETFL);
  if (flags < 0 || fcntl(s, F_SETFL, flags | O_NONBLOCK) != 0) return errno;
  int err = connect(s, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
  if (err == EINPROGRESS || err == EINTR) {
    const int ready = wait_for(s, POLLOUT, deadline);
    socklen_t len = sizeof err;
    if (ready == 0)
      err = ETIMEDOUT;
    else if (ready < 0)
      err = errno;
    else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
      err = errno;
  }
  if (err == 0 && fcntl(s, F_SETFL, flags) != 0) err = errno;
  return err;
}

}  // namespace

int wait_for(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return -1;
    if (rc > 0) return 1;
  }
}

std::string Address::text() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool parse_address(const std::string &text, Address *out, std::string *error) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "expected [ipv6-address]:port";
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon) {
      *error = "expected host:port (an IPv6 address in brackets: [::1]:29500)";
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty() || host.size() > 255) {
    *error = "the host is empty or longer than 255 characters";
    return false;
  }
  // Brackets only around an IPv6 address: "[[1]:5" would name host "[1",
  // which no address text can give back.
  for (char c : host)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f || c == '/' || c == '[' ||
        c == ']') {
      *error = "the host holds a space, a control character, '/' or a bracket";
      return false;
    }
  int p = -1;
  if (!text::parse_number(port, &p) || p < 0 || p > 65535) {
    *error = "the port is not a number from 0 to 65535";
    return false;
  }
  out->host = host;
  out->port = p;
  return true;
}

pg_status listen_on(const Address &at, const std::string &what, int *fd, int *bound, std::string *note) {
  *fd = -1;
  Resolved r;
  std::string error;
  if (resolve(at, false, &r, &error) != 0)
    return fail(PG_ERR_INVALID_ARGUMENT, "%s: host '%s' does not resolve (%s)", what.c_str(),
                text::printable(at.host).c_str(), error.c_str());
  int first_errno = 0;
  std::string first_addr;
  for (const addrinfo *ai = r.list; ai; ai = ai->ai_next) {
    const int s = listen_one(ai);
    if (s >= 0) {
      *fd = s;
      *bound = bound_port(s);
      return PG_OK;
    }
    if (!first_errno) {
      first_errno = errno;
      first_addr = numeric(ai->ai_addr, ai->ai_addrlen);
    }
  }
  if (first_errno == EADDRNOTAVAIL) {
    // Not an address of this machine (a service in front of it, a NAT):
    // every address of this machine, on that port.
    Address any{"", at.port};
    Resolved all;
    if (resolve(any, true, &all, &error) == 0)
      for (const addrinfo *ai = all.list; ai; ai = ai->ai_next) {
        const int s = listen_one(ai);
        if (s >= 0) {
          *fd = s;
          *bound = bound_port(s);
          *note = what + ": " + at.host + " (" + first_addr +
                  ") is not an address of this machine; listening on every address of it instead";
          return PG_OK;
        }
        if (errno == EADDRINUSE) first_errno = EADDRINUSE;
      }
  }
  if (first_errno == EADDRINUSE)
    return fail(PG_ERR_INVALID_ARGUMENT,
                "%s=%s: the port %d is already in use on %s (another job, or a previous run still "
                "closing; under torchrun it is the agent's store): choose another port",
                what.c_str(), at.text().c_str(), at.port, first_addr.c_str());
  return fail(PG_ERR_INVALID_ARGUMENT, "%s=%s: cannot listen there (%s): %s", what.c_str(),
              at.text().c_str(), first_addr.c_str(), std::strerror(first_errno));
}

pg_status connect_to(const Address &to, const std::string &what, Clock::time_point deadline, int *fd) {
  *fd = -1;
  auto pause = std::chrono::milliseconds(20);
  std::string last = "nothing tried";
  while (true) {
    Resolved r;
    std::string error;
    if (resolve(to, false, &r, &error) != 0) {
      last = "the host does not resolve (" + error + ")";
    } else {
      for (const addrinfo *ai = r.list; ai; ai = ai->ai_next) {
        const int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (s < 0) continue;
        const int err = connect_before(s, ai, deadline);
        if (err == 0) {
          tune(s);
          *fd = s;
          return PG_OK;
        }
        last = std::strerror(err);
        close(s);
      }
    }
    if (Clock::now() + pause >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  return fail(PG_ERR_TIMEOUT, "nothing accepted a connection at %s=%s in time (last attempt: %s)",
              what.c_str(), to.text().c_str(), last.c_str());
}

std::string address_toward(const std::string &host) {
  if (!host.empty()) {
    Resolved r;
    std::string error;
    if (resolve(Address{host, 9}, false, &r, &error) == 0)
      for (const addrinfo *ai = r.list; ai; ai = ai->ai_next) {
        const int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0) continue;
        // A datagram socket's connect sends nothing: it only picks the route.
        if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0) {
          sockaddr_storage local{};
          socklen_t len = sizeof local;
          if (getsockname(s, reinterpret_cast<sockaddr *>(&local), &len) == 0) {
            close(s);
            return numeric(reinterpret_cast<sockaddr *>(&local), len);
          }
        }
        close(s);
      }
  }
  Resolved r;
  std::string error;
  if (resolve(Address{host_name(), 9}, false, &r, &error) == 0 && r.list)
    return numeric(r.list->ai_addr, r.list->ai_addrlen);
  return "127.0.0.1";
}

bool loopback_only(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) != 0) return false;
  if (ss.ss_family == AF_INET)
    return ntohl(reinterpret_cast<sockaddr_in *>(&ss)->sin_addr.s_addr) >> 24 == 127;
  if (ss.ss_family != AF_INET6) return false;
  const in6_addr &a = reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
}

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = 10, interval = 3, count = 3;  // 10 + 3 x 3 s: within kKeepaliveSeconds
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  unsigned user_timeout_ms = kKeepaliveSeconds * 1000;
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

bool send_all(int fd, const std::string &data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 1000);
      continue;
    }
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

std::string host_name() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace pg::launch
