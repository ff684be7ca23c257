// float16 (IEEE binary16) and bfloat16 storage types.
//
// Only storage and conversion: arithmetic happens in float32 (reductions on
// these types accumulate in float32 and round once). Conversions round to
// nearest even and keep NaN a NaN, matching NumPy and ml_dtypes.
#pragma once

#include <cstdint>
#include <cstring>

namespace scatterkit {

struct float16 {
  uint16_t bits;
};

struct bfloat16 {
  uint16_t bits;
};

namespace detail {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace detail

inline float to_float(bfloat16 h) { return detail::bits_float(uint32_t(h.bits) << 16); }

inline bfloat16 to_bfloat16(float f) {
  uint32_t u = detail::float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x0040u)};  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return {uint16_t(u >> 16)};
}

inline float to_float(float16 h) {
  const uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  const uint32_t exp = (h.bits >> 10) & 0x1fu;
  const uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (man << 13));  // inf/NaN
  if (exp != 0) return detail::bits_float(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in float32.
  const float mag = float(man) * 5.9604644775390625e-8f;
  return sign ? -mag : mag;
}

inline float16 to_float16(float f) {
  const uint32_t u = detail::float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return {uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu))};  // NaN
  if (abs >= 0x477ff000u) return {uint16_t(sign | 0x7c00u)};  // rounds to inf
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: round abs * 2^24 to an integer, ties to even.
    if (abs < 0x33000000u) return {sign};  // below half the smallest subnormal
    const uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - (abs >> 23);  // 14..24
    uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return {uint16_t(sign | q)};
  }
  // Normal: rebias exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t r = abs - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1u);
  return {uint16_t(sign | (r >> 13))};
}

}  // namespace scatterkit
