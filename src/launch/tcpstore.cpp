#include "launch/tcpstore.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "util/status.h"

namespace pg::launch {
namespace {

// torch/csrc/distributed/c10d: the magic number a client validates with, and
// the commands used here (its QueryType and WaitResponseType values).
constexpr std::uint32_t kMagic = 0x3C85F7CE;
constexpr std::uint8_t kValidate = 0, kSet = 1, kGet = 3, kWait = 6, kStopWaiting = 0;
constexpr std::uint64_t kMaxValue = 4096;

void put_u64(std::string *out, std::uint64_t v) { out->append(reinterpret_cast<const char *>(&v), sizeof v); }
void put_bytes(std::string *out, const std::string &s) {
  put_u64(out, s.size());
  out->append(s);
}

// Reads exactly n bytes before the deadline.
bool read_exactly(int fd, char *buf, std::size_t n, Clock::time_point deadline) {
  std::size_t got = 0;
  while (got < n) {
    if (wait_readable(fd, deadline) != 1) return false;
    const ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<std::size_t>(r);
  }
  return true;
}

struct Connection {
  int fd = -1;
  ~Connection() {
    if (fd >= 0) ::close(fd);
  }
};

pg_status open(const Address &store, Clock::time_point deadline, Connection *c) {
  PG_CHECK(connect_to(store, "MASTER_ADDR:MASTER_PORT (torchrun's store)", deadline, &c->fd));
  std::string hello(1, static_cast<char>(kValidate));
  hello.append(reinterpret_cast<const char *>(&kMagic), sizeof kMagic);
  if (!send_all(c->fd, hello))
    return fail(PG_ERR_STATE, "torchrun's store at %s closed the connection", store.text().c_str());
  return PG_OK;
}

Clock::time_point after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

pg_status store_set(const Address &store, const std::string &key, const std::string &value, double timeout_s) {
  Connection c;
  PG_CHECK(open(store, after(timeout_s), &c));
  std::string m(1, static_cast<char>(kSet));
  put_bytes(&m, key);
  put_bytes(&m, value);
  if (!send_all(c.fd, m))
    return fail(PG_ERR_STATE, "torchrun's store at %s closed the connection", store.text().c_str());
  // A GET on the same connection answers once the SET is in (the store serves a connection in order).
  std::string check(1, static_cast<char>(kGet));
  put_bytes(&check, key);
  std::uint64_t n = 0;
  if (!send_all(c.fd, check) || !read_exactly(c.fd, reinterpret_cast<char *>(&n), sizeof n, after(timeout_s)))
    return fail(PG_ERR_STATE,
                "torchrun's store at %s did not answer as torch's TCPStore does: set PGS_BOOTSTRAP_ADDR "
                "(docs/launch.md)",
                store.text().c_str());
  return PG_OK;
}

pg_status store_get(const Address &store, const std::string &key, double timeout_s, std::string *value) {
  const auto deadline = after(timeout_s);
  Connection c;
  PG_CHECK(open(store, deadline, &c));
  std::string wait(1, static_cast<char>(kWait));
  put_u64(&wait, 1);
  put_bytes(&wait, key);
  char answer = 1;
  if (!send_all(c.fd, wait) || !read_exactly(c.fd, &answer, 1, deadline))
    return fail(PG_ERR_TIMEOUT,
                "rank 0 did not publish its rendezvous in torchrun's store at %s within PGS_BOOTSTRAP_TIMEOUT "
                "(key %s)",
                store.text().c_str(), key.c_str());
  if (answer != static_cast<char>(kStopWaiting))
    return fail(PG_ERR_STATE, "torchrun's store at %s did not answer as torch's TCPStore does: set "
                              "PGS_BOOTSTRAP_ADDR (docs/launch.md)",
                store.text().c_str());
  std::string get(1, static_cast<char>(kGet));
  put_bytes(&get, key);
  std::uint64_t n = 0;
  if (!send_all(c.fd, get) || !read_exactly(c.fd, reinterpret_cast<char *>(&n), sizeof n, deadline) ||
      n > kMaxValue)
    return fail(PG_ERR_STATE, "torchrun's store at %s did not answer as torch's TCPStore does: set "
                              "PGS_BOOTSTRAP_ADDR (docs/launch.md)",
                store.text().c_str());
  value->assign(static_cast<std::size_t>(n), '\0');
  if (n && !read_exactly(c.fd, &(*value)[0], static_cast<std::size_t>(n), deadline))
    return fail(PG_ERR_STATE, "torchrun's store at %s closed the connection", store.text().c_str());
  return PG_OK;
}

}  // namespace pg::launch
