// float16 and bfloat16 conversions (round to nearest even), so reductions on
// them combine each pair in float and round to the type, as NCCL does.
#pragma once

#include <cstdint>
#include <cstring>

namespace pg {

inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // Subnormal: value = mant * 2^-24.
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t x = float_to_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or nan (keep nan quiet)
    return sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                         // below the smallest normal half (2^-14)
    // Subnormal half: round abs / 2^-24 to nearest even.
    float scaled = bits_to_float(abs) * 16777216.0f;
    uint32_t q = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t half = ((abs >> 23) - 112) << 10 | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent
  return sign | static_cast<uint16_t>(half);
}

inline float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t x = float_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace pg
