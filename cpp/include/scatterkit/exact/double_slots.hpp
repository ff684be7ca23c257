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
#include <cstdint>
#include <cstring>
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
  void spill(double* slot, double b) {
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

// The exact sum of a target's parts (slots of several tables), rounded once,
// or divided by `count` first (mean).
template <class T>
T finish_parts(const ExactSlots<T>* slots, const double* const* tables, int64_t parts, int64_t x,
               bool mean, uint64_t count) {
  using L = ExactLayout<T>;
  double sum = tables[0][x];
  bool fast = slots[0].state(sum) == nullptr;
  for (int64_t k = 1; k < parts && fast; ++k) {
    const double b = tables[k][x];
    fast = sum_is_exact(sum, b);  // also false for a moved slot (NaN)
    sum += b;
  }
  if (fast) return mean ? round_double_mean<T>(sum, count) : round_double<T>(sum);
  uint64_t state[L::kWords] = {};
  for (int64_t k = 0; k < parts; ++k) {
    const double v = tables[k][x];
    if (const uint64_t* moved = slots[k].state(v))
      merge_state<T>(state, moved);
    else
      add_value<T>(state, v);
  }
  return finish_state<T>(state, mean, count);
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
