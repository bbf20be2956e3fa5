// What the bootstrap's rendezvous proves its peers with (docs/launch.md,
// "What is trusted"): HMAC-SHA-256 (RFC 2104) and SHA-256 from OpenSSL's
// libcrypto, random nonces from the kernel, and libcrypto's comparison that
// takes the same time whatever differs. The secret itself never crosses the
// network: each side proves it knows it by an HMAC over both sides' nonces.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pg::launch {

using Digest = std::array<std::uint8_t, 32>;

// False when libcrypto fails (crypto_error() says why); *out is then unset.
bool sha256(std::string_view data, Digest *out);
bool hmac_sha256(std::string_view key, std::string_view message, Digest *out);
// libcrypto's last error on this thread, for a message.
std::string crypto_error();

// Lower-case hexadecimal.
std::string hex(const std::uint8_t *data, std::size_t size);
inline std::string hex(const Digest &d) { return hex(d.data(), d.size()); }

// `bytes` random bytes from the kernel (getrandom), as hexadecimal; "" when the
// kernel gives none (the caller fails).
std::string random_hex(std::size_t bytes);

// a == b, in a time that depends only on their lengths; never for "", which
// is what proof() gives when libcrypto fails.
bool same_secret(std::string_view a, std::string_view b);

// The proof each side sends: HMAC(secret, role, nonces and what the proof
// vouches for, newline-separated), in hexadecimal; "" when libcrypto fails.
std::string proof(std::string_view secret, std::string_view role, std::string_view first_nonce,
                  std::string_view second_nonce, std::string_view vouched);

}  // namespace pg::launch
