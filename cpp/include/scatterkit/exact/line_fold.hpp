// Exact sums, the fold of one contiguous line of updates (a 1-D histogram) into a part's table of
// double slots, for exact_elements_dense (scatter_elements.hpp). It is the inexact streaming
// fold's loop (ops/elements/histogram.hpp): the indices and updates read ahead in two stages, each
// target fetched into L2 ahead once the table leaves L2. And the exactness check is batched: each
// step's terms are scanned first (their largest magnitude and lowest set bit, double_slots.hpp)
// and while ExactBound proves every partial sum exact the step adds without a check; past the
// bound, each addition is checked against the terms' lowest bit (ExactSlots::add_below), and by
// TwoSum where that fails. The fold is compiled for the build's baseline and for AVX2, whose
// instructions the scan wants, and the processor chooses.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/prefetch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Updates ahead at which the fold fetches its target (and its count) into L2, once the table
// leaves L2: double slots take twice a float's bytes, so the table reaches L3 or memory more
// often than the inexact fold's, and the fetches run further ahead (bench/README.md).
constexpr int64_t kExactFetchAhead = 128;
static_assert(kStreamNearUpdates >= kExactFetchAhead, "targets fetched from inputs in L1");

// How a run of updates adds: unchecked (a bound proved every sum exact), checked against the
// terms' lowest bit (ExactSlots::add_below, every term scanned), or by TwoSum (ExactSlots::add).
enum class ExactAdd { kUnchecked, kBelow, kTwoSum };

// The updates [j0, j1) of the line folded into tab (and counted into cnt), each added as kAdd
// says (limit: ExactBound::sum_limit for kBelow). kAhead: the target that many updates ahead is
// fetched into L2 (idx[j + kAhead] must exist). False at the first index `valid` rejects.
template <ExactAdd kAdd, int64_t kAhead, bool kCounted, class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_exact_run(const KI* idx, const T* upd, int64_t j0, int64_t j1,
                                             int64_t size, IndexRange valid, double* tab,
                                             uint32_t* cnt, ExactSlots<T>& slots, double limit) {
#pragma GCC unroll 4
  for (int64_t j = j0; j < j1; ++j) {
    if constexpr (kAhead > 0) {  // raw: a bad index ahead only fetches a line nobody reads
      const uint64_t ahead = uint64_t(idx[j + kAhead]);
      prefetch_l2(uintptr_t(tab) + ahead * sizeof(double));
      if constexpr (kCounted) prefetch_l2(uintptr_t(cnt) + ahead * sizeof(uint32_t));
    }
    const KI v = idx[j];
    int64_t a = int64_t(v);
    // rare, and laid out of the loop (as in the inexact fold_stream_update)
    if (__builtin_expect(uint64_t(a) >= uint64_t(size), 0)) {
      if (!valid(v)) return false;
      a = wrap_index(v, size);
    }
    const double u = exact_double(upd[j]);
    if constexpr (kAdd == ExactAdd::kUnchecked)
      tab[a] += u;
    else if constexpr (kAdd == ExactAdd::kBelow)
      slots.add_below(tab + a, u, limit);
    else
      slots.add(tab + a, u);
    if constexpr (kCounted) ++cnt[a];
  }
  return true;
}

// A run as the bound allows: unchecked while it holds and no slot has spilled; else against the
// lowest bit if every term was scanned; else by TwoSum.
template <int64_t kAhead, bool kCounted, class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_exact_run_as(const ExactBound& bound, const KI* idx,
                                                const T* upd, int64_t j0, int64_t j1, int64_t size,
                                                IndexRange valid, double* tab, uint32_t* cnt,
                                                ExactSlots<T>& slots) {
  if (bound.holds() && slots.empty())
    return fold_exact_run<ExactAdd::kUnchecked, kAhead, kCounted>(idx, upd, j0, j1, size, valid,
                                                                  tab, cnt, slots, 0.0);
  if (bound.scanned())
    return fold_exact_run<ExactAdd::kBelow, kAhead, kCounted>(idx, upd, j0, j1, size, valid, tab,
                                                              cnt, slots, bound.sum_limit());
  return fold_exact_run<ExactAdd::kTwoSum, kAhead, kCounted>(idx, upd, j0, j1, size, valid, tab,
                                                             cnt, slots, 0.0);
}

// Admits the len terms at upd into the bound (bounded_terms_v<T>), each as reaching a slot len
// times; whether it still holds.
template <class T>
SCATTERKIT_ALWAYS_INLINE bool admit_terms(const T* upd, int64_t len, ExactBound& bound) {
  TermRange r;
  if constexpr (std::is_same_v<T, float>) {
    scan_terms(reinterpret_cast<const uint32_t*>(upd), len, r);
  } else {  // converted a step at a time
    uint32_t bits[kStreamStep];
    for (int64_t k0 = 0; k0 < len; k0 += kStreamStep) {
      const int64_t m = std::min(kStreamStep, len - k0);
      for (int64_t k = 0; k < m; ++k) bits[k] = float_bits(to_float(upd[k0 + k]));
      scan_terms(bits, m, r);
    }
  }
  return bound.admit(r, double(len));
}

// The n updates of one line folded into tab, a step of kStreamStep at a time, each step's inputs
// read ahead and, where the bound is open, its terms admitted before they are added (so that a
// table whose bound still holds sums exactly with others, PartTables::finish).
template <int64_t kAhead, bool kCounted, class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_exact_line_steps(const KI* idx, const T* upd, int64_t n,
                                                    int64_t size, IndexRange valid, double* tab,
                                                    uint32_t* cnt, ExactSlots<T>& slots,
                                                    ExactBound& bound) {
  const bool scanning = bounded_terms_v<T> && bound.scanned();
  int64_t j = 0;
  for (; j + kStreamStep <= n; j += kStreamStep) {
    const bool near = prefetch_inputs_ahead(j, n, idx, upd);
    if constexpr (kAhead > 0)
      if (!near || j + kStreamStep + kAhead > n) break;  // targets ahead: past n
    if constexpr (bounded_terms_v<T>)
      if (scanning) admit_terms(upd + j, kStreamStep, bound);
    if (!fold_exact_run_as<kAhead, kCounted>(bound, idx, upd, j, j + kStreamStep, size, valid, tab,
                                             cnt, slots))
      return false;
  }
  if constexpr (bounded_terms_v<T>)
    if (scanning) admit_terms(upd + j, n - j, bound);
  return fold_exact_run_as<0, kCounted>(bound, idx, upd, j, n, size, valid, tab, cnt, slots);
}

template <int64_t kAhead, bool kCounted, class T, class KI>
bool fold_exact_line_baseline(const KI* idx, const T* upd, int64_t n, int64_t size,
                              IndexRange valid, double* tab, uint32_t* cnt, ExactSlots<T>& slots,
                              ExactBound& bound) {
  return fold_exact_line_steps<kAhead, kCounted>(idx, upd, n, size, valid, tab, cnt, slots, bound);
}

#ifdef SCATTERKIT_EXACT_AVX2
template <int64_t kAhead, bool kCounted, class T, class KI>
__attribute__((target("avx2"))) bool fold_exact_line_avx2(const KI* idx, const T* upd, int64_t n,
                                                          int64_t size, IndexRange valid,
                                                          double* tab, uint32_t* cnt,
                                                          ExactSlots<T>& slots, ExactBound& bound) {
  return fold_exact_line_steps<kAhead, kCounted>(idx, upd, n, size, valid, tab, cnt, slots, bound);
}
#endif

template <int64_t kAhead, bool kCounted, class T, class KI>
bool fold_exact_line_on(const KI* idx, const T* upd, int64_t n, int64_t size, IndexRange valid,
                        double* tab, uint32_t* cnt, ExactSlots<T>& slots, ExactBound& bound) {
#ifdef SCATTERKIT_EXACT_AVX2
  if (bounded_terms_v<T> && has_avx2())
    return fold_exact_line_avx2<kAhead, kCounted>(idx, upd, n, size, valid, tab, cnt, slots, bound);
#endif
  return fold_exact_line_baseline<kAhead, kCounted>(idx, upd, n, size, valid, tab, cnt, slots,
                                                    bound);
}

// The n updates of one contiguous line (idx and upd at its first update) folded into a part's
// table tab of `size` slots, counted into cnt if not null; `fetch`: the table has left L2, so
// each target is fetched ahead. False, at the first bad index, if `valid` rejects one.
template <class T, class KI>
bool fold_exact_line(const KI* idx, const T* upd, int64_t n, int64_t size, IndexRange valid,
                     double* tab, uint32_t* cnt, ExactSlots<T>& slots, ExactBound& bound,
                     bool fetch) {
  if (cnt != nullptr)
    return fetch ? fold_exact_line_on<kExactFetchAhead, true>(idx, upd, n, size, valid, tab, cnt,
                                                              slots, bound)
                 : fold_exact_line_on<0, true>(idx, upd, n, size, valid, tab, cnt, slots, bound);
  return fetch ? fold_exact_line_on<kExactFetchAhead, false>(idx, upd, n, size, valid, tab, cnt,
                                                             slots, bound)
               : fold_exact_line_on<0, false>(idx, upd, n, size, valid, tab, cnt, slots, bound);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
