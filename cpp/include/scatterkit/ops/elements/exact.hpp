// ScatterElementsUpdate's exact sums and means (exact=True): in tables of double slots that
// spill to exact states (exact_sum.hpp), or over the updates sorted by target.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "scatterkit/exact_sum.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"

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
  const int64_t parts =
      std::max<int64_t>(1, std::min<int64_t>(threads_for(l.along, bytes), 1 + 2 * updates / count));
  // Targets are told apart from untargeted elements (which keep data) by
  // their counts: needed for the mean, without use_init_val, and for a NaN
  // in data, which a targeted element turns into the default NaN.
  const bool counted = mean || !use_init_val || any_nan(data, count);
  const bool checked = updates > kUncheckedScanMax ||
                       !double_sums_exact(upd, updates, use_init_val ? data : nullptr, count);
  double stack_table[kExactStackSlots];
  std::unique_ptr<double[]> heap_table;
  if (parts * count > kExactStackSlots) heap_table.reset(new double[size_t(parts * count)]);
  double* table = heap_table ? heap_table.get() : stack_table;
  std::unique_ptr<uint32_t[]> counts;
  if (counted) counts.reset(new uint32_t[size_t(parts * count)]);
  std::vector<ExactSlots<T>> slots(static_cast<size_t>(parts));
  std::vector<const double*> tables(static_cast<size_t>(parts));
  for (int64_t k = 0; k < parts; ++k) tables[size_t(k)] = table + k * count;
  // Fetching targets ahead pays once the table leaves L2.
  const bool prefetch = count * int64_t(sizeof(double)) > (int64_t(1) << 20);
  std::atomic<bool> bad{false};
  parallel_for(parts, bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      double* tab = table + k * count;
      ExactSlots<T>& sl = slots[size_t(k)];
      // -0 is the identity of IEEE addition: -0 + -0 = -0, -0 + +0 = +0.
      std::fill_n(tab, count, -0.0);
      if (k == 0 && use_init_val)
        for (int64_t x = 0; x < count; ++x) {
          const double v = exact_double(data[x]);
          if (std::isfinite(v))
            tab[x] = v;
          else
            sl.add(tab + x, v);
        }
      uint32_t* cnt = counted ? counts.get() + k * count : nullptr;
      if (cnt) std::fill_n(cnt, count, 0u);
      const int64_t j0 = l.along * k / parts, j1 = l.along * (k + 1) / parts;
      const bool ok =
          checked ? fold_exact_part<true>(l, idx, upd, tab, cnt, sl, j0, j1, valid, prefetch)
                  : fold_exact_part<false>(l, idx, upd, tab, cnt, sl, j0, j1, valid, prefetch);
      if (!ok) bad.store(true, std::memory_order_relaxed);
    }
  });
  if (bad.load()) return false;
  if (parts == 1 && !counted && !mean && slots[0].empty()) {  // every slot holds its sum
    parallel_for(count, count * int64_t(sizeof(T) + 8), [&](int64_t b, int64_t e) {
      for (int64_t x = b; x < e; ++x) out[x] = round_double<T>(table[x]);
    });
    return true;
  }
  parallel_for(count, count * int64_t(sizeof(T) + parts * 12), [&](int64_t b, int64_t e) {
    for (int64_t x = b; x < e; ++x) {
      uint64_t n = use_init_val ? 1 : 0;
      if (counted) {
        uint64_t hits = 0;
        for (int64_t k = 0; k < parts; ++k) hits += counts[size_t(k * count + x)];
        if (hits == 0) {  // untargeted: keeps data
          out[x] = data[x];
          continue;
        }
        n += hits;
      }
      out[x] = finish_parts<T>(slots.data(), tables.data(), parts, x, mean, n);
    }
  });
  return true;
}

// The same for few updates into many elements (indices already checked):
// the updates are sorted by target, and each target's run is summed.
template <class T, class KI>
void exact_elements_sorted(const ElementsLayout& l, const KI* idx, const T* upd, T* out, bool mean,
                           bool use_init_val, int64_t bytes) {
  std::vector<std::pair<int64_t, int64_t>> hits;  // (target, update)
  hits.reserve(size_t(l.outer * l.along * l.inner));
  for (int64_t o = 0; o < l.outer; ++o) {
    const int64_t base = l.outer_at(o);
    visit_block(l, LineBlock{o, o + 1, 0, l.inner, 0, l.along}, idx,
                [&](int64_t, int64_t t, int64_t p) { hits.push_back({base + t, p}); });
  }
  std::sort(hits.begin(), hits.end());
  std::vector<int64_t> starts;
  for (size_t h = 0; h < hits.size(); ++h)
    if (h == 0 || hits[h].first != hits[h - 1].first) starts.push_back(int64_t(h));
  starts.push_back(int64_t(hits.size()));
  parallel_for(int64_t(starts.size()) - 1, bytes, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t t = hits[size_t(starts[size_t(g)])].first;
      ExactRun<T> run;
      if (use_init_val) run.add(exact_double(out[t]));
      for (int64_t h = starts[size_t(g)]; h < starts[size_t(g) + 1]; ++h)
        run.add(exact_double(upd[hits[size_t(h)].second]));
      const uint64_t n =
          uint64_t(starts[size_t(g) + 1] - starts[size_t(g)]) + (use_init_val ? 1 : 0);
      out[t] = run.finish(mean, n);
    }
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
