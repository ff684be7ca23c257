// The bit layouts of the float types: formats, and the special values built
// from them.
#pragma once

#include <cstdint>
#include <cstring>

#include "scatterkit/half.hpp"

namespace scatterkit {
namespace detail {

// Binary interchange format of T: total bits, precision (with the implicit
// bit), exponent field width, exponent of the smallest subnormal.
template <class T>
struct FloatFormat;
template <>
struct FloatFormat<float16> {
  using Bits = uint16_t;
  static constexpr int kPrecision = 11, kExpBits = 5, kMinExp = -24;
};
template <>
struct FloatFormat<bfloat16> {
  using Bits = uint16_t;
  static constexpr int kPrecision = 8, kExpBits = 8, kMinExp = -133;
};
template <>
struct FloatFormat<float> {
  using Bits = uint32_t;
  static constexpr int kPrecision = 24, kExpBits = 8, kMinExp = -149;
};
template <>
struct FloatFormat<double> {
  using Bits = uint64_t;
  static constexpr int kPrecision = 53, kExpBits = 11, kMinExp = -1074;
};

template <class T>
inline T from_bits(typename FloatFormat<T>::Bits b) {
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

template <class T>
inline typename FloatFormat<T>::Bits to_bits(T v) {
  typename FloatFormat<T>::Bits b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The default quiet NaN (NumPy's nan: positive, no payload).
template <class T>
inline T canonical_nan() {
  using F = FloatFormat<T>;
  using Bits = typename F::Bits;
  const int mant = F::kPrecision - 1;
  return from_bits<T>(Bits((Bits((Bits(1) << F::kExpBits) - 1) << mant) | (Bits(1) << (mant - 1))));
}

template <class T>
inline T signed_infinity(bool negative) {
  using F = FloatFormat<T>;
  using Bits = typename F::Bits;
  const int mant = F::kPrecision - 1;
  const Bits inf = Bits(Bits((Bits(1) << F::kExpBits) - 1) << mant);
  return from_bits<T>(Bits(inf | (Bits(negative) << (sizeof(Bits) * 8 - 1))));
}

template <class T>
inline T signed_zero(bool negative) {
  using Bits = typename FloatFormat<T>::Bits;
  return from_bits<T>(Bits(Bits(negative) << (sizeof(Bits) * 8 - 1)));
}

}  // namespace detail
}  // namespace scatterkit
