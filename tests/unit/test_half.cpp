// The library's one float16/bfloat16 conversion (util/half.h), on all 65,536
// values of each type: to float against the value the bit fields encode, float
// and back as the identity, NaNs kept NaN (quiet, with their sign), and rounding
// from float to nearest even, with overflow to infinity at the right threshold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "util/half.h"

namespace {

// A 16-bit floating format: its field widths and the library's conversions.
struct Format {
  const char *name;
  int exponent_bits, mantissa_bits;
  float (*to_float)(uint16_t);
  uint16_t (*from_float)(float);

  uint16_t exponent_field(uint16_t h) const { return (h >> mantissa_bits) & ((1u << exponent_bits) - 1); }
  uint16_t mantissa_field(uint16_t h) const { return h & ((1u << mantissa_bits) - 1); }
  bool is_finite(uint16_t h) const { return exponent_field(h) != (1u << exponent_bits) - 1; }
  bool is_nan(uint16_t h) const { return !is_finite(h) && mantissa_field(h) != 0; }
  bool is_quiet_nan(uint16_t h) const { return is_nan(h) && ((h >> (mantissa_bits - 1)) & 1u); }
  uint16_t infinity() const { return static_cast<uint16_t>(((1u << exponent_bits) - 1) << mantissa_bits); }
  uint16_t max_finite() const { return infinity() - 1; }
};

const Format kFormats[] = {
    {"float16", 5, 10, pg::half_to_float, pg::float_to_half},
    {"bfloat16", 8, 7, pg::bf16_to_float, pg::float_to_bf16},
};
const Format &kFloat16 = kFormats[0];
const Format &kBfloat16 = kFormats[1];

constexpr uint16_t kSign = 0x8000;

// The value the fields of a non-NaN h encode: (-1)^sign * significand *
// 2^(exponent - bias - mantissa_bits), the significand with its implicit
// leading 1 unless h is subnormal. Exact in double.
double field_value(const Format &f, uint16_t h) {
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int exponent = f.exponent_field(h);
  double magnitude;
  if (!f.is_finite(h))
    magnitude = std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp(f.mantissa_field(h), 1 - bias - f.mantissa_bits);
  else
    magnitude = std::ldexp(f.mantissa_field(h) + (1 << f.mantissa_bits), exponent - bias - f.mantissa_bits);
  return h & kSign ? -magnitude : magnitude;
}

// Counts mismatches and reports the first few, so that a broken conversion
// does not print 65,536 failures.
class Mismatches {
 public:
  explicit Mismatches(const char *format) : format_(format) {}
  ~Mismatches() { EXPECT_EQ(count_, 0) << format_; }
  void expect(uint16_t got, uint16_t want, const char *what, uint16_t from) {
    if (got != want && ++count_ <= 5)
      ADD_FAILURE() << format_ << " " << what << " of 0x" << std::hex << from << ": got 0x" << got
                    << ", want 0x" << want;
  }
  void expect_float(float got, float want, uint16_t from) {
    if (pg::float_to_bits(got) != pg::float_to_bits(want) && ++count_ <= 5)
      ADD_FAILURE() << format_ << " to float of 0x" << std::hex << from << ": got " << got << " (0x"
                    << pg::float_to_bits(got) << "), want " << want << " (0x" << pg::float_to_bits(want) << ")";
  }

 private:
  const char *format_;
  int count_ = 0;
};

// The reference itself, on values known by heart.
TEST(Half, FieldValueReference) {
  EXPECT_EQ(field_value(kFloat16, 0x3c00), 1.0);
  EXPECT_EQ(field_value(kFloat16, 0xc000), -2.0);
  EXPECT_EQ(field_value(kFloat16, 0x3555), 0.333251953125);
  EXPECT_EQ(field_value(kFloat16, 0x7bff), 65504.0);
  EXPECT_EQ(field_value(kFloat16, 0x0400), std::ldexp(1.0, -14));  // smallest normal
  EXPECT_EQ(field_value(kFloat16, 0x0001), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(field_value(kBfloat16, 0x3f80), 1.0);
  EXPECT_EQ(field_value(kBfloat16, 0x4049), 3.140625);
  EXPECT_EQ(field_value(kBfloat16, 0x7f7f), std::ldexp(255.0, 120));
  EXPECT_EQ(field_value(kBfloat16, 0x0080), std::ldexp(1.0, -126));
  EXPECT_EQ(field_value(kBfloat16, 0x0001), std::ldexp(1.0, -133));
  EXPECT_TRUE(std::signbit(field_value(kFloat16, 0x8000)));
}

TEST(Half, ToFloatIsTheValueOfTheFields) {
  for (const Format &f : kFormats) {
    Mismatches m(f.name);
    for (uint32_t i = 0; i <= 0xffff; ++i) {
      const uint16_t h = static_cast<uint16_t>(i);
      const float x = f.to_float(h);
      if (f.is_nan(h)) {
        EXPECT_TRUE(std::isnan(x)) << f.name << " 0x" << std::hex << h;
        EXPECT_EQ(std::signbit(x), (h & kSign) != 0) << f.name << " 0x" << std::hex << h;
      } else {
        m.expect_float(x, static_cast<float>(field_value(f, h)), h);
      }
    }
  }
}

// GCC's _Float16 (x86-64, GCC 12 and later) converts with its own code.
TEST(Half, Float16ToFloatAsTheCompiler) {
#ifdef __FLT16_MAX__
  Mismatches m("float16");
  for (uint32_t i = 0; i <= 0xffff; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    _Float16 compiler;
    std::memcpy(&compiler, &h, sizeof h);
    if (!kFloat16.is_nan(h)) m.expect_float(pg::half_to_float(h), static_cast<float>(compiler), h);
  }
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

TEST(Half, ToFloatAndBackIsTheIdentity) {
  for (const Format &f : kFormats) {
    Mismatches m(f.name);
    for (uint32_t i = 0; i <= 0xffff; ++i) {
      const uint16_t h = static_cast<uint16_t>(i);
      const uint16_t back = f.from_float(f.to_float(h));
      if (f.is_nan(h)) {
        EXPECT_TRUE(f.is_quiet_nan(back)) << f.name << " 0x" << std::hex << h << " came back as 0x" << back;
        EXPECT_EQ(back & kSign, h & kSign) << f.name << " 0x" << std::hex << h;
      } else {
        m.expect(back, h, "round trip", h);
      }
    }
  }
}

TEST(Half, FloatNansBecomeQuietNansWithTheirSign) {
  // Quiet, signaling (a payload only in the low bits, which truncation would
  // lose), and all-ones payloads, of both signs.
  for (const Format &f : kFormats)
    for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0x7fffffffu, 0x7fc00001u})
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint16_t h = f.from_float(pg::bits_to_float(nan | sign));
        EXPECT_TRUE(f.is_quiet_nan(h)) << f.name << " 0x" << std::hex << (nan | sign) << " gave 0x" << h;
        EXPECT_EQ((h & kSign) != 0, sign != 0) << f.name << " 0x" << std::hex << (nan | sign);
      }
}

// For every pair of adjacent finite values lo < hi of each sign: their
// midpoint (exact in float) rounds to the one with the even mantissa, and the
// floats just below and above it to the nearer one. Subnormals and the step
// from the largest subnormal to the smallest normal are among the pairs.
TEST(Half, FromFloatRoundsToNearestEven) {
  for (const Format &f : kFormats) {
    Mismatches m(f.name);
    for (uint16_t lo = 0; lo < f.max_finite(); ++lo) {
      const uint16_t hi = lo + 1;
      const double midpoint = (field_value(f, lo) + field_value(f, hi)) / 2;
      const float mid = static_cast<float>(midpoint);
      ASSERT_EQ(static_cast<double>(mid), midpoint) << f.name << " 0x" << std::hex << lo;
      const uint16_t even = (lo & 1u) == 0 ? lo : hi;
      const float below = std::nextafter(mid, 0.0f);
      const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
      for (uint16_t sign : {uint16_t{0}, kSign}) {
        const float s = sign ? -1.0f : 1.0f;
        m.expect(f.from_float(s * mid), even | sign, "the midpoint after", lo | sign);
        m.expect(f.from_float(s * below), lo | sign, "the float below the midpoint after", lo | sign);
        m.expect(f.from_float(s * above), hi | sign, "the float above the midpoint after", lo | sign);
      }
    }
  }
}

// The largest finite value plus half its step is where rounding reaches the
// next power of two, which is infinity: that value (a tie; the even neighbour
// is infinity) and everything above it overflow, the float just below does not.
TEST(Half, OverflowToInfinityAtTheThreshold) {
  EXPECT_EQ(kFloat16.from_float(65519.99609375f), 0x7bff);
  EXPECT_EQ(kFloat16.from_float(65520.0f), 0x7c00);
  for (const Format &f : kFormats) {
    const uint16_t max = f.max_finite();
    const double threshold = field_value(f, max) + (field_value(f, max) - field_value(f, max - 1)) / 2;
    const float t = static_cast<float>(threshold);
    ASSERT_EQ(static_cast<double>(t), threshold) << f.name;
    for (uint16_t sign : {uint16_t{0}, kSign}) {
      const float s = sign ? -1.0f : 1.0f;
      EXPECT_EQ(f.from_float(s * std::nextafter(t, 0.0f)), max | sign) << f.name;
      EXPECT_EQ(f.from_float(s * t), f.infinity() | sign) << f.name;
      EXPECT_EQ(f.from_float(s * std::numeric_limits<float>::max()), f.infinity() | sign) << f.name;
      EXPECT_EQ(f.from_float(s * std::numeric_limits<float>::infinity()), f.infinity() | sign) << f.name;
    }
  }
  EXPECT_EQ(kBfloat16.from_float(static_cast<float>(std::ldexp(511.0, 119))), 0x7f80);  // (2 - 2^-8) * 2^127
}

// Floats far below the smallest subnormal become zeros of their sign.
TEST(Half, UnderflowToSignedZero) {
  for (const Format &f : kFormats) {
    const float tiny = std::numeric_limits<float>::denorm_min();
    EXPECT_EQ(f.from_float(tiny), 0x0000) << f.name;
    EXPECT_EQ(f.from_float(-tiny), kSign) << f.name;
    EXPECT_EQ(f.from_float(-0.0f), kSign) << f.name;
  }
}

}  // namespace
