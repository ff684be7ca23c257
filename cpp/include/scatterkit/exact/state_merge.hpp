// Exact sums: merging runs of states (exact_state_merge, state.hpp) in one pass that checks their
// flag words as it goes. A state is mostly read once, so a separate pass of checks first cost
// as much as the merge; a bad flag word found after cells changed is undone instead
// (unmerge_states), which leaves `into` as it was.
#pragma once

#include <cstdint>

#include "scatterkit/exact/superaccumulator.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SCATTERKIT_EXACT_AVX512 1
#endif

namespace scatterkit {
namespace detail {

// A flag word this library writes (valid_flags) as a mask of one bit: 0 or 1.
inline uint64_t bad_flags(uint64_t flags) {
  return uint64_t((flags & ~uint64_t(kExactAllFlags)) != 0);
}

// into[x] += other[x] for x in [b, e) where both flag words are valid; a cell with a bad one
// keeps into's flag word (its sum and count still merge, to be undone). saved[x] gets into's
// flag word, which fits a byte where it is valid. Returns whether a flag word was bad.
template <class T>
bool merge_states_checked(uint64_t* into, const uint64_t* other, uint8_t* saved, int64_t b,
                          int64_t e) {
  using L = ExactLayout<T>;
  uint64_t bad = 0;
  for (int64_t x = b; x < e; ++x) {
    uint64_t* s = into + x * L::kWords;
    const uint64_t* o = other + x * L::kWords;
    const uint64_t f = s[L::kFlags], g = o[L::kFlags];
    const uint64_t cell_bad = bad_flags(f | g);
    saved[x] = uint8_t(f);
    merge_state<T>(s, o);
    s[L::kFlags] = cell_bad ? f : f | g;
    bad |= cell_bad;
  }
  return bad != 0;
}

#ifdef SCATTERKIT_EXACT_AVX512
// The same for the 8-word layout, a state to a 512-bit register: the six sum words add lane by
// lane and their carries ripple by one integer addition on the lanes' masks (a lane that
// generated a carry cannot also pass one on: its sum is at most 2^64 - 2).
__attribute__((target("avx512f"))) inline bool merge_states_checked_avx512(uint64_t* into,
                                                                           const uint64_t* other,
                                                                           uint8_t* saved,
                                                                           int64_t b, int64_t e) {
  constexpr unsigned kSum = 0x3f, kFlagLane = 0x80;
  const __m512i ones = _mm512_set1_epi64(-1), one = _mm512_set1_epi64(1);
  const __m512i unknown = _mm512_set1_epi64(int64_t(~uint64_t(kExactAllFlags)));
  unsigned bad = 0;
  for (int64_t x = b; x < e; ++x) {
    const __m512i u = _mm512_loadu_si512(into + 8 * x), v = _mm512_loadu_si512(other + 8 * x);
    __m512i s = _mm512_add_epi64(u, v);
    const unsigned gen = _mm512_cmplt_epu64_mask(s, v) & kSum;
    const unsigned pass = _mm512_cmpeq_epi64_mask(s, ones) & kSum;
    const unsigned carry_in = (((gen << 1) + pass) ^ pass) & (kSum & ~1u);
    s = _mm512_mask_add_epi64(s, __mmask8(carry_in), s, one);
    const __m512i f = _mm512_or_si512(u, v);
    const unsigned cell_bad = _mm512_mask_test_epi64_mask(kFlagLane, f, unknown);
    s = _mm512_mask_mov_epi64(s, __mmask8(kFlagLane & ~cell_bad), f);
    s = _mm512_mask_mov_epi64(s, __mmask8(cell_bad), u);
    saved[x] = uint8_t(into[8 * x + 7]);
    _mm512_storeu_si512(into + 8 * x, s);
    bad |= cell_bad;
  }
  return bad != 0;
}

inline bool has_avx512f() {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return avx512;
}
#endif

// merge_states_checked with the processor's widest registers.
template <class T>
bool merge_states_checked_on(uint64_t* into, const uint64_t* other, uint8_t* saved, int64_t b,
                             int64_t e) {
#ifdef SCATTERKIT_EXACT_AVX512
  if constexpr (ExactLayout<T>::kWords == 8)
    if (has_avx512f()) return merge_states_checked_avx512(into, other, saved, b, e);
#endif
  return merge_states_checked<T>(into, other, saved, b, e);
}

// Undoes merge_states_checked over [0, n): the sums and counts subtract (the words wrap, so this
// is exact), and a flag word that merged (both valid) comes back from saved.
template <class T>
void unmerge_states(uint64_t* into, const uint64_t* other, const uint8_t* saved, int64_t n) {
  using L = ExactLayout<T>;
  for (int64_t x = 0; x < n; ++x) {
    uint64_t* s = into + x * L::kWords;
    const uint64_t* o = other + x * L::kWords;
    uint64_t borrow = 0;
    for (int i = 0; i < L::kSumWords; ++i) {
      const uint64_t a = s[i], d = a - o[i];
      s[i] = d - borrow;
      borrow = uint64_t(a < o[i]) | uint64_t(d < borrow);
    }
    s[L::kCount] -= o[L::kCount];
    if (!bad_flags(s[L::kFlags] | o[L::kFlags])) s[L::kFlags] = saved[x];
  }
}

}  // namespace detail
}  // namespace scatterkit
