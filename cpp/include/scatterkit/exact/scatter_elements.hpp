// Exact sums, the top layer for ScatterElementsUpdate (exact=True, sum and mean): its
// updates folded into part tables of double slots (part_tables.hpp), over all of data's
// elements or over the targeted ones only; ops/elements/strategy.hpp chooses which.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>

#include "scatterkit/copy.hpp"
#include "scatterkit/exact/bitmap_ranks.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/exact/line_fold.hpp"
#include "scatterkit/exact/part_tables.hpp"
#include "scatterkit/exact/ranges.hpp"
#include "scatterkit/ops/elements/strategy.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/scratch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Folds positions [j0, j1) of every line into a part's table of double slots
// (and counts, if cnt), checking each addition for exactness (kChecked) or
// not, where the caller has shown every partial sum exact. Returns false at
// the first index `valid` rejects.
template <bool kChecked, class T, class KI>
bool fold_exact_part(const ElementsLayout& l, const KI* idx, const T* upd, double* tab,
                     uint32_t* cnt, ExactSlots<T>& slots, int64_t j0, int64_t j1, IndexRange valid,
                     bool prefetch) {
  for (int64_t o = 0; o < l.outer; ++o) {
    double* base = tab + l.outer_at(o);
    uint32_t* cbase = cnt ? cnt + l.outer_at(o) : nullptr;
    auto fold = [&slots, base, cbase, upd](int64_t, int64_t t, int64_t p) {
      const double v = exact_double(upd[p]);
      if constexpr (kChecked)
        slots.add(base + t, v);
      else
        base[t] += v;
      if (cbase) ++cbase[t];
    };
    for (int64_t i = 0; i < l.inner; ++i) {
      const LineBlock part{o, o + 1, i, i + 1, j0, j1};
      const bool ok =
          prefetch ? visit_block(l, part, idx, fold, valid, PrefetchTarget{base, sizeof(double)})
                   : visit_block(l, part, idx, fold, valid, NoPrefetch{});
      if (!ok) return false;
    }
  }
  return true;
}

// Whether layout l is one contiguous line along the axis (a 1-D histogram).
inline bool one_line(const ElementsLayout& l) {
  return l.outer == 1 && l.inner == 1 && l.axis_stride == 1 && l.inner_offset.empty() &&
         l.outer_offset.empty();
}

// Updates up to which exact_elements_dense scans them for the bound that lets
// it skip the checks: a batch row's, not a large histogram's, whose many terms
// rarely fit the bound and would pay for the scan.
constexpr int64_t kUncheckedScanMax = int64_t(1) << 16;

// Slots up to which the tables live on the stack (a batch row's).
constexpr int64_t kExactStackSlots = 512;

// Exact sum or mean along the lines of ScatterElementsUpdate, with a table
// of `count` slots (data's elements) per part. Each index is checked as it is
// read (valid); returns false, with out untouched, if one is bad.
template <class T, class KI>
bool exact_elements_dense(const ElementsLayout& l, const KI* idx, const T* upd, const T* data,
                          T* out, int64_t count, bool mean, bool use_init_val, IndexRange valid,
                          int64_t bytes) {
  const int64_t updates = l.outer * l.along * l.inner;
  // One line past the cache: range by range (ranges.hpp), as the inexact fold goes.
  if (range_fold_pays(l, count * int64_t(sizeof(T)), updates))
    return exact_line_by_ranges(idx, upd, data, out, updates, count, mean, use_init_val, valid);
  const int64_t parts = exact_parts(l.along, updates, count, bytes);
  // Targets are told apart from untargeted elements (which keep data) by
  // their counts: needed for the mean, without use_init_val, and for a NaN
  // in data, which a targeted element turns into the default NaN.
  const bool counted = mean || !use_init_val || any_nan(data, count);
  // One contiguous line (a 1-D histogram): the streaming fold with its bound (line_fold.hpp).
  const bool line = one_line(l);
  const bool checked =
      !line && (updates > kUncheckedScanMax ||
                !double_sums_exact(upd, updates, use_init_val ? data : nullptr, count));
  PartTables<T, kExactStackSlots> tables(parts, count, counted);
  const bool prefetch = tables.prefetch();
  auto fold = [&](int64_t k, double* tab, uint32_t* cnt, ExactSlots<T>& sl, ExactBound& bound) {
    if constexpr (bounded_terms_v<T>)
      if (line) bound.open();
    if (k == 0 && use_init_val) {
      start_slots(data, count, tab, sl);
      if constexpr (bounded_terms_v<T>) {
        if (line) {
          TermRange r;
          scan_values(data, count, r);
          bound.admit(r, 1.0);  // one initial value per slot
        }
      }
    }
    const int64_t j0 = l.along * k / parts, j1 = l.along * (k + 1) / parts;
    if (line)
      return fold_exact_line(idx + j0, upd + j0, j1 - j0, l.axis_size, valid, tab, cnt, sl, bound,
                             prefetch);
    return checked ? fold_exact_part<true>(l, idx, upd, tab, cnt, sl, j0, j1, valid, prefetch)
                   : fold_exact_part<false>(l, idx, upd, tab, cnt, sl, j0, j1, valid, prefetch);
  };
  const bool ok = tables.fill(bytes, use_init_val, fold);
  if (!ok) return false;
  tables.template finish<true>(
      mean, use_init_val, int64_t(sizeof(T) + 8), [out](int64_t x, T v) { out[x] = v; },
      [out, data](int64_t x) { out[x] = data[x]; });  // untargeted: keeps data
  return true;
}

// Targets ahead at which exact_elements_compact fetches a target's element of out (its initial
// value, then its result): scattered lines, which would otherwise miss in turn.
constexpr int64_t kGatherAhead = 32;

// The same for few updates into many elements: a table over the targeted
// elements only, so that an untargeted one costs a bit of a bitmap (and its
// copy, unless out already holds data). The targets are numbered in ascending
// order through a bitmap of the elements hit and each word's count of the bits
// before it; threads split the updates (exactness makes any split give the same
// bits). Each index is checked as it is read (valid); returns false, with out
// untouched, if one is bad. `out_holds_data`: out already holds data (in
// place, or copied), else data is copied into out first.
template <class T, class KI>
bool exact_elements_compact(const ElementsLayout& l, const KI* idx, const T* upd, const T* data,
                            T* out, int64_t count, bool mean, bool use_init_val, IndexRange valid,
                            int64_t bytes, bool out_holds_data) {
  const int64_t updates = l.outer * l.along * l.inner;
  if (updates == 0 || count == 0) {
    if (updates > 0) return false;  // no elements: every index is out of range
    if (!out_holds_data) parallel_copy(out, data, count * int64_t(sizeof(T)));
    return true;
  }
  const int64_t words = (count + 63) / 64;
  const int64_t line_parts = threads_for(updates, bytes);
  // One block for the arrays below, recycled (scratch.hpp) when it is large: fresh pages for
  // them cost more than the fold itself on a large output. A small one (a batch row's) stays
  // off the one recycled block.
  const int64_t block_words = 2 * updates + (line_parts + 1) * words + 1;
  const bool recycled = block_words * 8 >= kScratchTableBytes;
  std::unique_ptr<ScratchArray<uint64_t>> scratch(recycled ? new ScratchArray<uint64_t>(block_words)
                                                           : nullptr);
  std::unique_ptr<uint64_t[]> heap(recycled ? nullptr : new uint64_t[size_t(block_words)]);
  uint64_t* const block = recycled ? scratch->get() : heap.get();
  // Each update's target (data offset), in update order, and the targets' bitmap: one per
  // part of the lines, merged.
  int64_t* const target = reinterpret_cast<int64_t*>(block);
  uint64_t* const maps = block + updates;
  std::atomic<bool> bad{false};
  // Parts split the largest of the outer, along and inner extents.
  const int64_t split = l.outer >= line_parts   ? 0
                        : l.along >= line_parts ? 1
                        : l.inner >= line_parts ? 2
                                                : -1;
  parallel_for(split < 0 ? 1 : line_parts, bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      uint64_t* map = maps + k * words;
      std::fill_n(map, words, uint64_t(0));
      LineBlock blk{0, l.outer, 0, l.inner, 0, l.along};
      if (split == 0) blk.o0 = l.outer * k / line_parts, blk.o1 = l.outer * (k + 1) / line_parts;
      if (split == 1) blk.j0 = l.along * k / line_parts, blk.j1 = l.along * (k + 1) / line_parts;
      if (split == 2) blk.i0 = l.inner * k / line_parts, blk.i1 = l.inner * (k + 1) / line_parts;
      if (blk.o0 == blk.o1 || blk.i0 == blk.i1 || blk.j0 == blk.j1) continue;
      const int64_t first = l.outer_at(blk.o0);
      int64_t* tgt = target;
      auto mark = [tgt, map, first](int64_t, int64_t t, int64_t p) {
        const int64_t x = first + t;
        tgt[p] = x;
        map[x >> 6] |= uint64_t(1) << (x & 63);
      };
      if (!visit_block(l, blk, idx, mark, valid)) bad.store(true, std::memory_order_relaxed);
    }
  });
  if (bad.load()) return false;
  const int64_t maps_used = split < 0 ? 1 : line_parts;
  uint64_t* map = maps;
  // before[w]: the targets below word w.
  int64_t* const before = reinterpret_cast<int64_t*>(maps + line_parts * words);
  // element[r]: the target numbered r.
  int64_t* const element = before + words + 1;  // hit <= updates of them
  const int64_t hit = number_words(map, words, maps_used, before, element);
  // Tables of `hit` slots, one per part of the updates, as in exact_elements_dense.
  const int64_t parts = exact_parts(updates, updates, hit, bytes);
  PartTables<T> tables(parts, hit, mean, !recycled);  // one recycled block at a time
  const bool prefetch = tables.prefetch();
  tables.fill(bytes, false,
              [&](int64_t k, double* tab, uint32_t* cnt, ExactSlots<T>& sl, ExactBound&) {
                const int64_t p0 = updates * k / parts, p1 = updates * (k + 1) / parts;
                int64_t* slot = target;  // the targets' numbers, from here on
                rank_targets(slot, p0, p1, map, before);
                const int64_t ahead = prefetch ? p1 - kPrefetchDistance : p0;
                int64_t p = p0;
                for (; p < ahead; ++p) {
                  prefetch_l2(tab + slot[p + kPrefetchDistance]);
                  sl.add(tab + slot[p], exact_double(upd[p]));
                  if (cnt) ++cnt[slot[p]];
                }
                for (; p < p1; ++p) {
                  sl.add(tab + slot[p], exact_double(upd[p]));
                  if (cnt) ++cnt[slot[p]];
                }
                return true;
              });
  if (!out_holds_data) parallel_copy(out, data, count * int64_t(sizeof(T)));
  const int64_t* el = element;
  // A target's initial value is read from out (which holds data) as its result goes there: one
  // scattered pass over out, its lines fetched ahead.
  tables.finish_from(
      mean, use_init_val, int64_t(2 * sizeof(T) + 16),
      [out, el, hit, use_init_val](int64_t r) {
        if (r + kGatherAhead < hit) prefetch_l1(uintptr_t(out + el[r + kGatherAhead]));
        return use_init_val ? exact_double(out[el[r]]) : -0.0;
      },
      [out, el](int64_t r, T v) { out[el[r]] = v; });
  return true;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
