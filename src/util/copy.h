// Copies out of another core's cache. Header-only, so that pg-bench's bound
// pulls its bytes as the library's paths do.
#pragma once

#include <cstddef>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define PG_PULL_PAGES_AVX2 1
#endif

namespace pg {
namespace pull_detail {

constexpr std::size_t kPage = 4096, kPages = 4, kStride = kPage * kPages;

#ifdef PG_PULL_PAGES_AVX2
// kPages pages at a time, one cache line of each a step, in whole strides.
__attribute__((target("avx2"))) inline void pages_avx2(char *to, const char *from, std::size_t n) {
  for (std::size_t at = 0; at < n; at += kStride)
    for (std::size_t line = at; line < at + kPage; line += 64) {
      __m256i v[2 * kPages];
      for (std::size_t p = 0; p < kPages; ++p) {
        v[2 * p] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + line + p * kPage));
        v[2 * p + 1] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from + line + p * kPage + 32));
      }
      for (std::size_t p = 0; p < kPages; ++p) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + line + p * kPage), v[2 * p]);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + line + p * kPage + 32), v[2 * p + 1]);
      }
    }
}

inline bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

}  // namespace pull_detail

// Whether this CPU pulls by pages at all (else pull_pages is memcpy).
inline bool pulls_by_pages_here() {
#ifdef PG_PULL_PAGES_AVX2
  return pull_detail::has_avx2();
#else
  return false;
#endif
}

// memcpy(to, from, n) where another core has just written `from` (a peer's
// slot): from two strides of four pages on, where the CPU has AVX2, it reads
// four pages at a time, a cache line of each a step, so that four streams of
// lines come from the other core's cache at once where memcpy waits on one.
// Its stores read each line of `to` first, which memcpy's large copies (rep
// movsb) do not: it pays only where `to` is in this core's cache, and only
// on some CPUs (its callers time it against memcpy). On the Intel Xeon of
// docs/performance.md, four pages took 0.91-0.99 of eight's time in 64-512
// KiB allreduces, and a single stride of eight pages (a 64 KiB allreduce's
// blocks) was slower than memcpy.
inline void pull_pages(void *to, const void *from, std::size_t n) {
#ifdef PG_PULL_PAGES_AVX2
  using namespace pull_detail;
  if (n >= 2 * kStride && has_avx2()) {
    const std::size_t whole = n / kStride * kStride;
    pages_avx2(static_cast<char *>(to), static_cast<const char *>(from), whole);
    to = static_cast<char *>(to) + whole;
    from = static_cast<const char *>(from) + whole;
    n -= whole;
  }
#endif
  std::memcpy(to, from, n);
}

}  // namespace pg
