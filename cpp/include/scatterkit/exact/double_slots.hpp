// Exact sums, the layer over the superaccumulator (superaccumulator.hpp): double slots, the
// fast path of the ops' exact=True strategies. Every target's terms are summed without
// rounding and the sum (or the mean) is rounded once, so the bits do not depend on the order
// of the updates, on how they are grouped, or on the thread count.
//
// A double per target: every term of a float16, bfloat16, float32 or float64 tensor is a
// double, and a double sum of them stays exact as long as it fits 53 bits: each addition is
// checked (TwoSum's error term is zero). A target whose addition is not exact, or that meets
// an infinity or NaN, moves for good to a superaccumulator, and its slot holds a NaN naming
// it. Since no ordering is needed, threads may split one target's updates: each folds a part
// into a table of its own, and the tables are summed exactly at the end (part_tables.hpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/superaccumulator.hpp"
#include "scatterkit/half.hpp"
#include "scatterkit/parallel.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Whether a + b is exact in a double (false for an infinity or NaN too).
// TwoSum's error term, (a - av) + (b - bv), is the exact rounding error and
// each of its two parts is exact, so it is zero when the parts cancel.
SCATTERKIT_ALWAYS_INLINE bool sum_is_exact(double a, double b) {
  const double s = a + b;
  const double bv = s - a;
  const double av = s - bv;
  return a - av == bv - b;
}

// Double slots with exact states for the targets that left the fast path.
template <class T>
class ExactSlots {
 public:
  using L = ExactLayout<T>;

  // slot += b, exactly. Never rounds: a slot whose sum stops being exact moves.
  SCATTERKIT_ALWAYS_INLINE void add(double* slot, double b) {
    const double a = *slot;
    if (__builtin_expect(sum_is_exact(a, b), 1))
      *slot = a + b;
    else
      spill(slot, b);  // inexact, an infinity or NaN, or a slot that already moved
  }

  // slot += b, exactly, where every term of the table so far (b too) is a multiple of 2^q and
  // limit is 2^(q + 53) (ExactBound::sum_limit): a sum below it is exact. Others take add's check.
  SCATTERKIT_ALWAYS_INLINE void add_below(double* slot, double b, double limit) {
    const double s = *slot + b;
    if (__builtin_expect(std::fabs(s) < limit, 1))  // false for a moved slot's NaN too
      *slot = s;
    else
      add(slot, b);
  }

  // Whether no slot has moved.
  bool empty() const { return states_.empty(); }

  // The exact state a slot moved to, or null if it holds its sum.
  const uint64_t* state(double slot) const {
    return slot == slot ? nullptr : &states_[state_number(slot) * L::kWords];
  }

 private:
  static constexpr uint64_t kTag =
      0x7ff8000000000000;  // a quiet NaN; the payload numbers the state
  static size_t state_number(double slot) {
    uint64_t b;
    std::memcpy(&b, &slot, sizeof b);
    return size_t(b & ~kTag);
  }

#if defined(__GNUC__)
  __attribute__((noinline))
#endif
  void
  spill(double* slot, double b) {
    const double a = *slot;
    size_t n;
    if (a != a) {
      n = state_number(a);
    } else {
      n = states_.size() / L::kWords;
      states_.resize(states_.size() + L::kWords, 0);
      add_value<T>(&states_[n * L::kWords], a);
      const uint64_t tagged = kTag | uint64_t(n);
      std::memcpy(slot, &tagged, sizeof tagged);
    }
    add_value<T>(&states_[n * L::kWords], b);
  }

  std::vector<uint64_t> states_;
};

// The parts of a target (slots moved into states, or doubles) added to `state`, whose exact
// sum is then rounded once, or divided by `count` first (mean): where a double sum is not
// exact.
template <class T>
T finish_parts_in(uint64_t* state, const ExactSlots<T>* slots, const double* const* tables,
                  int64_t parts, int64_t x, bool mean, uint64_t count) {
  for (int64_t k = 0; k < parts; ++k) {
    const double v = tables[k][x];
    if (const uint64_t* moved = slots[k].state(v))
      merge_state<T>(state, moved);
    else
      add_value<T>(state, v);
  }
  return finish_state<T>(state, mean, count);
}

// Adds the parts `from` to `parts` of target x to `sum` while every double sum is exact;
// false at the first that is not (a moved slot, NaN, is not).
inline bool add_parts_exactly(double& sum, const double* const* tables, int64_t from, int64_t parts,
                              int64_t x) {
  for (int64_t k = from; k < parts; ++k) {
    const double b = tables[k][x];
    if (!sum_is_exact(sum, b)) return false;
    sum += b;
  }
  return true;
}

// The exact sum of a target's parts (slots of several tables), rounded once,
// or divided by `count` first (mean).
template <class T>
T finish_parts(const ExactSlots<T>* slots, const double* const* tables, int64_t parts, int64_t x,
               bool mean, uint64_t count) {
  using L = ExactLayout<T>;
  double sum = tables[0][x];
  const bool fast = slots[0].state(sum) == nullptr && add_parts_exactly(sum, tables, 1, parts, x);
  if (fast) return mean ? round_double_mean<T>(sum, count) : round_double<T>(sum);
  uint64_t state[L::kWords] = {};
  return finish_parts_in<T>(state, slots, tables, parts, x, mean, count);
}

// The same with one more term first, `start` (an initial value; -0, the identity, for none).
template <class T>
T finish_parts_from(double start, const ExactSlots<T>* slots, const double* const* tables,
                    int64_t parts, int64_t x, bool mean, uint64_t count) {
  using L = ExactLayout<T>;
  double sum = start;
  const bool fast = std::isfinite(start) && add_parts_exactly(sum, tables, 0, parts, x);
  if (fast) return mean ? round_double_mean<T>(sum, count) : round_double<T>(sum);
  uint64_t state[L::kWords] = {};
  add_value<T>(state, start);
  return finish_parts_in<T>(state, slots, tables, parts, x, mean, count);
}

// ---- a bound that proves double sums exact, batched --------------------------------------
//
// Every term of a float16, bfloat16 or float32 tensor is a float32. If every term folded into a
// table is a multiple of 2^q and their magnitudes, each counted as often as it can reach one slot,
// total less than 2^(q + 53), then every partial sum of every slot is a multiple of 2^q below
// 2^(q + 53) in magnitude, which a double holds exactly: the adds need no check. Terms are taken
// a step at a time (scan_terms, vector instructions), so that the check costs a few instructions
// per step, not per update.

// Terms as the bound sees them: the largest magnitude (float32 bits, sign cleared) and the lowest
// set bit of any nonzero term, as its exponent plus kLowBias (all ones: no nonzero term).
struct TermRange {
  static constexpr int kLowBias = 277;  // 127 for the exponent of a power of two, 150 for its unit
  uint32_t top = 0;
  uint32_t low = 0xffffffffu;
};

// Folds n float32 bit patterns into r. Branch-free, so that it vectorizes; its unsigned min and
// max want AVX2 (the build's baseline, SSE2, has none), so hot loops that call it are compiled for
// AVX2 as well (line_fold.hpp), and scan_terms_dispatch chooses at run time.
SCATTERKIT_ALWAYS_INLINE void scan_term(uint32_t bits, uint32_t& top, uint32_t& low) {
  const uint32_t a = bits & 0x7fffffffu;
  const uint32_t e = a >> 23;
  // The significand's lowest set bit: the fraction's, else the implicit one's place (bit 23,
  // set here whatever the exponent's low bit; a subnormal's fraction has a lower one). That
  // power of two below 2^24 converts to float exactly, its exponent field 127 + its position.
  const uint32_t m = a | 0x800000u;
  const uint32_t lowest = float_bits(float(int32_t(m & (0u - m))));
  const uint32_t code = ((e > 1u ? e : 1u) + (lowest >> 23)) | (0u - uint32_t(a == 0));
  top = top > a ? top : a;
  low = low < code ? low : code;
}

SCATTERKIT_ALWAYS_INLINE void scan_terms(const uint32_t* bits, int64_t n, TermRange& r) {
  uint32_t top = r.top, low = r.low;  // locals: no aliasing
  for (int64_t x = 0; x < n; ++x) scan_term(bits[x], top, low);
  r.top = top;
  r.low = low;
}

#if defined(__GNUC__) && defined(__x86_64__)
#define SCATTERKIT_EXACT_AVX2 1
__attribute__((target("avx2"))) inline void scan_terms_avx2(const uint32_t* bits, int64_t n,
                                                            TermRange& r) {
  scan_terms(bits, n, r);
}

// Whether the processor runs AVX2, asked once.
inline bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#else
inline bool has_avx2() { return false; }
#endif

// scan_terms in AVX2 where the processor has it.
inline void scan_terms_dispatch(const uint32_t* bits, int64_t n, TermRange& r) {
#ifdef SCATTERKIT_EXACT_AVX2
  if (has_avx2()) return scan_terms_avx2(bits, n, r);
#endif
  scan_terms(bits, n, r);
}

// Whether the bound applies to terms of T: float16, bfloat16 and float32, whose terms are float32s
// (a float64 term can use every bit of a double).
template <class T>
constexpr bool bounded_terms_v = !std::is_same_v<T, double>;

// The terms of v[0, n) into r (bounded_terms_v<T>).
template <class T>
void scan_values(const T* v, int64_t n, TermRange& r) {
  if constexpr (std::is_same_v<T, float>) {
    scan_terms_dispatch(reinterpret_cast<const uint32_t*>(v), n, r);
  } else {  // converted a chunk at a time
    constexpr int64_t kChunk = 256;
    uint32_t bits[kChunk];
    for (int64_t x0 = 0; x0 < n; x0 += kChunk) {
      const int64_t m = std::min(kChunk, n - x0);
      for (int64_t x = 0; x < m; ++x) bits[x] = float_bits(to_float(v[x0 + x]));
      scan_terms_dispatch(bits, m, r);
    }
  }
}

// The bound of one table (see above). It holds nothing until opened: a fold that keeps it opens
// it before its first term and then admits every term it folds, so that a table folded
// otherwise never counts as proven.
//
// Past the bound, the lowest bit still gives a cheaper check than TwoSum's: with every term
// a multiple of 2^q, so is every sum of them, and a + b is exact when its rounded result lies
// below 2^(q + 53) in magnitude (below it the exact sum is a double; from it on, so is the
// rounded one). ExactSlots::add_below checks that.
class ExactBound {
 public:
  void open() { holds_ = scanned_ = true; }

  // Admits terms of range r, each of which may reach a slot up to `times` times (a step of
  // updates: its length; initial values: once). Returns whether the bound still holds: once
  // broken, it stays so.
  bool admit(const TermRange& r, double times) {
    if (r.low < low_) {
      low_ = r.low;
      limit_ = limit_of(low_);
      sum_limit_ = 2 * limit_;
    }
    if (r.top >= 0x7f800000u) return holds_ = false;  // an infinity or NaN
    total_ += double(bits_float(r.top)) * times;
    return holds_ = holds_ && total_ <= limit_;
  }

  // Whether every term so far was admitted: add_below may check against sum_limit().
  bool scanned() const { return scanned_; }
  bool holds() const { return holds_; }
  // 2^(q + 53) for terms that are multiples of 2^q (infinite while every term is zero).
  double sum_limit() const { return sum_limit_; }

  // Whether the sums of the slots of n tables, each under its bound, are exact too.
  static bool hold_together(const ExactBound* b, int64_t n) {
    double total = 0;
    uint32_t low = 0xffffffffu;
    for (int64_t k = 0; k < n; ++k) {
      if (!b[k].holds_) return false;
      total += b[k].total_;
      low = std::min(low, b[k].low_);
    }
    return total <= limit_of(low);
  }

 private:
  // 2^(q + 52) for terms that are multiples of 2^q: half the exact limit, a margin far wider
  // than the rounding of total_ (relative 2^-53 per addition).
  static double limit_of(uint32_t low) {
    return low == 0xffffffffu ? std::numeric_limits<double>::infinity()
                              : std::ldexp(1.0, int(low) - TermRange::kLowBias + 52);
  }

  uint32_t low_ = 0xffffffffu;
  double total_ = 0;
  double limit_ = std::numeric_limits<double>::infinity();
  double sum_limit_ = std::numeric_limits<double>::infinity();
  bool holds_ = false, scanned_ = false;
};

// Starts slots s[0, n) at the initial values v[0, n): a finite one as it is, an infinity or NaN
// moved to its exact state (its slot -0 first: the identity). One branch-free pass, which
// vectorizes (with AVX2: start_slots chooses), and a second only where a value is not finite.
// With `terms`, float32 values are scanned into it in the same pass (scan_terms). Returns
// whether a value is a NaN.
template <class T>
SCATTERKIT_ALWAYS_INLINE bool start_slots_body(const T* v, int64_t n, double* s,
                                               ExactSlots<T>& slots, TermRange* terms = nullptr) {
  uint64_t special = 0;
  if (std::is_same_v<T, float> && terms != nullptr) {  // a float32's bits are the term's
    uint32_t top = terms->top, low = terms->low;
    for (int64_t x = 0; x < n; ++x) {
      const double d = exact_double(v[x]);
      s[x] = d;
      uint64_t b;
      std::memcpy(&b, &d, sizeof b);
      special |= (~b & 0x7ff0000000000000u) == 0;  // an infinity or NaN
      scan_term(float_bits(float(d)), top, low);
    }
    terms->top = top;
    terms->low = low;
  } else {
    for (int64_t x = 0; x < n; ++x) {
      const double d = exact_double(v[x]);
      s[x] = d;
      uint64_t b;
      std::memcpy(&b, &d, sizeof b);
      special |= (~b & 0x7ff0000000000000u) == 0;
    }
    if constexpr (bounded_terms_v<T>)
      if (terms != nullptr) scan_values(v, n, *terms);
  }
  if (!special) return false;
  bool nan = false;
  for (int64_t x = 0; x < n; ++x) {
    const double d = s[x];
    if (std::isfinite(d)) continue;
    s[x] = -0.0;
    slots.add(s + x, d);
    nan |= d != d;
  }
  return nan;
}

#ifdef SCATTERKIT_EXACT_AVX2
template <class T>
__attribute__((target("avx2"))) bool start_slots_avx2(const T* v, int64_t n, double* s,
                                                      ExactSlots<T>& slots) {
  return start_slots_body(v, n, s, slots);
}
#endif

template <class T>
bool start_slots(const T* v, int64_t n, double* s, ExactSlots<T>& slots) {
#ifdef SCATTERKIT_EXACT_AVX2
  if (has_avx2()) return start_slots_avx2(v, n, s, slots);
#endif
  return start_slots_body(v, n, s, slots);
}

// Whether any of v[0, n) is a NaN.
template <class T>
bool any_nan(const T* v, int64_t n) {
  std::atomic<bool> nan{false};
  parallel_for(n, n * int64_t(sizeof(T)), [&](int64_t b, int64_t e) {
    bool any = false;
    for (int64_t x = b; x < e; ++x) any |= exact_double(v[x]) != exact_double(v[x]);
    if (any) nan.store(true);
  });
  return nan.load();
}

// Folds float32 bit patterns into the largest magnitude (sign cleared) and
// the smallest non-zero one less one (a zero wraps to 0xffffffff, left out).
// Unsigned max/min, which vectorize.
#define SCATTERKIT_MAGNITUDE_RANGE_LOOP                       \
  uint32_t h = hi, l = lo_less_one; /* locals: no aliasing */ \
  for (int64_t x = 0; x < n; ++x) {                           \
    const uint32_t mag = bits[x] & 0x7fffffffu;               \
    h = std::max(h, mag);                                     \
    l = std::min(l, uint32_t(mag - 1));                       \
  }                                                           \
  hi = h;                                                     \
  lo_less_one = l;
#if defined(__GNUC__) && defined(__x86_64__)
// Eight lanes a step where the processor has AVX2 (the build's baseline, SSE2,
// has no unsigned max/min: the scan then cost as much as a row's fold).
__attribute__((target("avx2"))) inline void magnitude_range_avx2(const uint32_t* bits, int64_t n,
                                                                 uint32_t& hi,
                                                                 uint32_t& lo_less_one) {
  SCATTERKIT_MAGNITUDE_RANGE_LOOP
}
#endif
inline void magnitude_range(const uint32_t* bits, int64_t n, uint32_t& hi, uint32_t& lo_less_one) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return magnitude_range_avx2(bits, n, hi, lo_less_one);
#endif
  SCATTERKIT_MAGNITUDE_RANGE_LOOP
}
#undef SCATTERKIT_MAGNITUDE_RANGE_LOOP

// The same over the terms of a float type (as float32 bit patterns, exactly).
template <class T>
void widen_magnitude_range(const T* v, int64_t n, uint32_t& hi, uint32_t& lo_less_one) {
  if constexpr (std::is_same_v<T, float>) {
    magnitude_range(reinterpret_cast<const uint32_t*>(v), n, hi, lo_less_one);
  } else {  // converted a chunk at a time, then scanned as float32
    constexpr int64_t kChunk = 256;
    uint32_t bits[kChunk];
    for (int64_t x0 = 0; x0 < n; x0 += kChunk) {
      const int64_t m = std::min(kChunk, n - x0);
      for (int64_t x = 0; x < m; ++x) bits[x] = detail::float_bits(to_float(v[x0 + x]));
      magnitude_range(bits, m, hi, lo_less_one);
    }
  }
}

// Whether every partial sum of the updates (and the initial values, if
// given) is exact in a double, so that a fold needs no check: with hi and lo
// the largest and smallest exponent fields (lo >= 1), each term is a multiple
// of 2^(lo - 150) below 2^(hi - 126), and fewer than 2^bits of them stay
// below 2^(lo - 150 + 53) when hi - lo + bits <= 29.
template <class T>
bool double_sums_exact(const T* upd, int64_t n, const T* init, int64_t count) {
  if constexpr (std::is_same_v<T, double>) {
    return false;  // double terms use all 53 bits
  } else {
    uint32_t top = 0, bottom_less_one = 0xffffffffu;
    widen_magnitude_range(upd, n, top, bottom_less_one);
    if (init) widen_magnitude_range(init, count, top, bottom_less_one);
    if (top >= 0x7f800000u) return false;  // an infinity or NaN
    if (top == 0) return true;             // only zeros
    const int hi = int(top >> 23), lo = std::max(int((bottom_less_one + 1) >> 23), 1);
    const int bits = 64 - __builtin_clzll(uint64_t(n) + 1);
    return hi - lo + bits <= 29;
  }
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
