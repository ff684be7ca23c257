// ScatterElementsUpdate with validation fused into the fold, for calls whose indices
// outweigh data (a histogram): the fold runs on a scratch copy, checking each index as it is
// read, so that a bad index leaves out untouched; with fewer lines than threads, reductions
// that merge exactly split each line between threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "scatterkit/copy.hpp"
#include "scatterkit/ops/elements/fold.hpp"
#include "scatterkit/ops/elements/histogram.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// acc[x] = combine(acc[x], part[x]) for x < n. A float min/max is written as
// a select so that it compiles without branches: on random values a branch
// mispredicts half the time.
template <class Op, class T>
void merge_tables(T* acc, const T* part, int64_t n) {
  for (int64_t x = 0; x < n; ++x) {
    if constexpr (std::is_floating_point_v<T> && is_min_max_v<Op, T>) {
      const T a = acc[x], v = part[x];
      const bool better = std::is_same_v<Op, MaxOp<T>> ? a < v : v < a;
      const bool take = (better | (v != v)) & (a == a);  // combine's NaN rules
      acc[x] = take ? v : a;
    } else {
      acc[x] = Op::combine(acc[x], part[x]);
    }
  }
}

// Folds part k of every line (a range of positions along the axis) into
// tables[k], checking each index: tables[0] starts as a copy of data, the
// others at the identity, each set up by the thread that folds into it.
// Returns false if an index was invalid.
template <class Op, class T, class KI>
bool fold_parts(const ElementsLayout& l, const KI* idx, const T* upd, const T* data,
                T* const* tables, int64_t count, int64_t parts, IndexRange valid, int64_t bytes) {
  std::atomic<bool> bad{false};
  parallel_for(parts, bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1 && !bad.load(std::memory_order_relaxed); ++k) {
      T* table = tables[k];
      if (k == 0) {
        if (table != data) std::memcpy(table, data, size_t(count) * sizeof(T));
      } else
        std::fill_n(table, count, T(Op::identity()));
      const int64_t j0 = l.along * k / parts, j1 = l.along * (k + 1) / parts;
      if (streams_line(l, count * int64_t(sizeof(T)))) {
        if (!fold_line_streaming<Op>(idx + j0, upd + j0, table, j1 - j0, l.axis_size, valid))
          bad.store(true, std::memory_order_relaxed);
        continue;
      }
      for (int64_t o = 0; o < l.outer; ++o)
        for (int64_t i = 0; i < l.inner; ++i) {
          const LineBlock part{o, o + 1, i, i + 1, j0, j1};
          if (!fold_block_in_place<Op>(l, part, idx, upd, table + l.outer_at(o), true, valid))
            bad.store(true, std::memory_order_relaxed);
        }
    }
  });
  return !bad.load();
}

// reduce_via_scratch for one line or a few, split between threads: folds
// each part into a table of its own, then merges the tables in part order.
// With fold_into_out, out itself is the first table.
template <class Op, class T, class KI>
bool reduce_in_parts(const ElementsLayout& l, const KI* idx, const T* upd, const T* data, T* out,
                     int64_t count, int64_t parts, IndexRange valid, int64_t bytes,
                     bool fold_into_out) {
  const int64_t own = fold_into_out ? parts - 1 : parts;
  // not vector<T>: T may be bool
  const std::unique_ptr<T[]> scratch(new T[size_t(own * count)]);
  std::vector<T*> tables;
  for (int64_t k = 0, next = 0; k < parts; ++k)
    tables.push_back(fold_into_out && k == 0 ? out : scratch.get() + count * next++);
  if (!fold_parts<Op>(l, idx, upd, data, tables.data(), count, parts, valid, bytes)) return false;
  parallel_for(count, count * int64_t(sizeof(T)) * (parts + 1), [&](int64_t b, int64_t e) {
    for (int64_t k = 1; k < parts; ++k)
      merge_tables<Op>(tables[0] + b, tables[size_t(k)] + b, e - b);
    if (tables[0] != out) std::memcpy(out + b, tables[0] + b, size_t(e - b) * sizeof(T));
  });
  return true;
}

// Folds into a scratch copy of data, checking each index as it is read, and
// copies the result to `out` only if every index was valid: a bad index still
// leaves `out` untouched, and the caller then reports it. When the caller
// discards out on an error (fold_into_out), out is that copy.
template <class Op, class T, class KI>
bool reduce_via_scratch(const ElementsLayout& l, const KI* idx, const T* upd, const T* data, T* out,
                        int64_t count, bool use_init_val, IndexRange valid, int64_t bytes,
                        bool fold_into_out) {
  const int64_t table_bytes = count * int64_t(sizeof(T));
  std::unique_ptr<T[]> scratch;  // not vector<T>: T may be bool
  if (!fold_into_out) scratch.reset(new T[size_t(count)]);
  T* work = fold_into_out ? out : scratch.get();
  if (work != data) parallel_copy(work, data, table_bytes);
  if (use_init_val && streams_line(l, table_bytes)) {
    if (!fold_line_streaming<Op>(idx, upd, work, l.along, l.axis_size, valid)) return false;
    if (work != out) parallel_copy(out, work, table_bytes);
    return true;
  }
  std::atomic<bool> bad{false};
  for_each_line_block(l, bytes, narrow_block_lines(l), [&](const LineBlock& blk) {
    if (bad.load(std::memory_order_relaxed)) return;
    T* base = work + l.outer_at(blk.o0);
    if (!fold_block_in_place<Op>(l, blk, idx, upd, base, use_init_val, valid))
      bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) return false;
  if (work != out) parallel_copy(out, work, table_bytes);
  return true;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
