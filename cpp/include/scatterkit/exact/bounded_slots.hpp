// Exact sums: exact_state_fold's table for many terms of float16, bfloat16 or float32 into a small
// tensor's states (state.hpp). A double slot and a count per element, added to without a check:
// each step of terms is scanned for its largest and smallest magnitudes, and with every term a
// multiple of 2^(lo - 150) (lo: the smallest exponent field of a nonzero term so far, at least 1)
// a bound on every slot's sum below 2^52 such units proves the sums exact. A step that would pass
// the bound first moves the slots' sums into exact states and starts them again (a cost of the
// table's size, paid at most once per as many terms); a step that cannot wait for that, or holds
// an infinity or NaN, goes into the states term by term. Where line_fold.hpp's bound breaks for
// good and every add is checked from then on, this one breaks for a step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/exact/superaccumulator.hpp"
#include "scatterkit/float_format.hpp"
#include "scatterkit/half.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/prefetch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Elements up to which exact_state_fold folds float terms through BoundedSlots: a table in L1 or
// L2, whose moves stay cheap next to the terms.
constexpr int64_t kBoundedSlotsMaxElements = 4096;

// 2^e for e in [-1022, 1023], without a call into libm (ldexp cost about as much as a step's adds).
inline double power_of_two(int e) { return from_bits<double>(uint64_t(1023 + e) << 52); }

template <class T>
struct BoundedSlots {
  using L = ExactLayout<T>;
  static constexpr double kLimit = 0x1p52;  // half of 2^53: a margin for the bound's own rounding

  explicit BoundedSlots(int64_t n)
      : elements(n), sums(new double[size_t(n)]), counts(new uint32_t[size_t(n)]()) {
    std::fill_n(sums.get(), n, -0.0);  // the identity: -0 + -0 stays -0, any other term does not
  }

  int64_t elements;
  std::unique_ptr<double[]> sums;
  std::unique_ptr<uint32_t[]> counts;
  std::vector<uint64_t> states;  // exact states of what left the slots, empty until needed
  int lo = 0;                    // the units' exponent field
  double bound = 0;              // on any slot's sum, in units (0: every slot is a zero)
  int64_t credit = 0;            // terms since the slots last moved

  uint64_t* state(int64_t x) {
    if (states.empty()) states.assign(size_t(elements * L::kWords), 0);
    return &states[size_t(x * L::kWords)];
  }

  // Whether a step of len terms, whose magnitudes' bits (sign cleared) reach at most `top` and at
  // least `low_less_one` + 1 (zeros left out: all ones), may add to the slots unchecked; moves the
  // slots' sums first if the bound needs it, once per at least `elements` terms.
  bool admit(uint32_t top, uint32_t low_less_one, int64_t len) {
    credit += len;
    if (top >= 0x7f800000u) return false;          // an infinity or NaN
    if (low_less_one == 0xffffffffu) return true;  // only zeros
    const int step_lo = std::max(int((low_less_one + 1) >> 23), 1);
    const int step_hi = std::max(int(top >> 23), 1);
    // each term below 2^(step_hi - unit + 24) units of 2^(unit - 150)
    auto weight = [&](int unit) { return double(len) * power_of_two(step_hi - unit + 24); };
    if (weight(step_lo) > kLimit) return false;  // too wide for any slot
    if (bound == 0) {
      lo = step_lo;
      bound = weight(lo);
      return true;
    }
    const int unit = std::min(lo, step_lo);
    const double grown = bound * power_of_two(lo - unit) + weight(unit);
    if (grown <= kLimit) {
      lo = unit;
      bound = grown;
      return true;
    }
    if (credit < elements) return false;
    credit = 0;
    for (int64_t x = 0; x < elements; ++x) {
      add_value<T>(state(x), sums[x]);
      sums[x] = -0.0;
    }
    lo = step_lo;
    bound = weight(lo);
    return true;
  }

  // The slots into the states of `elements` elements (which held their own terms).
  void add_to(uint64_t* out) const {
    for (int64_t x = 0; x < elements; ++x) {
      uint64_t* s = out + x * L::kWords;
      add_value<T>(s, sums[x]);
      s[L::kCount] += counts[x];
      if (!states.empty()) merge_state<T>(s, &states[size_t(x * L::kWords)]);
    }
  }
};

// The target of v in [0, size), or -1 if `valid` rejects it.
template <class KI>
SCATTERKIT_ALWAYS_INLINE int64_t bounded_target(KI v, int64_t size, IndexRange valid) {
  int64_t a = int64_t(v);
  if (__builtin_expect(uint64_t(a) >= uint64_t(size), 0)) {
    if (!valid(v)) return -1;
    a = wrap_index(v, size);
  }
  return a;
}

// n terms added to the slots unchecked; false at the first bad index.
template <class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool add_bounded_step(BoundedSlots<T>& f, const KI* idx, const T* upd,
                                               int64_t n, IndexRange valid) {
  double* sums = f.sums.get();  // locals: the slots' stores cannot change them
  uint32_t* counts = f.counts.get();
  const int64_t size = f.elements;
#pragma GCC unroll 4
  for (int64_t k = 0; k < n; ++k) {
    const int64_t a = bounded_target(idx[k], size, valid);
    if (a < 0) return false;
    sums[a] += exact_double(upd[k]);
    ++counts[a];
  }
  return true;
}

// n terms into the exact states one by one (a step the slots cannot take).
template <class T, class KI>
bool add_bounded_terms(BoundedSlots<T>& f, const KI* idx, const T* upd, int64_t n,
                       IndexRange valid) {
  using L = ExactLayout<T>;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t a = bounded_target(idx[k], f.elements, valid);
    if (a < 0) return false;
    uint64_t* s = f.state(a);
    add_value<T>(s, exact_double(upd[k]));
    ++s[L::kCount];
  }
  return true;
}

template <class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_bounded_body(BoundedSlots<T>& f, const KI* idx, const T* upd,
                                                int64_t n, IndexRange valid) {
  uint32_t converted[kStreamStep];
  for (int64_t j = 0; j < n; j += kStreamStep) {
    const int64_t len = std::min(kStreamStep, n - j);
    prefetch_inputs_ahead(j, n, idx, upd);
    const uint32_t* bits = converted;
    if constexpr (std::is_same_v<T, float>)
      bits = reinterpret_cast<const uint32_t*>(upd + j);
    else
      for (int64_t k = 0; k < len; ++k) converted[k] = float_bits(to_float(upd[j + k]));
    uint32_t top = 0, low_less_one = 0xffffffffu;  // unsigned max and min: they vectorize
    for (int64_t k = 0; k < len; ++k) {
      const uint32_t mag = bits[k] & 0x7fffffffu;
      top = top > mag ? top : mag;
      low_less_one = low_less_one < mag - 1 ? low_less_one : mag - 1;
    }
    const bool ok = f.admit(top, low_less_one, len)
                        ? add_bounded_step(f, idx + j, upd + j, len, valid)
                        : add_bounded_terms(f, idx + j, upd + j, len, valid);
    if (!ok) return false;
  }
  return true;
}

template <class T, class KI>
bool fold_bounded_baseline(BoundedSlots<T>& f, const KI* idx, const T* upd, int64_t n,
                           IndexRange valid) {
  return fold_bounded_body(f, idx, upd, n, valid);
}

#ifdef SCATTERKIT_EXACT_AVX2
template <class T, class KI>
__attribute__((target("avx2"))) bool fold_bounded_avx2(BoundedSlots<T>& f, const KI* idx,
                                                       const T* upd, int64_t n, IndexRange valid) {
  return fold_bounded_body(f, idx, upd, n, valid);
}
#endif

// The n terms upd[p] into f at the targets idx[p] (wrapped once where negative); false at the
// first index `valid` rejects. The scan wants AVX2 where the processor has it.
template <class T, class KI>
bool fold_bounded(BoundedSlots<T>& f, const KI* idx, const T* upd, int64_t n, IndexRange valid) {
#ifdef SCATTERKIT_EXACT_AVX2
  if (has_avx2()) return fold_bounded_avx2(f, idx, upd, n, valid);
#endif
  return fold_bounded_baseline(f, idx, upd, n, valid);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
