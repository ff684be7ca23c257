// ScatterElementsUpdate's loop for one contiguous line whose table stays in cache (a 1-D
// histogram of up to a few MB, folded by fused.hpp on its scratch copy): the targets are
// cache hits, so the pace is set by streaming the indices and updates in, which this loop
// fetches ahead. A table in L2 needs nothing more (fetching each target ahead only spends
// instructions there); one past L2, in the last-level cache, has each target fetched into L2
// ahead as well. The same loop, fetching further ahead, folds a table in memory in place on
// one thread when its updates crowd onto a few ranges of it (fold_line_in_memory, ranges.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "scatterkit/config.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/reduction.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Table bytes up to which a one-line fold streams its inputs rather than fetching its targets.
constexpr int64_t kStreamingFoldMaxBytes = int64_t(8) << 20;

// Table bytes from which the streaming loop also fetches each target into L2, kPrefetchDistance
// updates ahead: past a core's L2 (512 KB to 1 MB on the machines measured) each target is a
// last-level-cache hit whose latency the loop otherwise waits for.
constexpr int64_t kStreamFetchTargetsMinBytes = int64_t(1) << 20;

// A step that fetches its inputs into L1 may fetch its targets (kPrefetchDistance ahead).
static_assert(kStreamNearUpdates >= kPrefetchDistance);

// Whether the one line of layout l (a 1-D histogram) may fold with fold_line_streaming.
inline bool streams_line(const ElementsLayout& l, int64_t table_bytes) {
  return l.outer == 1 && l.inner == 1 && l.axis_stride == 1 && l.inner_offset.empty() &&
         l.outer_offset.empty() && table_bytes <= kStreamingFoldMaxBytes;
}

// A float min or max whose updates hold no NaN folds as a bare compare and select: the test of
// each update for NaN that Op::combine needs cost the loop as much as the rest of it.
template <class Op, class T>
constexpr bool selects_without_nan_v = std::is_floating_point_v<T> && is_min_max_v<Op, T>;

// Whether any of n floats is a NaN, in integer operations that vectorize.
template <class T>
bool step_has_nan(const T* u, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  constexpr Bits kAbs = ~Bits(0) >> 1;
  constexpr Bits kInf = sizeof(T) == 4 ? Bits(0x7f800000u) : Bits(0x7ffULL << 52);
  Bits nan = 0;
  for (int64_t k = 0; k < n; ++k) {
    Bits b;
    std::memcpy(&b, u + k, sizeof(T));
    nan |= Bits((b & kAbs) > kInf);
  }
  return nan != 0;
}

// Op::combine for an update that is not NaN: a NaN target loses the compare and stays.
template <class Op, class T>
SCATTERKIT_ALWAYS_INLINE T select_no_nan(T a, T v) {
  if constexpr (std::is_same_v<Op, MaxOp<T>>)
    return v > a ? v : a;
  else
    return v < a ? v : a;
}

// table[a] = fold(table[a], upd[j]) for a = idx[j] (wrapped when negative and `valid` allows
// it); false if `valid` rejects idx[j]. Wrap: negative indices are expected (see
// fold_line_streaming). NoNaN: upd[j] is not a NaN (selects_without_nan_v). Ahead: when not 0,
// the target that many updates ahead is fetched into L2 (idx[j + Ahead] must exist).
template <bool Wrap, bool NoNaN, int64_t Ahead, class Op, class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_stream_update(const KI* idx, const T* upd, T* table, int64_t j,
                                                 int64_t size, IndexRange valid,
                                                 int64_t& negatives) {
  if constexpr (Ahead > 0)  // raw: a bad index ahead only fetches a line nobody reads
    prefetch_l2(uintptr_t(table) + uint64_t(idx[j + Ahead]) * sizeof(T));
  const KI v = idx[j];
  int64_t a = int64_t(v);
  if constexpr (Wrap) {
    if (!valid(v)) return false;
    a = wrap_index(v, size);
  } else if (__builtin_expect(uint64_t(a) >= uint64_t(size), 0)) {
    // Negative or bad: rare, and laid out of the loop, so that the fast path takes one
    // branch per update, not two (a loop this short is bound by its front end).
    if (!valid(v)) return false;
    a = wrap_index(v, size);
    ++negatives;
  }
  if constexpr (NoNaN)
    table[a] = select_no_nan<Op>(table[a], upd[j]);
  else
    table[a] = fold_into_storage<Op>(table[a], upd[j]);
  return true;
}

// fold_stream_update for j in [j0, j1), in order; false at the first index `valid` rejects
// (table is then half folded). Unrolled: four times, for the steps of a fold without fetches (a
// table in L2), which its front end binds and its branch back cost 3-10% of; with fetches,
// unrolled it ran up to 8% slower (bench/README.md).
template <bool Wrap, bool NoNaN, int64_t Ahead, bool Unrolled, class Op, class T, class KI>
SCATTERKIT_ALWAYS_INLINE bool fold_stream_run(const KI* idx, const T* upd, T* table, int64_t j0,
                                              int64_t j1, int64_t size, IndexRange valid,
                                              int64_t& negatives) {
  if constexpr (Unrolled) {
#pragma GCC unroll 4
    for (int64_t j = j0; j < j1; ++j)
      if (!fold_stream_update<Wrap, NoNaN, Ahead, Op>(idx, upd, table, j, size, valid, negatives))
        return false;
  } else {
    for (int64_t j = j0; j < j1; ++j)
      if (!fold_stream_update<Wrap, NoNaN, Ahead, Op>(idx, upd, table, j, size, valid, negatives))
        return false;
  }
  return true;
}

// Folds the n updates of one contiguous line into table (size targets) in C order, checking
// each index; false at the first bad one. A run of negative indices would mispredict the fast
// loop's range test: after kFastLoopMisses of them, the rest wraps every index. Ahead: see
// fold_stream_run.
template <int64_t Ahead, class Op, class T, class KI>
bool fold_line_streaming_with(const KI* idx, const T* upd, T* table, int64_t n, int64_t size,
                              IndexRange valid) {
  int64_t j = 0, negatives = 0;
  for (; j + kStreamStep <= n; j += kStreamStep) {
    const bool near = prefetch_inputs_ahead(j, n, idx, upd);
    if constexpr (Ahead > 0)
      if (!near || j + kStreamStep + Ahead > n) break;  // targets ahead: past n
    if constexpr (selects_without_nan_v<Op, T>) {
      if (negatives < kFastLoopMisses && !step_has_nan(upd + j, kStreamStep)) {
        if (!fold_stream_run<false, true, Ahead, Ahead == 0, Op>(
                idx, upd, table, j, j + kStreamStep, size, valid, negatives))
          return false;
        continue;
      }
    }
    const bool ok = negatives < kFastLoopMisses
                        ? fold_stream_run<false, false, Ahead, Ahead == 0, Op>(
                              idx, upd, table, j, j + kStreamStep, size, valid, negatives)
                        : fold_stream_run<true, false, Ahead, Ahead == 0, Op>(
                              idx, upd, table, j, j + kStreamStep, size, valid, negatives);
    if (!ok) return false;
  }
  return fold_stream_run<true, false, 0, false, Op>(idx, upd, table, j, n, size, valid, negatives);
}

// A one-line fold on a table in cache (up to kStreamingFoldMaxBytes), fetching its targets from
// kStreamFetchTargetsMinBytes on.
template <class Op, class T, class KI>
bool fold_line_streaming(const KI* idx, const T* upd, T* table, int64_t n, int64_t size,
                         IndexRange valid) {
  if (size * int64_t(sizeof(T)) >= kStreamFetchTargetsMinBytes)
    return fold_line_streaming_with<kPrefetchDistance, Op>(idx, upd, table, n, size, valid);
  return fold_line_streaming_with<0, Op>(idx, upd, table, n, size, valid);
}

// Updates ahead at which a one-line fold on a table in memory fetches its targets: a miss to
// memory takes several times as long as one to the last-level cache, so the fetches must run
// further ahead to keep enough of them in flight (bench/README.md).
constexpr int64_t kMemoryFetchAhead = 128;

// A one-line fold in place on a table past the last-level cache (after fold_line_by_ranges
// declines concentrated updates, ranges.hpp).
template <class Op, class T, class KI>
bool fold_line_in_memory(const KI* idx, const T* upd, T* table, int64_t n, int64_t size,
                         IndexRange valid) {
  return fold_line_streaming_with<kMemoryFetchAhead, Op>(idx, upd, table, n, size, valid);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
