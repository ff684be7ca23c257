// Exact sums, a 1-D histogram whose table of double slots would leave the last-level cache, for
// exact_elements_dense (scatter_elements.hpp). Folding each update into a slot in memory would
// cost a miss per update on a table twice the size of the inexact fold's; so, as the inexact fold
// of such a table does (ops/elements/ranges.hpp, whose passes this reuses), the updates are first
// written out by range of bins, and each range is then folded into double slots in cache,
// started from data and rounded into out. The sum being exact, neither pass needs an order; a
// range's table has its bound (double_slots.hpp) over its initial values and entries, so that it
// usually adds without a check. The first pass checks every index before out is written.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/exact/line_fold.hpp"
#include "scatterkit/ops/elements/ranges.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/scratch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// The terms of a range's entries into r (bounded_terms_v<T>): their values, strided.
template <class T>
SCATTERKIT_ALWAYS_INLINE void scan_entries(const RangeEntry<T>* p, int64_t m, TermRange& r) {
  constexpr int64_t kChunk = kStreamStep;
  uint32_t bits[kChunk];
  for (int64_t k0 = 0; k0 < m; k0 += kChunk) {
    const int64_t len = std::min(kChunk, m - k0);
    for (int64_t k = 0; k < len; ++k) bits[k] = float_bits(float(exact_double(p[k0 + k].value)));
    scan_terms(bits, len, r);
  }
}

// The m entries of a range folded into its slots s (and counted into cnt), each added as kAdd
// says, read ahead as a range's entries are in the inexact fold.
template <ExactAdd kAdd, bool kCounted, class T>
SCATTERKIT_ALWAYS_INLINE void fold_exact_entries(const RangeEntry<T>* p, int64_t m, double* s,
                                                 uint32_t* cnt, ExactSlots<T>& slots,
                                                 double limit) {
  const auto add = [&](int64_t k) {
    const uint32_t a = p[k].at;
    const double u = exact_double(p[k].value);
    if constexpr (kAdd == ExactAdd::kUnchecked)
      s[a] += u;
    else if constexpr (kAdd == ExactAdd::kBelow)
      slots.add_below(s + a, u, limit);
    else
      slots.add(s + a, u);
    if constexpr (kCounted) ++cnt[a];
  };
  for (int64_t j = read_ahead_steps(0, m, m, add, p); j < m; ++j) add(j);
}

template <bool kCounted, class T>
SCATTERKIT_ALWAYS_INLINE void fold_exact_entries_as(const ExactBound& bound, const RangeEntry<T>* p,
                                                    int64_t m, double* s, uint32_t* cnt,
                                                    ExactSlots<T>& slots) {
  if (bound.holds() && slots.empty())
    fold_exact_entries<ExactAdd::kUnchecked, kCounted>(p, m, s, cnt, slots, 0.0);
  else if (bound.scanned())
    fold_exact_entries<ExactAdd::kBelow, kCounted>(p, m, s, cnt, slots, bound.sum_limit());
  else
    fold_exact_entries<ExactAdd::kTwoSum, kCounted>(p, m, s, cnt, slots, 0.0);
}

// Elements a range rounds at a time before it writes them out: a few KB, which stay in L1.
constexpr int64_t kRoundChunk = 1024;

// What a thread folding ranges keeps between them: a range's slots and counts, and a chunk of
// its rounded values at out's offset in a page (at_page_offset_of), written out from there.
template <class T>
struct ExactRangeScratch {
  explicit ExactRangeScratch(int64_t bins, const T* out)
      : slots(new double[size_t(bins)]),
        counts(new uint32_t[size_t(bins)]),
        block(new char[size_t(kRoundChunk) * sizeof(T) + kPageBytes]),
        rounded(at_page_offset_of(block.get(), out)) {}
  std::unique_ptr<double[]> slots;
  std::unique_ptr<uint32_t[]> counts;
  std::unique_ptr<char[]> block;
  T* rounded;
};

// Range [b, b + len) of the table: its slots started from data (or -0), its m entries at p
// folded in, every slot rounded once into out (an untargeted element keeps data).
template <class T>
SCATTERKIT_ALWAYS_INLINE void fold_exact_range_body(const T* data, T* out, int64_t b, int64_t len,
                                                    const RangeEntry<T>* p, int64_t m, bool mean,
                                                    bool use_init_val, bool streaming,
                                                    ExactRangeScratch<T>& scratch) {
  double* s = scratch.slots.get();
  uint32_t* cnt = scratch.counts.get();
  T* rounded = scratch.rounded;
  ExactSlots<T> slots;
  ExactBound bound;
  if constexpr (bounded_terms_v<T>) bound.open();
  bool nan = false;
  if (use_init_val) {
    TermRange r;
    nan = start_slots_body(data + b, len, s, slots, &r);
    if constexpr (bounded_terms_v<T>) bound.admit(r, 1.0);
  } else {
    std::fill_n(s, len, -0.0);
  }
  // Counts tell a target from an untargeted element where it matters: a mean, no initial value,
  // or a NaN in data (which a target turns into the default NaN, an untargeted one keeps).
  const bool counted = mean || !use_init_val || nan;
  if (counted) std::fill_n(cnt, len, 0u);
  if constexpr (bounded_terms_v<T>) {
    TermRange r;
    scan_entries(p, m, r);
    bound.admit(r, double(m));
  }
  if (counted)
    fold_exact_entries_as<true>(bound, p, m, s, cnt, slots);
  else
    fold_exact_entries_as<false>(bound, p, m, s, cnt, slots);
  const bool plain = !counted && !mean && slots.empty();  // every slot holds its rounded sum
  const double* tables[1] = {s};
  with_writer(streaming, out + b, [&](auto& writer) {
    for (int64_t c0 = 0; c0 < len; c0 += kRoundChunk) {
      const int64_t c1 = std::min(len, c0 + kRoundChunk);
      if (plain) {
        for (int64_t x = c0; x < c1; ++x) rounded[x - c0] = round_double<T>(s[x]);
      } else {
        for (int64_t x = c0; x < c1; ++x) {
          if (counted && cnt[x] == 0 && (!use_init_val || nan)) {
            rounded[x - c0] = data[b + x];  // untargeted: keeps data's bits
            continue;
          }
          const uint64_t terms = (use_init_val ? 1 : 0) + (counted ? cnt[x] : 0);
          rounded[x - c0] = finish_parts<T>(&slots, tables, 1, x, mean, terms);
        }
      }
      writer.write(rounded, size_t(c1 - c0) * sizeof(T));
    }
  });
}

// Ranges [r0, r1) of a table of `size` bins in ranges of 2^shift (range r's entries:
// e[start[r]] up to e[start[r + 1]]).
template <class T>
SCATTERKIT_ALWAYS_INLINE void fold_exact_ranges_inline(const T* data, T* out, int64_t size,
                                                       int shift, const RangeEntry<T>* e,
                                                       const int64_t* start, int64_t r0, int64_t r1,
                                                       bool mean, bool use_init_val) {
  const int64_t range_bins = int64_t(1) << shift;
  const bool streaming = use_streaming_stores(size * int64_t(sizeof(T)));
  ExactRangeScratch<T> scratch(range_bins, out);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r << shift;
    fold_exact_range_body(data, out, b, std::min(range_bins, size - b), e + start[r],
                          start[r + 1] - start[r], mean, use_init_val, streaming, scratch);
  }
}

#ifdef SCATTERKIT_EXACT_AVX2
template <class T>
__attribute__((target("avx2"))) void fold_exact_ranges_avx2(const T* data, T* out, int64_t size,
                                                            int shift, const RangeEntry<T>* e,
                                                            const int64_t* start, int64_t r0,
                                                            int64_t r1, bool mean,
                                                            bool use_init_val) {
  fold_exact_ranges_inline(data, out, size, shift, e, start, r0, r1, mean, use_init_val);
}
#endif

template <class T>
void fold_exact_ranges(const T* data, T* out, int64_t size, int shift, const RangeEntry<T>* e,
                       const int64_t* start, int64_t r0, int64_t r1, bool mean, bool use_init_val) {
#ifdef SCATTERKIT_EXACT_AVX2
  if (bounded_terms_v<T> && has_avx2())
    return fold_exact_ranges_avx2(data, out, size, shift, e, start, r0, r1, mean, use_init_val);
#endif
  fold_exact_ranges_inline(data, out, size, shift, e, start, r0, r1, mean, use_init_val);
}

// out = the exact sum (or mean) of data (with use_init_val) and the n updates of one contiguous
// line of `size` bins, going by ranges of bins. False, with out untouched, at a bad index.
template <class T, class KI>
bool exact_line_by_ranges(const KI* idx, const T* upd, const T* data, T* out, int64_t n,
                          int64_t size, bool mean, bool use_init_val, IndexRange valid) {
  const auto fold = [&](const RangeEntry<T>* e, const int64_t* start, int shift, int64_t r0,
                        int64_t r1) {
    fold_exact_ranges(data, out, size, shift, e, start, r0, r1, mean, use_init_val);
  };
  return by_ranges(idx, upd, n, size, valid, false, fold) == RangeFold::kFolded;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
