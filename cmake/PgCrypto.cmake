# libcrypto (OpenSSL 3) for the bootstrap's HMAC-SHA-256 and constant-time
# comparison (src/launch/auth.cpp), as the target pgs::crypto: OpenSSL's own
# package where its headers are installed; else the runtime library
# libcrypto.so.3 alone, with the few declarations auth.cpp needs
# (src/launch/libcrypto_abi.h). Sets PGS_CRYPTO_FROM to what was used.
add_library(pgs_crypto INTERFACE)
add_library(pgs::crypto ALIAS pgs_crypto)
find_package(OpenSSL 3 COMPONENTS Crypto)
if(TARGET OpenSSL::Crypto)
  target_link_libraries(pgs_crypto INTERFACE OpenSSL::Crypto)
  target_compile_definitions(pgs_crypto INTERFACE PGS_OPENSSL_HEADERS=1)
  set(PGS_CRYPTO_FROM "OpenSSL ${OPENSSL_VERSION}")
else()
  find_library(PGS_LIBCRYPTO NAMES libcrypto.so.3)
  if(NOT PGS_LIBCRYPTO)
    message(FATAL_ERROR "libcrypto: neither OpenSSL 3's development files (Debian: libssl-dev) nor its runtime "
                        "library libcrypto.so.3 (Debian: libssl3) were found")
  endif()
  target_link_libraries(pgs_crypto INTERFACE $<BUILD_INTERFACE:${PGS_LIBCRYPTO}>)
  target_compile_definitions(pgs_crypto INTERFACE PGS_OPENSSL_HEADERS=0)
  set(PGS_CRYPTO_FROM "${PGS_LIBCRYPTO} (no OpenSSL headers)")
endif()
