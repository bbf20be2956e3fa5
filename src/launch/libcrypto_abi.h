// The functions of OpenSSL 3's libcrypto that auth.cpp calls, declared as
// OpenSSL 3 declares them, for a build that has libcrypto.so.3 but not
// OpenSSL's headers (no libssl-dev): a pip build on a machine without -dev
// packages. libcrypto's C interface is stable across 3.x, and every Linux
// with a Python has the library (Python's ssl and hashlib modules load it).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {
typedef struct evp_md_st EVP_MD;
typedef struct engine_st ENGINE;
typedef struct ossl_init_settings_st OPENSSL_INIT_SETTINGS;

int OPENSSL_init_crypto(std::uint64_t opts, const OPENSSL_INIT_SETTINGS *settings);
const EVP_MD *EVP_sha256(void);
int EVP_Digest(const void *data, std::size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type,
               ENGINE *impl);
unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data,
                    std::size_t data_len, unsigned char *md, unsigned int *md_len);
unsigned long ERR_get_error(void);
void ERR_error_string_n(unsigned long e, char *buf, std::size_t len);
int CRYPTO_memcmp(const void *in_a, const void *in_b, std::size_t len);
}

#define OPENSSL_INIT_NO_ATEXIT 0x00080000L
