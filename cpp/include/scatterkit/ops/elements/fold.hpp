// ScatterElementsUpdate's folds after a validation pass (strategy.hpp chooses among them):
// in place on out, in a per-block table of (accumulator, count) slots, a float mean along
// one long line, or over the updates sorted by target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/ops/elements/strategy.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/reduction.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Sets every target of the block to value, returning false at the first index `valid`
// rejects: the start of a fold without use_init_val, apart from the fold so that it is
// compiled once per element type rather than once per reduction.
template <class T, class I, class Valid>
SCATTERKIT_NOINLINE bool set_targets(const ElementsLayout& l, const LineBlock& blk, const I* idx,
                                     T* base, T value, Valid valid) {
  return visit_block(
      l, blk, idx, [base, value](int64_t, int64_t t, int64_t) { base[t] = value; }, valid);
}

// Reductions whose accumulator is the element type (or that round exactly to
// it: folds_through_storage_v) fold directly on the output. Returns false at
// the first index `valid` rejects (base is then half folded).
template <class Op, class T, class I, class Valid = Prevalidated>
bool fold_block_in_place(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                         T* base, bool use_init_val, Valid valid = {}) {
  if (!use_init_val && !set_targets(l, blk, idx, base, T(Op::store(Op::identity(), 1)), valid))
    return false;
  // captures by value: pointers behind references are reloaded after every
  // store when visit_block is not inlined
  return visit_block(
      l, blk, idx,
      [base, upd](int64_t, int64_t t, int64_t p) {
        base[t] = fold_into_storage<Op>(base[t], upd[p]);
      },
      valid, PrefetchTarget{base, sizeof(T)});
}

// Notes a target whose byte count wrapped (fold_line_mean): out of line, to
// keep the registers of the fold's loop free.
#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
inline void note_wrap(std::vector<int64_t>* wrapped, int64_t a) {
  wrapped->push_back(a);
}

// A float mean over one line with more updates than targets (a 1-D
// histogram): the sums fold in place, as a sum does, and the counts in a byte
// per target beside them, noting a target each time its count wraps (at
// most one update in 256): less memory per update than a table of (sum,
// count) slots twice data's size.
template <class Op, class T, class I>
void fold_line_mean(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                    T* base, bool use_init_val) {
  static_assert(std::is_same_v<typename Op::Acc, T>, "sums fold in the element type");
  const int64_t targets = l.axis_size, stride = l.axis_stride;
  T* const line = base + l.inner_at(blk.i0);
  const std::unique_ptr<uint8_t[]> counts(new uint8_t[size_t(targets)]());
  // With use_init_val false a target's first update replaces its value: sum
  // from zeros beside out instead.
  const std::unique_ptr<T[]> zeros(use_init_val ? nullptr : new T[size_t(targets)]());
  T* const sums = use_init_val ? line : zeros.get();
  const int64_t sum_stride = use_init_val ? stride : 1;
  std::vector<int64_t> wrapped;
  uint8_t* const count = counts.get();
  // A loop of its own rather than visit_line: with two targets per update
  // and no validation to do, visit_line's registers run out and its counters
  // go to the stack.
  const int64_t inner = l.inner, first = blk.o0 * l.along * inner + blk.i0;
  const I* const column = idx + first;
  const T* const values = upd + first;
  const auto fold = [&](int64_t j, bool fetch) {
    if (fetch) {
      const int64_t b = wrap_index(column[(j + kPrefetchDistance) * inner], targets);
      prefetch_l2(sums + b * sum_stride);
      prefetch_l2(count + b);
    }
    const int64_t a = wrap_index(column[j * inner], targets);
    T& sum = sums[a * sum_stride];
    sum = Op::combine(sum, values[j * inner]);
    if (__builtin_expect(++count[a] == 0, 0)) note_wrap(&wrapped, a);
  };
  const int64_t ahead = blk.j1 - kPrefetchDistance;
  int64_t j = blk.j0;
  if (inner == 1)  // contiguous inputs, fetched ahead in two stages as the streaming fold does
    j = read_ahead_steps(j, ahead, blk.j1, [&](int64_t k) { fold(k, true); }, column, values);
  for (; j < blk.j1; ++j) fold(j, j < ahead);
  // finish: line = n != 0 ? sum / (n + 1 if use_init_val) : line
  const int32_t count_init = use_init_val ? 1 : 0;  // data's value counts as one
  if (wrapped.empty() && stride == 1 && sum_stride == 1) {
    // every count below 256: a loop in int32 that vectorizes
    for (int64_t a = 0; a < targets; ++a) {
      const int32_t n = count[a];
      line[a] = select_exact(n != 0, Op::store(sums[a], n + count_init), line[a]);
    }
    return;
  }
  std::sort(wrapped.begin(), wrapped.end());
  auto next = wrapped.begin();
  for (int64_t a = 0; a < targets; ++a) {
    int64_t n = count[a];
    for (; next != wrapped.end() && *next == a; ++next) n += 256;
    if (n != 0) line[a * stride] = Op::store(sums[a * sum_stride], n + count_init);
  }
}

// Other reductions (mean, float16/bfloat16) fold in a per-block table of
// (accumulator, count) slots indexed by (target along axis, line); each target
// is finalised (divided, rounded) exactly once.
template <class Op, class T, class I>
void fold_block_in_table(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                         T* base, bool use_init_val) {
  using Slot = TableSlot<typename Op::Acc>;
  // one slot per update: one cache line touched rather than two arrays' two
  const int64_t targets = l.axis_size;
  const int64_t width =
      std::clamp<int64_t>(kScratchEntries / std::max<int64_t>(1, targets), 1, blk.i1 - blk.i0);
  // A small table (a short axis, one line) lives on the stack: with many
  // short lines, allocating one per block cost more than the fold.
  constexpr int64_t kStackSlots = 256;
  Slot stack_slots[kStackSlots];
  const int64_t entries = targets * width;
  std::unique_ptr<Slot[]> heap_slots(entries > kStackSlots ? new Slot[size_t(entries)] : nullptr);
  Slot* slots = entries > kStackSlots ? heap_slots.get() : stack_slots;
  // More updates than targets: start and finish every slot in ordered sweeps;
  // otherwise start each on its first update and finish by walking the updates.
  const bool dense = l.along >= targets;
  // Every count starts at zero (each accumulator is set on its slot's first
  // update): a memset, as fill_n compiles to a loop of scalar stores. (Not
  // is_arithmetic: under -std=c++17 it is false for the __int128 of an int64
  // mean.)
  static_assert(std::is_trivially_copyable_v<Slot>, "a slot may be cleared with memset");
  if (!dense) std::memset(static_cast<void*>(slots), 0, size_t(entries) * sizeof(Slot));
  const int64_t stride = l.axis_stride;
  const int64_t count_init = use_init_val ? 1 : 0;  // data's value counts as one
  for (int64_t w0 = blk.i0; w0 < blk.i1; w0 += width) {
    const LineBlock part{blk.o0, blk.o1, w0, std::min(blk.i1, w0 + width), blk.j0, blk.j1};
    // the slot of an update to target a from line i
    Slot* const first = slots - w0;
    auto slot_of = [first, width](int64_t a, int64_t i) -> Slot& { return first[a * width + i]; };
    if (dense) {
      for (int64_t i = part.i0; i < part.i1; ++i) {
        const T* line = base + l.inner_at(i);
        for (int64_t a = 0; a < targets; ++a)
          first[a * width + i] =
              Slot{use_init_val ? Op::load(line[a * stride]) : Op::identity(), 0};
      }
      // No branch on the count: on random targets it mispredicts about every
      // other update, and each miss then waits for its slot.
      auto fold = [slot_of, upd](int64_t a, int64_t, int64_t p, int64_t i) {
        Slot& slot = slot_of(a, i);
        ++slot.count;
        slot.acc = Op::combine(slot.acc, upd[p]);
      };
      // a table in L2 is not worth fetching ahead
      const bool fetch = entries * int64_t(sizeof(Slot)) > kTableInCacheBytes;
      visit_block(l, part, idx, fold, Prevalidated{},
                  PrefetchAlongAxis<Slot>{fetch ? slots : nullptr, width});
      for (int64_t i = part.i0; i < part.i1; ++i) {
        T* line = base + l.inner_at(i);
        for (int64_t a = 0; a < targets; ++a) {
          const Slot slot = first[a * width + i];
          if constexpr (std::is_floating_point_v<T>) {
            // a select, not a branch that untouched targets make unpredictable
            // (a quotient by zero is discarded)
            const T mean = Op::store(slot.acc, int64_t(slot.count) + count_init);
            line[a * stride] = select_exact(slot.count != 0, mean, line[a * stride]);
          } else if (slot.count != 0) {
            line[a * stride] = Op::store(slot.acc, int64_t(slot.count) + count_init);
          }
        }
      }
    } else {
      auto start_or_fold = [slot_of, upd, base, use_init_val](int64_t a, int64_t t, int64_t p,
                                                              int64_t i) {
        Slot& slot = slot_of(a, i);
        if (slot.count++ == 0) slot.acc = use_init_val ? Op::load(base[t]) : Op::identity();
        slot.acc = Op::combine(slot.acc, upd[p]);
      };
      // Each target's first update reads it from out, a miss to memory when
      // the copy before went past the caches: across many lines, fetch the
      // next row's targets; along one, the slots.
      visit_block(l, part, idx, start_or_fold, Prevalidated{},
                  PrefetchSlotsOrNextRow<Slot>{{slots, width}, {base, sizeof(T)}});
      visit_block(l, part, idx,
                  [slot_of, base, count_init](int64_t a, int64_t t, int64_t, int64_t i) {
                    Slot& slot = slot_of(a, i);
                    if (slot.count == 0) return;  // already finished
                    base[t] = Op::store(slot.acc, int64_t(slot.count) + count_init);
                    slot.count = 0;
                  });
    }
  }
}

// The same fold for a few updates on a long axis, where a table over every
// target would dwarf the inputs (and could exhaust memory): the block's updates
// are sorted by target (stably, so each target still folds in C order).
struct Hit {
  int64_t t, p;  // target offset, update position
};

// The block's updates as hits, sorted stably by target: apart from the fold, so that it is
// compiled once per index type rather than once per reduction and element type.
template <class I>
SCATTERKIT_NOINLINE std::vector<Hit> sorted_hits(const ElementsLayout& l, const LineBlock& blk,
                                                 const I* idx) {
  std::vector<Hit> hits;
  hits.reserve(size_t(l.along * (blk.i1 - blk.i0)));
  visit_block(l, blk, idx, [&](int64_t, int64_t t, int64_t p) { hits.push_back({t, p}); });
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.t < b.t; });
  return hits;
}

template <class Op, class T, class I>
void fold_block_sorted(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                       T* base, bool use_init_val) {
  const std::vector<Hit> hits = sorted_hits(l, blk, idx);
  for (size_t k = 0; k < hits.size();) {
    const int64_t t = hits[k].t;
    auto acc = use_init_val ? Op::load(base[t]) : Op::identity();
    const size_t first = k;
    for (; k < hits.size() && hits[k].t == t; ++k) acc = Op::combine(acc, upd[hits[k].p]);
    base[t] = Op::store(acc, int64_t(k - first) + (use_init_val ? 1 : 0));
  }
}

// Runs a fold strategy (kFoldInPlace, kFoldInTable, kFoldLineMean or kFoldSorted) on
// validated indices, over blocks of narrow_block_lines lines.
template <class Op, class T, class I>
void scatter_elements_reduce(ElementsStrategy strategy, const ElementsLayout& l, const I* idx,
                             const T* upd, T* out, bool use_init_val, int64_t bytes,
                             CopyFirst copy) {
  for_each_line_block(
      l, bytes, narrow_block_lines(l),
      [&](const LineBlock& blk) {
        if constexpr (folds_through_storage_v<Op, T>) {
          fold_block_in_place<Op>(l, blk, idx, upd, out + l.outer_at(blk.o0), use_init_val);
        } else {
          // their tables key on (target, line): one outer position at a time
          for (int64_t o = blk.o0; o < blk.o1; ++o) {
            const LineBlock one{o, o + 1, blk.i0, blk.i1, blk.j0, blk.j1};
            T* base = out + l.outer_at(o);
            if (strategy == ElementsStrategy::kFoldSorted) {
              fold_block_sorted<Op>(l, one, idx, upd, base, use_init_val);
              continue;
            }
            if constexpr (std::is_same_v<typename Op::Acc, T>)
              if (strategy == ElementsStrategy::kFoldLineMean) {
                fold_line_mean<Op>(l, one, idx, upd, base, use_init_val);
                continue;
              }
            fold_block_in_table<Op>(l, one, idx, upd, base, use_init_val);
          }
        }
      },
      copy);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
