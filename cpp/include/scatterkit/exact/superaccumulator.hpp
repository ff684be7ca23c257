// Exact sums of floats, the bottom layer: the superaccumulator, a sum held as a wide integer
// without rounding and rounded once at the end. Built on it: double_slots.hpp (a double per
// target that spills here when an addition would round), state.hpp (mergeable states of a
// tensor), and the ops' exact=True strategies (scatter_elements.hpp, scatter_nd.hpp).
//
// An exact-sum state of an element is a run of uint64 words (ExactLayout<T>):
//   [0, kSumWords)   the sum of the finite terms, a two's complement integer in
//                    units of 2^kUnitExp, least significant word first;
//   kSumWords        the number of terms (updates, plus the initial value);
//   kSumWords + 1    flags: a +inf term, a -inf term, a NaN term, a term that
//                    is not -0 (the sign of an exact zero, as IEEE gives it).
// float16, bfloat16 and float32 share one layout (8 words, 64 bytes): each of
// their values is a multiple of 2^-149 below 2^128, and 6 words hold any sum
// of up to 2^106 of them. float64 takes 36 words (288 bytes): multiples of
// 2^-1074 below 2^1024, up to 2^77 terms. States merge by adding their words,
// so any grouping and order of the terms gives the same words and the same
// rounded result.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "scatterkit/float_format.hpp"
#include "scatterkit/half.hpp"
#include "scatterkit/reduction.hpp"

namespace scatterkit {

template <class T>
struct ExactLayout {
  static_assert(std::is_same_v<T, float16> || std::is_same_v<T, bfloat16> ||
                    std::is_same_v<T, float> || std::is_same_v<T, double>,
                "exact sums are for float16, bfloat16, float32 and float64");
  static constexpr bool kWide = std::is_same_v<T, double>;
  static constexpr int kSumWords = kWide ? 34 : 6;
  static constexpr int kUnitExp = kWide ? -1074 : -149;
  static constexpr int kCount = kSumWords;
  static constexpr int kFlags = kSumWords + 1;
  static constexpr int kWords = kSumWords + 2;
};

// Flag bits of a state.
enum : uint64_t {
  kExactPosInf = 1,
  kExactNegInf = 2,
  kExactNaN = 4,
  kExactNonNegZero = 8,  // some term is not -0: an exact zero sum is +0
  kExactAllFlags = 15,
};

namespace detail {

// The exact value of a float of any supported type, as a double.
template <class T>
inline double exact_double(T v) {
  if constexpr (is_half_v<T>)
    return double(to_float(v));
  else
    return double(v);
}

inline int highest_bit(uint64_t w) { return 63 - __builtin_clzll(w); }

// Bits [pos, pos + 64) of a little-endian multiword integer of n words.
inline uint64_t bits_at(const uint64_t* w, int n, int pos) {
  const int word = pos >> 6, shift = pos & 63;
  const uint64_t lo = word < n ? w[word] : 0;
  const uint64_t hi = word + 1 < n ? w[word + 1] : 0;
  return shift == 0 ? lo : (lo >> shift) | (hi << (64 - shift));
}

// Whether any of bits [0, pos) is set.
inline bool any_bits_below(const uint64_t* w, int pos) {
  const int word = pos >> 6, shift = pos & 63;
  for (int i = 0; i < word; ++i)
    if (w[i]) return true;
  return shift != 0 && (w[word] & ((uint64_t(1) << shift) - 1)) != 0;
}

// Rounds (-1)^negative * (mag + f) * 2^exp to T, to nearest with ties to
// even, where mag is a non-zero n-word magnitude and f a fraction in [0, 1)
// that is non-zero exactly when `sticky`; past the range gives an infinity.
// `tie`, if given, says whether the value lay exactly halfway. With a sticky
// fraction, mag must reach at least one bit below the result's last bit (the
// callers keep 64 more), so that the fraction only breaks ties.
template <class T>
T round_exact(bool negative, const uint64_t* mag, int n, int exp, bool sticky,
              bool* tie = nullptr) {
  using F = FloatFormat<T>;
  using Bits = typename F::Bits;
  constexpr int p = F::kPrecision;
  int top = n - 1;
  while (mag[top] == 0) --top;
  const int high = top * 64 + highest_bit(mag[top]);  // the leading bit's position
  const int lead_exp = high + exp;
  const int result_exp = std::max(lead_exp - (p - 1), F::kMinExp);  // of the result's last bit
  const int drop = result_exp - exp;                                // bits of mag below it
  uint64_t m;
  bool halfway = false;
  if (drop <= 0) {
    m = mag[0] << -drop;  // exact: mag has at most p bits here
  } else {
    m = bits_at(mag, n, drop);  // the bits above `high` are zero
    const bool round = (bits_at(mag, n, drop - 1) & 1) != 0;
    const bool below = sticky || any_bits_below(mag, drop - 1);
    halfway = round && !below;
    if (round && (below || (m & 1))) ++m;
  }
  if (tie) *tie = halfway;
  int e = result_exp;
  if (m >> p) {  // carried into a new leading bit
    m >>= 1;
    ++e;
  }
  const Bits sign = Bits(Bits(negative) << (sizeof(Bits) * 8 - 1));
  const uint64_t max_field = (uint64_t(1) << F::kExpBits) - 1;
  if (m < (uint64_t(1) << (p - 1))) return from_bits<T>(Bits(sign | Bits(m)));  // subnormal
  const uint64_t field = uint64_t(e - F::kMinExp + 1);
  if (field >= max_field) return signed_infinity<T>(negative);
  const uint64_t mant = m & ((uint64_t(1) << (p - 1)) - 1);
  return from_bits<T>(Bits(sign | Bits(field << (p - 1)) | Bits(mant)));
}

// A finite non-zero double as (-1)^negative * m * 2^e, m < 2^53.
struct Decomposed {
  bool negative;
  uint64_t m;
  int e;
};

inline Decomposed decompose(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  const int field = int((b >> 52) & 0x7ff);
  const uint64_t frac = b & ((uint64_t(1) << 52) - 1);
  if (field == 0) return {(b >> 63) != 0, frac, -1074};
  return {(b >> 63) != 0, frac | (uint64_t(1) << 52), field - 1075};
}

// w /= divisor for an n-word magnitude; returns whether a remainder is left.
inline bool divide_words(uint64_t* w, int n, uint64_t divisor) {
  uint64_t rem = 0;
  for (int i = n - 1; i >= 0; --i) {
    const uint128_t cur = (uint128_t(rem) << 64) | w[i];
    w[i] = uint64_t(cur / divisor);
    rem = uint64_t(cur % divisor);
  }
  return rem != 0;
}

// A double holding an exact value (finite), rounded once to T.
template <class T>
inline T round_double(double x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else if constexpr (std::is_same_v<T, float>) {
    return float(x);  // one IEEE rounding, to nearest even
  } else {
    if (x == 0) return signed_zero<T>(std::signbit(x));
    const Decomposed d = decompose(x);
    return round_exact<T>(d.negative, &d.m, 1, d.e, false);
  }
}

// The mean x / count (x a finite double holding an exact sum), rounded once.
template <class T>
inline T round_double_mean(double x, uint64_t count) {
  if (x == 0) return signed_zero<T>(std::signbit(x));
  const double q = x / double(count);  // one rounding: exact for T = double
  if constexpr (std::is_same_v<T, double>) {
    if (count < (uint64_t(1) << 53)) return q;
  }
  if constexpr (std::is_same_v<T, float>) {
    // The same test as below in two instructions: in float's normal range, a halfway point has
    // the 29 bits of q below a float's last bit at 1000...0.
    uint64_t b;
    std::memcpy(&b, &q, sizeof b);
    if (count < (uint64_t(1) << 53) && std::fabs(q) >= double(std::numeric_limits<float>::min())) {
      if ((b & 0x1fffffffu) != 0x10000000u) return float(q);
      // A halfway point is the mean itself, which rounds to even, when the division was exact:
      // q (25 significant bits) times a count below 2^28 is exact, so it then gives x back.
      if (count < (uint64_t(1) << 28) && q * double(count) == x) return float(q);
    }
  }
  // q rounded to T is the right answer unless q is a halfway point of T,
  // where the division's own rounding may have crossed it: then divide exactly.
  if (!std::is_same_v<T, double> && count < (uint64_t(1) << 53) && std::isfinite(q) && q != 0) {
    bool tie = false;
    const Decomposed dq = decompose(q);
    const T r = round_exact<T>(dq.negative, &dq.m, 1, dq.e, false, &tie);
    if (!tie) return r;
  }
  const Decomposed d = decompose(x);
  uint64_t words[3] = {0, 0, d.m};
  const bool rem = divide_words(words, 3, count);
  return round_exact<T>(d.negative, words, 3, d.e - 128, rem);
}

// ---- operations on states (pointers to ExactLayout<T>::kWords words) ----

// w += v << (64 * word) for a two-word v, carrying upward.
template <int N>
inline void add_words(uint64_t* w, int word, uint64_t lo, uint64_t hi) {
  uint64_t carry = 0;
  const uint64_t a = w[word] + lo;
  carry = a < lo;
  w[word] = a;
  if (word + 1 < N) {
    const uint64_t b = w[word + 1] + hi;
    const uint64_t c = b + carry;
    carry = (b < hi) | (c < b);
    w[word + 1] = c;
    for (int i = word + 2; carry && i < N; ++i) carry = ++w[i] == 0;
  }
}

// w -= v << (64 * word) for a two-word v, borrowing upward.
template <int N>
inline void sub_words(uint64_t* w, int word, uint64_t lo, uint64_t hi) {
  uint64_t borrow = w[word] < lo;
  w[word] -= lo;
  if (word + 1 < N) {
    const uint64_t b = w[word + 1];
    const uint64_t c = b - hi - borrow;
    borrow = (b < hi) | ((b - hi) < borrow);
    w[word + 1] = c;
    for (int i = word + 2; borrow && i < N; ++i) borrow = w[i]-- == 0;
  }
}

// Adds a finite double that is a multiple of 2^kUnitExp to the sum words.
template <class T>
inline void add_finite(uint64_t* s, double x) {
  using L = ExactLayout<T>;
  if (x == 0) return;
  Decomposed d = decompose(x);
  int shift = d.e - L::kUnitExp;
  if (shift < 0) {  // the low bits are zero: x is on the grid
    d.m >>= -shift;
    shift = 0;
  }
  const int word = shift >> 6, bit = shift & 63;
  const uint64_t lo = d.m << bit, hi = bit ? d.m >> (64 - bit) : 0;
  if (d.negative)
    sub_words<L::kSumWords>(s, word, lo, hi);
  else
    add_words<L::kSumWords>(s, word, lo, hi);
}

// Adds a value (a term or an exact partial sum, any double the terms of T
// can sum to) to the state, without counting it.
template <class T>
inline void add_value(uint64_t* s, double x) {
  using L = ExactLayout<T>;
  if (!(std::signbit(x) && x == 0)) s[L::kFlags] |= kExactNonNegZero;
  if (std::isfinite(x)) {
    add_finite<T>(s, x);
  } else if (std::isnan(x)) {
    s[L::kFlags] |= kExactNaN;
  } else {
    s[L::kFlags] |= x > 0 ? kExactPosInf : kExactNegInf;
  }
}

// a += b for two states.
template <class T>
inline void merge_state(uint64_t* a, const uint64_t* b) {
  using L = ExactLayout<T>;
  uint64_t carry = 0;
  for (int i = 0; i < L::kSumWords; ++i) {
    const uint64_t x = a[i] + b[i];
    const uint64_t y = x + carry;
    carry = (x < b[i]) | (y < x);
    a[i] = y;
  }
  a[L::kCount] += b[L::kCount];
  a[L::kFlags] |= b[L::kFlags];
}

// NaN or an infinity if the flags say so.
template <class T>
inline bool special_result(uint64_t flags, T* out) {
  if ((flags & kExactNaN) || ((flags & kExactPosInf) && (flags & kExactNegInf))) {
    *out = canonical_nan<T>();
    return true;
  }
  if (flags & (kExactPosInf | kExactNegInf)) {
    *out = signed_infinity<T>((flags & kExactNegInf) != 0);
    return true;
  }
  return false;
}

// The state's sum (mean: divided by `count`), rounded once to T.
template <class T>
T finish_state(const uint64_t* s, bool mean, uint64_t count) {
  using L = ExactLayout<T>;
  T special;
  if (special_result<T>(s[L::kFlags], &special)) return special;
  uint64_t mag[L::kSumWords + 1];
  const bool negative = (s[L::kSumWords - 1] >> 63) != 0;
  uint64_t borrow = negative;  // magnitude: negate when negative (~x + 1)
  bool zero = true;
  for (int i = 0; i < L::kSumWords; ++i) {
    const uint64_t x = negative ? ~s[i] : s[i];
    mag[i + 1] = x + borrow;
    borrow = borrow && mag[i + 1] == 0;
    zero &= mag[i + 1] == 0;
  }
  if (zero) return signed_zero<T>((s[L::kFlags] & kExactNonNegZero) == 0);
  if (!mean || count == 1)
    return round_exact<T>(negative, mag + 1, L::kSumWords, L::kUnitExp, false);
  // (mag << 64) / count: the extra low word keeps more than kPrecision + 2
  // bits in the quotient, so the remainder only decides ties.
  mag[0] = 0;
  const bool rem = divide_words(mag, L::kSumWords + 1, count);
  return round_exact<T>(negative, mag, L::kSumWords + 1, L::kUnitExp - 64, rem);
}

// Whether a state's flag word is one this library writes.
inline bool valid_flags(uint64_t flags) { return (flags & ~uint64_t(kExactAllFlags)) == 0; }

}  // namespace detail
}  // namespace scatterkit
