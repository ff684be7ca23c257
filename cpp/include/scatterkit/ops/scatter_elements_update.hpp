// ScatterElementsUpdate-3 / -12:
//   out[p with p[axis] = indices[p]] = reduce(out[...], updates[p])
// for every position p of indices (= of updates), in C order of p.
// indices.shape[d] <= data.shape[d] for d != axis; indices.shape[axis] is free.
//
// Strategy: a "line" is the set of positions sharing every coordinate but
// `axis`. Only updates of one line can hit a given target, and within a line
// C order is order along the axis, so lines are split between threads and
// each line is folded sequentially: no races, and the same bits for any
// thread count. Reductions fold in place when the accumulator is the element
// type, else in a table of (accumulator, count) slots, or, on an axis too long
// for a table, over the updates sorted by target. When the indices outweigh
// data (a histogram), validation is fused into the fold on a scratch copy, and
// with fewer lines than threads the reductions whose result does not depend
// on grouping (integer sum/prod, min, max) split each line between threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/exact_sum.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Where the positions of indices land in data (offsets in elements).
struct ElementsLayout {
  int64_t outer = 1;        // product of indices.shape[:axis]
  int64_t along = 0;        // indices.shape[axis]
  int64_t inner = 1;        // product of indices.shape[axis+1:]
  int64_t axis_size = 0;    // data.shape[axis]
  int64_t axis_stride = 1;  // data elements between neighbours along axis
  // Data offset of each outer position; empty when indices span data's outer
  // extents, where outer position o starts at o * outer_stride.
  std::vector<int64_t> outer_offset;
  int64_t outer_stride = 0;
  std::vector<int64_t> inner_offset;  // empty: inner positions are contiguous in data

  int64_t inner_at(int64_t i) const { return inner_offset.empty() ? i : inner_offset[size_t(i)]; }
  // When indices span every extent of data but the axis, outer position o
  // owns the piece [o * piece(), (o + 1) * piece()) of data; else 0.
  int64_t piece() const { return outer_offset.empty() && inner_offset.empty() ? outer_stride : 0; }
  int64_t outer_at(int64_t o) const {
    return outer_offset.empty() ? o * outer_stride : outer_offset[size_t(o)];
  }
};

inline ElementsLayout make_elements_layout(const Shape& data, const Shape& idx, size_t axis) {
  ElementsLayout l;
  const size_t r = data.size();
  l.outer = product(idx, 0, axis);
  l.along = idx[axis];
  l.inner = product(idx, axis + 1, r);
  l.axis_size = data[axis];
  l.axis_stride = product(data, axis + 1, r);
  Shape data_strides(r, 1);
  for (size_t d = r - 1; d-- > 0;) data_strides[d] = data_strides[d + 1] * data[d + 1];

  l.outer_stride = l.axis_size * l.axis_stride;
  if (!std::equal(idx.begin(), idx.begin() + axis, data.begin()))
    l.outer_offset = offsets_in_c_order(Shape(idx.begin(), idx.begin() + axis),
                                        Shape(data_strides.begin(), data_strides.begin() + axis));
  const bool inner_contiguous =
      std::equal(idx.begin() + axis + 1, idx.end(), data.begin() + axis + 1);
  if (!inner_contiguous)
    l.inner_offset = offsets_in_c_order(Shape(idx.begin() + axis + 1, idx.end()),
                                        Shape(data_strides.begin() + axis + 1, data_strides.end()));
  return l;
}

// A unit of work: positions [j0, j1) along the axis of lines [i0, i1) of
// outer positions [o0, o1) (several only when each is whole: i0 = 0, i1 =
// inner). Blocks of whole lines never share a target, since a target is only
// reached from its own line.
struct LineBlock {
  int64_t o0, o1, i0, i1, j0, j1;
};

// Updates per block below which a block takes several whole outer positions:
// with short lines (along the last axis, say) the cost of starting a block
// outweighed its updates (2-4x slower on [100000, 16] along axis 1).
constexpr int64_t kMinBlockUpdates = 1024;

// Lines per block for moves: wide, so that each row of indices and updates is
// read as one contiguous run. Blocks of a dozen lines read every row as a
// short strided piece, which on a cold cache cost a quarter of an in-place W2
// (0.91 -> 0.68 ms at 1 thread).
constexpr int64_t kWideBlockLines = 512;

// Lines per block for folds: narrow (about 64 blocks in all), so that a
// block's targets and its per-block table stay in cache. Wide blocks measured
// no faster for float32 sum and max, and 35% slower for float16 max.
inline int64_t narrow_block_lines(const ElementsLayout& l) {
  const int64_t per_outer = std::clamp<int64_t>((64 + l.outer - 1) / std::max<int64_t>(1, l.outer),
                                                1, std::max<int64_t>(1, l.inner));
  return (l.inner + per_outer - 1) / per_outer;
}

// A request to fill out from data piece by piece (for_each_line_block): with many
// small pieces (short lines along the last axis, say) the visit then finds
// its targets in cache, where a copy of the whole array first left them in
// memory.
struct CopyFirst {
  char* out = nullptr;
  const char* data = nullptr;  // null: out holds data already
  size_t itemsize = 0;
};

// Bytes of pieces copied at a time: they stay in L2 until visited.
constexpr int64_t kCopyRunBytes = int64_t(1) << 16;

// Whether copying piece by piece (CopyFirst) pays: many pieces, small ones.
inline bool copy_in_pieces_pays(const ElementsLayout& l, size_t itemsize) {
  return l.piece() > 0 && l.outer >= 2 && l.piece() * int64_t(itemsize) <= kCopyRunBytes / 4;
}

// Runs body(LineBlock) over blocks of at most max_lines lines, in parallel:
// each thread takes a contiguous range of lines (each line carries the same
// number of updates, so the ranges are balanced) and cuts it into blocks
// within one outer position. A few long lines (a 1-D histogram, say) stay on
// one thread: splitting their targets between threads would make every thread
// scan every update, which measured slower on memory-bound cores, and a float
// sum in C order cannot split the updates (reduce_in_parts splits them for
// the reductions that can).
//
// With copy.data set, it first fills out from data, a run of outer positions'
// pieces at a time, each run just before its lines are visited.
template <class Body>
void for_each_line_block(const ElementsLayout& l, int64_t bytes, int64_t max_lines, Body&& body,
                         CopyFirst copy = {}) {
  const int64_t per_outer = l.inner * l.along;  // updates
  const int64_t outer_per_block =
      l.inner <= max_lines && per_outer < kMinBlockUpdates
          ? (kMinBlockUpdates + per_outer - 1) / std::max<int64_t>(1, per_outer)
          : 1;
  // blocks covering outer positions [o0, o1) whole
  auto cut = [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; o += outer_per_block)
      for (int64_t i0 = 0; i0 < l.inner; i0 += max_lines)
        body(LineBlock{o, std::min(o1, o + outer_per_block), i0, std::min(l.inner, i0 + max_lines),
                       0, l.along});
  };
  if (copy.data != nullptr) {
    const int64_t piece_bytes = l.piece() * int64_t(copy.itemsize);
    const int64_t run = std::max<int64_t>(1, kCopyRunBytes / piece_bytes);
    const int64_t runs = (l.outer + run - 1) / run;
    parallel_for(runs, bytes + 2 * l.outer * piece_bytes, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t o0 = r * run, o1 = std::min(l.outer, o0 + run);
        std::memcpy(copy.out + o0 * piece_bytes, copy.data + o0 * piece_bytes,
                    size_t((o1 - o0) * piece_bytes));
        cut(o0, o1);
      }
    });
    return;
  }
  if (outer_per_block > 1) {
    parallel_for(l.outer, bytes, cut);
    return;
  }
  parallel_for(l.outer * l.inner, bytes, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t o = b / l.inner, i0 = b % l.inner;
      const int64_t i1 = std::min({l.inner, i0 + (e - b), i0 + max_lines});
      body(LineBlock{o, o + 1, i0, i1, 0, l.along});
      b += i1 - i0;
    }
  });
}

// Accepts every index: the indices were validated in a pass of their own.
struct Prevalidated {
  template <class I>
  constexpr bool operator()(I) const {
    return true;
  }
};

// No prefetching: for walks whose targets are not worth fetching ahead.
struct NoPrefetch {
  void operator()(int64_t, int64_t) const {}
};

// Fetches a target element ahead of its update. A long line's targets are
// random, so each update waits on a cache miss; fetching a few updates ahead
// into L2 (prefetch.hpp) overlaps them. The address is formed as an integer:
// an index not yet validated may lie outside the array, and a prefetch never
// faults.
// Called with the target's coordinate along the axis (a) and its data offset (t).
struct PrefetchTarget {
  const void* base;
  size_t width;  // bytes per element
  void operator()(int64_t, int64_t t) const { prefetch_l2(uintptr_t(base) + uint64_t(t) * width); }
};

// The same, and in a block of many lines (visit_block's general loop) each
// update also fetches its line's next target: the next row's, a block's width
// of updates ahead (hundreds for a wide block of moves, enough to hide a miss
// to memory). For moves: W2 in place cold took 0.63-0.66x the time at 1
// thread (0.71-1.0x at 2); called again at once on the same targets, all in
// cache, up to 1.2x longer: a miss saved is worth far more than a prefetch
// wasted. Not for folds in place, whose narrow blocks keep their targets in
// cache: W3 sum measured 1.09x slower with it. A table fold reads each target
// once, on its first update: 1.05-1.2x faster with it (float16 W3 sum, 1 thread).
struct PrefetchTargetAcrossRows : PrefetchTarget {};

template <class Prefetch>
constexpr bool fetches_across_rows_v = std::is_same_v<Prefetch, PrefetchTargetAcrossRows>;

// Updates between an index being prefetched and being applied. With L2
// prefetches on a 10M-update histogram, 32 measured 1.15x faster than 8
// and 1.05-1.1x faster than 16, 64 or 128.
constexpr int64_t kPrefetchDistance = 32;

// Indices outside [0, size) after which a one-line walk (visit_line) leaves
// its fast loop for the general one.
constexpr int64_t kFastLoopMisses = 16;

// Calls f(a, t, p), or f(a, t, p, i) when f also takes the update's line
// (its position i across the axis): a table keyed on the line then needs no
// p % inner, a division per update.
template <class F>
SCATTERKIT_ALWAYS_INLINE void visit_update(F& f, int64_t a, int64_t t, int64_t p, int64_t i) {
  if constexpr (std::is_invocable_v<F&, int64_t, int64_t, int64_t, int64_t>)
    f(a, t, p, i);
  else
    f(a, t, p);
}

// visit_block for a block of one line (a histogram, say): long, with random
// targets, so each update waits on a cache miss and the loop must stay short
// for the core to keep many in flight. The fast loop accepts an index in
// [0, size) (valid for every op) with one unsigned compare and prefetches with
// the raw index: 1.1-1.2x faster on a 10M-update float32 histogram. Negative
// indices would mispredict its branch and waste its prefetches: after a few,
// the rest of the line goes to the general loop, which wraps and checks every
// index (as fast as before with half or all of the indices negative).
template <class I, class F, class Valid, class Prefetch>
inline bool visit_line(const ElementsLayout& l, const LineBlock& blk, const I* idx, F f,
                       Valid valid, Prefetch prefetch) {
  // Locals, not blk's fields, and f taken by value: a store through f may
  // alias any memory, so fields behind references were reloaded per update.
  const auto [o0, o1, i0, i1, j0, j1] = blk;
  const int64_t size = l.axis_size, stride = l.axis_stride, inner = l.inner;
  const int64_t offset = l.inner_at(i0);
  const int64_t first = o0 * l.along * inner + i0;  // the line's first update
  const I* column = idx + first;
  const int64_t ahead = j1 - kPrefetchDistance;
  // unsigned: the index may be invalid, its offset must not overflow
  auto fetch = [&](int64_t a) {
    prefetch(a, int64_t(uint64_t(a) * uint64_t(stride) + uint64_t(offset)));
  };
  int64_t j = j0, misses = 0;
  for (; j < j1 && misses < kFastLoopMisses; ++j) {
    if (j < ahead) fetch(int64_t(column[(j + kPrefetchDistance) * inner]));
    const I v = column[j * inner];
    int64_t a = int64_t(v);
    if (uint64_t(a) >= uint64_t(size)) {
      if (!valid(v)) return false;
      a = wrap_index(v, size);
      ++misses;
    }
    visit_update(f, a, a * stride + offset, first + j * inner, i0);
  }
  for (; j < j1; ++j) {
    if (j < ahead) fetch(wrap_index(column[(j + kPrefetchDistance) * inner], size));
    const I v = column[j * inner];
    if (!valid(v)) return false;
    const int64_t a = wrap_index(v, size);
    visit_update(f, a, a * stride + offset, first + j * inner, i0);
  }
  return true;
}

// visit_block must inline into its caller: called out of line, its loop
// reloaded the caller's captures on every update (W6 sum 7% slower).
// Calls f(a, t, p) for every update of the block, in C order within each line:
// a is its target coordinate along the axis, t the target's data offset from
// the base of the block's first outer position (elements) and p the update's
// position; or f(a, t, p, i), with i its line's position across the axis.
// The loops are kept tight; a block of one line goes to visit_line. Stops and
// returns false at the first index that `valid` rejects.
template <class I, class F, class Valid = Prevalidated, class Prefetch = NoPrefetch>
SCATTERKIT_ALWAYS_INLINE bool visit_block(const ElementsLayout& l, const LineBlock& blk,
                                          const I* idx, F&& f, Valid valid = {},
                                          Prefetch prefetch = {}) {
  const auto [o0, o1, i0, i1, j0, j1] = blk;  // locals: see visit_line
  const int64_t size = l.axis_size, stride = l.axis_stride, inner = l.inner, along = l.along;
  if (i1 - i0 == 1) {
    if (o1 - o0 == 1) return visit_line(l, blk, idx, f, valid, prefetch);
    const int64_t offset = l.inner_at(i0);
    for (int64_t o = o0; o < o1; ++o) {  // short lines, one per outer position
      const int64_t first = o * along * inner + i0;
      const int64_t shift = l.outer_at(o) - l.outer_at(o0) + offset;
      const I* column = idx + first;
      for (int64_t j = j0; j < j1; ++j) {
        const I v = column[j * inner];
        if (!valid(v)) return false;
        const int64_t a = wrap_index(v, size);
        visit_update(f, a, shift + a * stride, first + j * inner, i0);
      }
    }
    return true;
  }
  const int64_t* inner_offset = l.inner_offset.empty() ? nullptr : l.inner_offset.data();
  for (int64_t o = o0; o < o1; ++o) {
    const int64_t first = o * along * inner;
    const int64_t shift = l.outer_at(o) - l.outer_at(o0);
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t row = first + j * inner;
      const I* line = idx + row;
      // the raw index: a negative one fetches a useless line, never faults
      const bool fetch = fetches_across_rows_v<Prefetch> && j + 1 < j1;
      if (inner_offset == nullptr) {
        for (int64_t i = i0; i < i1; ++i) {
          if (fetch) prefetch(0, shift + int64_t(uint64_t(line[i + inner]) * uint64_t(stride)) + i);
          if (!valid(line[i])) return false;
          const int64_t a = wrap_index(line[i], size);
          visit_update(f, a, shift + a * stride + i, row + i, i);
        }
      } else {
        for (int64_t i = i0; i < i1; ++i) {
          if (fetch)
            prefetch(
                0, shift + int64_t(uint64_t(line[i + inner]) * uint64_t(stride)) + inner_offset[i]);
          if (!valid(line[i])) return false;
          const int64_t a = wrap_index(line[i], size);
          visit_update(f, a, shift + a * stride + inner_offset[i], row + i, i);
        }
      }
    }
  }
  return true;
}

// reduction = none: element moves, last write along the line wins.
// E is Bytes<N>, or void for a run-time itemsize.
template <class E, class I>
void scatter_elements_move(const ElementsLayout& l, const I* idx, const char* upd, char* out,
                           size_t itemsize, int64_t bytes, CopyFirst copy) {
  const int64_t width = int64_t(itemsize);
  for_each_line_block(
      l, bytes, kWideBlockLines,
      [&](const LineBlock& blk) {
        char* base = out + l.outer_at(blk.o0) * width;
        visit_block(
            l, blk, idx,
            [base, upd, width, itemsize](int64_t, int64_t t, int64_t p) {
              if constexpr (std::is_void_v<E>)
                std::memcpy(base + t * width, upd + p * width, itemsize);
              else
                move_element<E>(base + t * int64_t(sizeof(E)), upd + p * int64_t(sizeof(E)));
            },
            Prevalidated{}, PrefetchTargetAcrossRows{{base, itemsize}});
      },
      copy);
}

// Capacity of the per-thread accumulator table, in entries.
constexpr int64_t kScratchEntries = int64_t(1) << 18;

// Reductions whose accumulator is the element type (or that round exactly to
// it: folds_through_storage_v) fold directly on the output. Returns false at
// the first index `valid` rejects (base is then half folded).
template <class Op, class T, class I, class Valid = Prevalidated>
bool fold_block_in_place(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                         T* base, bool use_init_val, Valid valid = {}) {
  if (!use_init_val &&
      !visit_block(
          l, blk, idx,
          [base](int64_t, int64_t t, int64_t) { base[t] = Op::store(Op::identity(), 1); }, valid))
    return false;
  // captures by value: pointers behind references were reloaded after every
  // store (a third slower on a histogram) when visit_block was not inlined
  return visit_block(
      l, blk, idx,
      [base, upd](int64_t, int64_t t, int64_t p) {
        base[t] = fold_into_storage<Op>(base[t], upd[p]);
      },
      valid, PrefetchTarget{base, sizeof(T)});
}

// Prefetches element a * stride of an array indexed by the target's
// coordinate along the axis (a table slot, say), for visit_line: its cache
// miss is the whole cost of a histogram fold, as the target's is in place.
template <class E>
struct PrefetchAlongAxis {
  const E* base;
  int64_t stride;  // elements between neighbouring targets
  void operator()(int64_t a, int64_t) const {
    prefetch_l2(uintptr_t(base) + uint64_t(a) * uint64_t(stride) * sizeof(E));
  }
};

// Bytes up to which a table of (accumulator, count) slots stays in L2: not
// worth fetching ahead, nor replacing by fold_line_mean.
constexpr int64_t kTableInCacheBytes = int64_t(1) << 19;

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
// most one update in 256). With 2M updates into 1M bins, a loop over a table
// of (sum, count) slots, twice data's size, took 1.65x a plain sum's loop;
// this one 1.4x.
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
  // and no validation to do, visit_line's registers ran out and its counters
  // went to the stack (1.3x slower with the sums in L1).
  const int64_t inner = l.inner, first = blk.o0 * l.along * inner + blk.i0;
  const I* const column = idx + first;
  const T* const values = upd + first;
  const int64_t ahead = blk.j1 - kPrefetchDistance;
  for (int64_t j = blk.j0; j < blk.j1; ++j) {
    if (j < ahead) {
      const int64_t b = wrap_index(column[(j + kPrefetchDistance) * inner], targets);
      prefetch_l2(sums + b * sum_stride);
      prefetch_l2(count + b);
    }
    const int64_t a = wrap_index(column[j * inner], targets);
    T& sum = sums[a * sum_stride];
    sum = Op::combine(sum, values[j * inner]);
    if (__builtin_expect(++count[a] == 0, 0)) note_wrap(&wrapped, a);
  }
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
  using Acc = typename Op::Acc;
  struct Slot {  // side by side: one cache line per update
    Acc acc;
    uint32_t count;
  };
  // A long line's table outgrows L2 (2M updates into 1M bins: 2.6x faster
  // with fold_line_mean); below about 512 KB, one slot per update measured
  // 1.25-1.3x faster than two arrays.
  if constexpr (std::is_same_v<Acc, T>)
    if (l.along >= l.axis_size && blk.i1 - blk.i0 == 1 && blk.o1 - blk.o0 == 1 &&
        l.axis_size * int64_t(sizeof(Slot)) > kTableInCacheBytes)
      return fold_line_mean<Op>(l, blk, idx, upd, base, use_init_val);
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
  // update): a memset, as fill_n compiled to a loop of scalar stores that
  // took a fifth of a float16 W3 sum's fold. (Not is_arithmetic: under
  // -std=c++17 it is false for the __int128 of an int64 mean.)
  static_assert(std::is_trivially_copyable_v<Slot>, "a slot may be cleared with memset");
  if (!dense) std::memset(static_cast<void*>(slots), 0, size_t(entries) * sizeof(Slot));
  const int64_t stride = l.axis_stride;
  const int64_t count_init = use_init_val ? 1 : 0;  // data's value counts as one
  for (int64_t w0 = blk.i0; w0 < blk.i1; w0 += width) {
    const LineBlock part{blk.o0, blk.o1, w0, std::min(blk.i1, w0 + width), blk.j0, blk.j1};
    // the slot of an update to target a from line i
    Slot* const first = slots - w0;
    auto slot_of = [first, width](int64_t a, int64_t i) -> Slot& { return first[a * width + i]; };
    const PrefetchAlongAxis<Slot> prefetch{slots, width};
    if (dense) {
      for (int64_t i = part.i0; i < part.i1; ++i) {
        const T* line = base + l.inner_at(i);
        for (int64_t a = 0; a < targets; ++a)
          first[a * width + i] =
              Slot{use_init_val ? Op::load(line[a * stride]) : Op::identity(), 0};
      }
      // No branch on the count: on random targets it mispredicted about
      // every other update, and each miss then waited for its slot (6x slower
      // than a sum on a 2M-update histogram).
      auto fold = [slot_of, upd](int64_t a, int64_t, int64_t p, int64_t i) {
        Slot& slot = slot_of(a, i);
        ++slot.count;
        slot.acc = Op::combine(slot.acc, upd[p]);
      };
      // a table in L2 is not worth fetching ahead (1.2x slower with 1K slots)
      if (entries * int64_t(sizeof(Slot)) > kTableInCacheBytes)
        visit_block(l, part, idx, fold, Prevalidated{}, prefetch);
      else
        visit_block(l, part, idx, fold);
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
      if (part.i1 - part.i0 == 1)
        visit_block(l, part, idx, start_or_fold, Prevalidated{}, prefetch);
      else
        visit_block(l, part, idx, start_or_fold, Prevalidated{},
                    PrefetchTargetAcrossRows{{base, sizeof(T)}});
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
template <class Op, class T, class I>
void fold_block_sorted(const ElementsLayout& l, const LineBlock& blk, const I* idx, const T* upd,
                       T* base, bool use_init_val) {
  struct Hit {
    int64_t t, p;  // target offset, update position
  };
  std::vector<Hit> hits;
  hits.reserve(size_t(l.along * (blk.i1 - blk.i0)));
  visit_block(l, blk, idx, [&](int64_t, int64_t t, int64_t p) { hits.push_back({t, p}); });
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.t < b.t; });
  for (size_t k = 0; k < hits.size();) {
    const int64_t t = hits[k].t;
    auto acc = use_init_val ? Op::load(base[t]) : Op::identity();
    const size_t first = k;
    for (; k < hits.size() && hits[k].t == t; ++k) acc = Op::combine(acc, upd[hits[k].p]);
    base[t] = Op::store(acc, int64_t(k - first) + (use_init_val ? 1 : 0));
  }
}

// A table of accumulators only pays when the axis is short or densely hit.
inline bool accumulator_table_fits(const ElementsLayout& l) {
  return l.axis_size <= kScratchEntries || l.axis_size <= 4 * l.along;
}

// Whether to fold with validation fused in (reduce_via_scratch): when data is
// small next to its indices (a histogram: 10M updates into 1M bins), where a
// separate validation pass would read the indices twice.
inline bool fused_validation_pays(int64_t data_bytes, int64_t index_bytes) {
  return 4 * data_bytes <= index_bytes;
}

// The valid values of an index as the kernels read it: uint64 indices arrive
// as int64, so theirs must not look negative (lo = 0).
struct IndexRange {
  int64_t lo, hi;
  template <class KI>
  bool operator()(KI v) const {
    return uint64_t(int64_t(v)) - uint64_t(lo) < uint64_t(hi) - uint64_t(lo);  // no overflow
  }
};

// Whether folding the updates of a target in any grouping gives the bits of
// folding them in C order, so that threads may fold consecutive parts of one
// line into tables of their own and merge the tables in part order: wrapping
// integer sum and prod (a commutative ring), and min/max, which keep the first
// of equal values (say -0 and +0) and the first NaN, as an in-order merge does.
// Float sum and prod round differently when regrouped. Exact min/max would
// merge exactly but for an untargeted NaN in data, which keeps its bits: a
// part that only holds the identity cannot tell untouched from targeted.
template <class Op, class T>
constexpr bool merges_exactly_v =
    folds_in_place_v<Op, T> && (std::is_same_v<Op, MinOp<T>> || std::is_same_v<Op, MaxOp<T>> ||
                                (!std::is_floating_point_v<T> &&
                                 (std::is_same_v<Op, SumOp<T>> || std::is_same_v<Op, ProdOp<T>>)));

// Into how many parts reduce_in_parts splits each line: only when there
// are fewer lines than threads (else whole lines already keep every thread
// busy), and only as far as the extra tables stay small next to the indices.
inline int64_t line_parts(const ElementsLayout& l, int64_t table_bytes, int64_t index_bytes,
                          int64_t bytes) {
  const int64_t lines = l.outer * l.inner;
  const int64_t threads = threads_for(l.along, bytes);
  if (lines >= threads) return 1;
  return std::clamp<int64_t>(1 + index_bytes / (2 * std::max<int64_t>(1, table_bytes)), 1, threads);
}

// acc[x] = combine(acc[x], part[x]) for x < n. A float min/max is written as
// a select so that it compiles without branches: on random values a branch
// mispredicts half the time, which made this pass cost a third of the fold.
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
// discards out on an error (fold_into_out), out is that copy. With fewer lines
// than threads (a 1-D histogram), reductions that merge exactly split each
// line between threads instead.
template <class Op, class T, class KI>
bool reduce_via_scratch(const ElementsLayout& l, const KI* idx, const T* upd, const T* data, T* out,
                        int64_t count, bool use_init_val, IndexRange valid, int64_t bytes,
                        bool fold_into_out) {
  const int64_t table_bytes = count * int64_t(sizeof(T));
  // With use_init_val false each target hit starts at the identity, which a
  // part cannot tell from a target that only other parts hit: whole lines.
  if constexpr (merges_exactly_v<Op, T>) {
    const int64_t index_bytes = l.outer * l.along * l.inner * int64_t(sizeof(KI));
    const int64_t parts = use_init_val ? line_parts(l, table_bytes, index_bytes, bytes) : 1;
    if (parts > 1)
      return reduce_in_parts<Op>(l, idx, upd, data, out, count, parts, valid, bytes, fold_into_out);
  }
  std::unique_ptr<T[]> scratch;  // not vector<T>: T may be bool
  if (!fold_into_out) scratch.reset(new T[size_t(count)]);
  T* work = fold_into_out ? out : scratch.get();
  if (work != data) parallel_copy(work, data, table_bytes);
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

template <class Op, class T, class I>
void scatter_elements_reduce(const ElementsLayout& l, const I* idx, const T* upd, T* out,
                             bool use_init_val, int64_t bytes, CopyFirst copy) {
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
            if (accumulator_table_fits(l))
              fold_block_in_table<Op>(l, one, idx, upd, base, use_init_val);
            else
              fold_block_sorted<Op>(l, one, idx, upd, base, use_init_val);
          }
        }
      },
      copy);
}

// Whether a table per part of the updates stays small next to the updates:
// else the sparse path (exact_elements_sorted).
inline bool exact_table_fits(int64_t elements, int64_t updates) {
  return elements <= 4 * updates + (int64_t(1) << 16);
}

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
constexpr int64_t kStackSlots = 512;

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
  double stack_table[kStackSlots];
  std::unique_ptr<double[]> heap_table;
  if (parts * count > kStackSlots) heap_table.reset(new double[size_t(parts * count)]);
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

// The attribute and shape rules, checked before any input is copied or read; returns the
// normalized axis.
inline int64_t check_elements_call(const char* op, const TensorRef& data, const IndexRef& indices,
                                   const TensorRef& updates, int64_t axis, const void* out,
                                   Reduction reduction) {
  check_reduction(op, reduction, data.dtype,
                  {Reduction::kNone, Reduction::kSum, Reduction::kProd, Reduction::kMin,
                   Reduction::kMax, Reduction::kMean});
  const size_t rank = data.shape.size();
  axis = normalize_axis(op, axis, int64_t(rank));
  if (indices.shape.size() != rank)
    throw_value_error(op, "indices rank " + std::to_string(indices.shape.size()) +
                              " does not match data rank " + std::to_string(rank));
  if (updates.shape != indices.shape)
    throw_value_error(op, "updates shape " + format_shape(updates.shape) +
                              " does not match indices shape " + format_shape(indices.shape));
  for (size_t d = 0; d < rank; ++d)
    if (int64_t(d) != axis && indices.shape[d] > data.shape[d])
      throw_value_error(op, "indices shape " + format_shape(indices.shape) +
                                " exceeds data shape " + format_shape(data.shape) + " at axis " +
                                std::to_string(d));
  const int64_t n = numel(indices.shape);
  // Reductions count the updates of each target in 32 bits; with no updates there is no count.
  if (reduction != Reduction::kNone && n > 0 &&
      indices.shape[size_t(axis)] >= int64_t(UINT32_MAX) - 1)
    throw_value_error(op, "reductions support at most 4294967293 updates along the axis");
  if (numel(data.shape) != 0 && out == nullptr) throw_value_error(op, "out is a null pointer");
  return axis;
}

// scatter_elements_update on inputs the public entry has checked (buffers, element types,
// check_elements_call, which normalized axis) and set apart from out (data may be out).
inline void scatter_elements_update_unaliased(const TensorRef& data, const IndexRef& indices,
                                              const TensorRef& updates, int64_t axis, void* out,
                                              Reduction reduction, bool use_init_val,
                                              const OpOptions& options) {
  using namespace detail;
  const char* op = op_name(options, "scatter_elements_update");
  const size_t rank = data.shape.size();
  const int64_t n = numel(indices.shape);
  const bool exact =
      exact_applies(op, options, data.dtype, reduction,
                    {Reduction::kSum, Reduction::kMean, Reduction::kMin, Reduction::kMax});
  const bool exact_sum = exact && (reduction == Reduction::kSum || reduction == Reduction::kMean);

  const int64_t data_bytes = numel(data.shape) * int64_t(data.itemsize);
  visit_index(indices.type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    using KI = kernel_index_t<I>;
    const I* raw = static_cast<const I*>(indices.data);
    auto validate = [&] {
      check_indices(op, raw, n, 1, 0, data.shape[size_t(axis)], axis, indices.shape,
                    options.allow_negative_indices);
    };
    const bool fuse = reduction != Reduction::kNone && n > 0 &&
                      fused_validation_pays(data_bytes, n * int64_t(sizeof(I)));
    const ElementsLayout layout =
        n > 0 ? make_elements_layout(data.shape, indices.shape, size_t(axis)) : ElementsLayout{};
    const KI* idx = reinterpret_cast<const KI*>(raw);
    // Each update touches a target cache line of its own (random along the axis).
    const int64_t bytes = n * int64_t(64 + data.itemsize + sizeof(KI));
    if (exact_sum) {
      visit_arithmetic(op, data.dtype, [&](auto type) {
        using T = typename decltype(type)::type;
        if constexpr (is_float_v<T>) {
          const T* upd = static_cast<const T*>(updates.data);
          const T* in = static_cast<const T*>(data.data);
          T* dst = static_cast<T*>(out);
          const int64_t size = layout.axis_size, count = numel(data.shape);
          const bool mean = reduction == Reduction::kMean;
          const bool negative_ok = options.allow_negative_indices && std::is_signed_v<I>;
          if (n > 0 && count > 0 && exact_table_fits(count, n)) {
            if (!exact_elements_dense(layout, idx, upd, in, dst, count, mean, use_init_val,
                                      IndexRange{negative_ok ? -size : 0, size}, bytes))
              validate();  // throws, naming the first bad index
            return;
          }
          validate();
          parallel_copy(out, data.data, data_bytes);
          if (n > 0) exact_elements_sorted(layout, idx, upd, dst, mean, use_init_val, bytes);
        }
      });
      return;
    }
    // out from data: piece by piece as the kernel goes, or in one pass now
    CopyFirst copy{static_cast<char*>(out), nullptr, data.itemsize};
    if (!fuse && out != data.data && copy_in_pieces_pays(layout, data.itemsize))
      copy.data = static_cast<const char*>(data.data);
    if (!fuse) {
      validate();
      // Validated: from here on nothing throws but allocation.
      if (copy.data == nullptr) parallel_copy(out, data.data, data_bytes);
    }
    if (n == 0) return;
    if (reduction == Reduction::kNone) {
      visit_width(data.itemsize, [&](auto width) {
        scatter_elements_move<typename decltype(width)::type>(
            layout, idx, static_cast<const char*>(updates.data), static_cast<char*>(out),
            data.itemsize, bytes, copy);
      });
      return;
    }
    visit_arithmetic(op, data.dtype, [&](auto type) {
      using T = typename decltype(type)::type;
      visit_reduction<T>(
          op, reduction,
          [&](auto red) {
            using Op = typename decltype(red)::type;
            const T* upd = static_cast<const T*>(updates.data);
            if (fuse) {
              if constexpr (folds_through_storage_v<Op, T>) {
                const int64_t size = layout.axis_size;
                const bool negative_ok = options.allow_negative_indices && std::is_signed_v<I>;
                if (!reduce_via_scratch<Op>(layout, idx, upd, static_cast<const T*>(data.data),
                                            static_cast<T*>(out), numel(data.shape), use_init_val,
                                            IndexRange{negative_ok ? -size : 0, size}, bytes,
                                            options.discard_out_on_error))
                  validate();  // throws, naming the first bad index
                return;
              }
              validate();
              parallel_copy(out, data.data, data_bytes);
            }
            scatter_elements_reduce<Op>(layout, idx, upd, static_cast<T*>(out), use_init_val, bytes,
                                        copy);
          },
          exact);
    });
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// Type-erased ScatterElementsUpdate (v12 semantics; v3 with
// options.allow_negative_indices = false and reduction none). `out` has data's
// shape and type; out == data.data updates in place. Inputs that share memory with out otherwise
// are read from copies.
inline void scatter_elements_update(const TensorRef& data, const IndexRef& indices,
                                    const TensorRef& updates, int64_t axis, void* out,
                                    Reduction reduction = Reduction::kNone,
                                    bool use_init_val = true, const OpOptions& options = {}) {
  const char* op = detail::op_name(options, "scatter_elements_update");
  detail::check_scatter_inputs(op, data, indices, updates);
  axis = detail::check_elements_call(op, data, indices, updates, axis, out, reduction);
  detail::ApartFromOut apart(data, out);
  detail::scatter_elements_update_unaliased(apart.data(data), apart.indices(indices),
                                            apart.input(updates), axis, out, reduction,
                                            use_init_val, options);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
