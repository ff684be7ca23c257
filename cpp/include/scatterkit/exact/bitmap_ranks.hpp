// Exact sums: numbering few targets among many elements (exact_elements_compact,
// scatter_elements.hpp) through a bitmap of the elements hit and each word's count of the bits
// before it. A target's rank counts bits, which the popcnt instruction does in one step where the
// build's baseline (SSE2) takes a dozen: that loop is compiled for both, and the processor
// chooses.
#pragma once

#include <cstdint>

#include "scatterkit/config.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// The set bits of w, without the popcnt instruction (__builtin_popcountll calls libgcc there).
SCATTERKIT_ALWAYS_INLINE int64_t bit_count(uint64_t w) {
  w -= (w >> 1) & 0x5555555555555555u;
  w = (w & 0x3333333333333333u) + ((w >> 2) & 0x3333333333333333u);
  w = (w + (w >> 4)) & 0x0f0f0f0f0f0f0f0fu;
  return int64_t((w * 0x0101010101010101u) >> 56);
}

struct SoftBitCount {
  SCATTERKIT_ALWAYS_INLINE int64_t operator()(uint64_t w) const { return bit_count(w); }
};

// map[w] = the union of the `maps` bitmaps of `words` words from map on (one after another),
// before[w] = the set bits of map[0, w), for w <= words, and element[r] = the position of the
// set bit numbered r, in one pass; returns their total.
inline int64_t number_words(uint64_t* map, int64_t words, int64_t maps, int64_t* before,
                            int64_t* element) {
  int64_t hit = 0;
  for (int64_t w = 0; w < words; ++w) {
    uint64_t bits = map[w];
    for (int64_t k = 1; k < maps; ++k) bits |= map[k * words + w];
    map[w] = bits;
    before[w] = hit;
    for (; bits != 0; bits &= bits - 1) element[hit++] = w * 64 + __builtin_ctzll(bits);
  }
  before[words] = hit;
  return hit;
}

// slot[p] = the number of element slot[p] among the set bits of map, for p in [p0, p1).
template <class Count>
SCATTERKIT_ALWAYS_INLINE void rank_targets_body(int64_t* slot, int64_t p0, int64_t p1,
                                                const uint64_t* map, const int64_t* before,
                                                Count count) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t x = slot[p];
    slot[p] = before[x >> 6] + count(map[x >> 6] & ((uint64_t(1) << (x & 63)) - 1));
  }
}

#if defined(__GNUC__) && defined(__x86_64__)
struct HardBitCount {
  __attribute__((target("popcnt"))) int64_t operator()(uint64_t w) const {
    return __builtin_popcountll(w);
  }
};

__attribute__((target("popcnt"))) inline void rank_targets_popcnt(int64_t* slot, int64_t p0,
                                                                  int64_t p1, const uint64_t* map,
                                                                  const int64_t* before) {
  rank_targets_body(slot, p0, p1, map, before, HardBitCount{});
}

// Whether the processor has popcnt, asked once.
inline bool has_popcnt() {
  static const bool popcnt = __builtin_cpu_supports("popcnt");
  return popcnt;
}
#endif

inline void rank_targets(int64_t* slot, int64_t p0, int64_t p1, const uint64_t* map,
                         const int64_t* before) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (has_popcnt()) return rank_targets_popcnt(slot, p0, p1, map, before);
#endif
  rank_targets_body(slot, p0, p1, map, before, SoftBitCount{});
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
