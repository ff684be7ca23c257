// How ScatterElementsUpdate walks its updates: the layout of a call, blocks of lines
// (for_each_line_block, run in parallel) and the loops over a block's updates
// (visit_block). A "line" is the set of positions sharing every coordinate but `axis`: only
// the updates of one line can hit a given target, and within a line C order is order along
// the axis, so whole lines go to threads and each line is folded in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/function_ref.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/shape.hpp"

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
// with short lines (along the last axis, say) starting a block costs more than
// its updates.
constexpr int64_t kMinBlockUpdates = 1024;

// Lines per block for moves: wide, so that each row of indices and updates is
// read as one contiguous run rather than as short strided pieces.
constexpr int64_t kWideBlockLines = 512;

// Lines per block for folds: narrow (about 64 blocks in all), so that a
// block's targets and its per-block table stay in cache.
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

// Runs body(LineBlock) over blocks of at most max_lines lines, in parallel:
// each thread takes a contiguous range of lines (each line carries the same
// number of updates, so the ranges are balanced) and cuts it into blocks
// within one outer position. A few long lines (a 1-D histogram, say) stay on
// one thread: splitting their targets between threads would make every thread
// scan every update, which is slower on memory-bound cores, and a float
// sum in C order cannot split the updates (reduce_in_parts splits them for
// the reductions that can).
//
// With copy.data set, it first fills out from data, a run of outer positions'
// pieces at a time, each run just before its lines are visited.
inline void for_each_line_block(const ElementsLayout& l, int64_t bytes, int64_t max_lines,
                                FunctionRef<void(const LineBlock&)> body, CopyFirst copy = {}) {
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

// Every prefetch policy says whether it fetches at all (enabled(); a walk then skips even the
// index loads): a null base turns one off for a walk, so that one walk serves both cases.

// No prefetching: for walks whose targets are not worth fetching ahead.
struct NoPrefetch {
  bool enabled() const { return false; }
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
  size_t width;                                     // bytes per element
  bool enabled() const { return base != nullptr; }  // null: off for this walk
  void operator()(int64_t, int64_t t) const { prefetch_l2(uintptr_t(base) + uint64_t(t) * width); }
};

// The same, and in a block of many lines (visit_block's general loop) each
// update also fetches its line's next target: the next row's, a block's width
// of updates ahead (hundreds for a wide block of moves, enough to hide a miss
// to memory): for moves, and for table folds, which read each target once, on
// its first update; a miss saved is worth far more than a prefetch wasted. Not
// for folds in place, whose narrow blocks keep their targets in cache.
// next_row(t) is that fetch, of target offset t.
struct PrefetchTargetAcrossRows : PrefetchTarget {
  void next_row(int64_t t) const { (*this)(0, t); }
};

template <class Prefetch, class = void>
constexpr bool fetches_across_rows_v = false;
template <class Prefetch>
constexpr bool fetches_across_rows_v<Prefetch, std::void_t<decltype(&Prefetch::next_row)>> = true;

// Updates between an index being prefetched and being applied: far enough
// ahead to hide a miss to memory, near enough to stay in L2.
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
// the raw index. Negative
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
  const int64_t ahead = prefetch.enabled() ? j1 - kPrefetchDistance : j0;
  // unsigned: the index may be invalid, its offset must not overflow
  auto fetch = [&](int64_t a) {
    prefetch(a, int64_t(uint64_t(a) * uint64_t(stride) + uint64_t(offset)));
  };
  int64_t j = j0, misses = 0;
  for (; j < j1 && misses < kFastLoopMisses; ++j) {
    if (j < ahead) fetch(int64_t(column[(j + kPrefetchDistance) * inner]));
    const I v = column[j * inner];
    int64_t a = int64_t(v);
    // rare, and laid out of the loop: one taken branch per update (as in fold_stream_run)
    if (__builtin_expect(uint64_t(a) >= uint64_t(size), 0)) {
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
// reloads the caller's captures on every update.
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
      auto fetch_next_row = [&](int64_t i, int64_t offset) {
        if constexpr (fetches_across_rows_v<Prefetch>)
          prefetch.next_row(shift + int64_t(uint64_t(line[i + inner]) * uint64_t(stride)) + offset);
      };
      if (inner_offset == nullptr) {
        for (int64_t i = i0; i < i1; ++i) {
          if (fetch) fetch_next_row(i, i);
          if (!valid(line[i])) return false;
          const int64_t a = wrap_index(line[i], size);
          visit_update(f, a, shift + a * stride + i, row + i, i);
        }
      } else {
        for (int64_t i = i0; i < i1; ++i) {
          if (fetch) fetch_next_row(i, inner_offset[i]);
          if (!valid(line[i])) return false;
          const int64_t a = wrap_index(line[i], size);
          visit_update(f, a, shift + a * stride + inner_offset[i], row + i, i);
        }
      }
    }
  }
  return true;
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

// Prefetches element a * stride of an array indexed by the target's
// coordinate along the axis (a table slot, say), for visit_line: its cache
// miss is the whole cost of a histogram fold, as the target's is in place.
template <class E>
struct PrefetchAlongAxis {
  const E* base;
  int64_t stride;                                   // elements between neighbouring targets
  bool enabled() const { return base != nullptr; }  // null: off for this walk
  void operator()(int64_t a, int64_t) const {
    prefetch_l2(uintptr_t(base) + uint64_t(a) * uint64_t(stride) * sizeof(E));
  }
};

// A table fold's: along one line the slots (PrefetchAlongAxis), across many lines the next
// row's targets (PrefetchTargetAcrossRows), for one walk that serves both.
template <class E>
struct PrefetchSlotsOrNextRow : PrefetchAlongAxis<E> {
  PrefetchTarget target;
  void next_row(int64_t t) const { target(0, t); }
};

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
