#include "launch/auth.h"

#if PGS_OPENSSL_HEADERS
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#else
#include "launch/libcrypto_abi.h"
#endif
#include <sys/random.h>

#include <cerrno>
#include <vector>

namespace pg::launch {
namespace {

// Once, before libcrypto's first use: without its exit handler, since the
// rendezvous thread may still check a greeting while the process exits.
void init_crypto() {
  static const bool done = OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr) == 1;
  (void)done;
}

// A pointer libcrypto accepts for empty input too (a null key means "the key
// of the last call" to some of its HMAC functions).
const unsigned char *bytes_of(std::string_view s) {
  static const unsigned char none = 0;
  return s.empty() ? &none : reinterpret_cast<const unsigned char *>(s.data());
}

}  // namespace

bool sha256(std::string_view data, Digest *out) {
  init_crypto();
  unsigned int size = 0;
  return EVP_Digest(bytes_of(data), data.size(), out->data(), &size, EVP_sha256(), nullptr) == 1 &&
         size == out->size();
}

bool hmac_sha256(std::string_view key, std::string_view message, Digest *out) {
  init_crypto();
  unsigned int size = 0;
  return HMAC(EVP_sha256(), bytes_of(key), static_cast<int>(key.size()), bytes_of(message), message.size(),
              out->data(), &size) != nullptr &&
         size == out->size();
}

std::string crypto_error() {
  const unsigned long code = ERR_get_error();
  if (code == 0) return "libcrypto gave no reason";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

std::string hex(const std::uint8_t *data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

std::string random_hex(std::size_t bytes) {
  std::vector<std::uint8_t> buf(bytes);
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    got += static_cast<std::size_t>(n);
  }
  return hex(buf.data(), buf.size());
}

bool same_secret(std::string_view a, std::string_view b) {
  if (a.empty() || a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string proof(std::string_view secret, std::string_view role, std::string_view first_nonce,
                  std::string_view second_nonce, std::string_view vouched) {
  std::string message;
  message.append(role).append("\n").append(first_nonce).append("\n").append(second_nonce);
  message.append("\n").append(vouched);
  Digest d;
  if (!hmac_sha256(secret, message, &d)) return "";
  return hex(d);
}

}  // namespace pg::launch
