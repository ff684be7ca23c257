// How ScatterElementsUpdate runs a call: choose_elements_strategy picks one strategy from the
// layout of the call and the traits of its reduction, in one place, with the thresholds it
// compares against. Each strategy lives in a header of its own beside this one (move.hpp,
// fold.hpp, fused.hpp, ranges.hpp), the exact sums in exact/scatter_elements.hpp;
// elements_strategy lets tests ask which one a call takes. bench/README.md ("Kernel choices") has
// the measurements behind the thresholds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "scatterkit/config.hpp"
#include "scatterkit/dtype.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/shape.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {  // the thread count enters the choice

enum class ElementsStrategy {
  kMove,              // reduction none: elements move (move.hpp)
  kFoldInPlace,       // the fold runs on out itself (fold.hpp)
  kFoldInTable,       // a per-block table of (accumulator, count) slots (fold.hpp)
  kFoldLineMean,      // a mean along one long line: sums in place, counts in bytes (fold.hpp)
  kFoldSorted,        // few updates on a long axis, sorted by target (fold.hpp)
  kFusedFold,         // validation fused into a fold on a scratch copy (fused.hpp)
  kFusedFoldInParts,  // the same, each line split between threads (fused.hpp)
  kFoldByRanges,      // a 1-D table past the cache, its updates written out by range (ranges.hpp)
  kExactTable,        // exact sum or mean in tables of double slots (exact/scatter_elements.hpp);
                      // a 1-D histogram past the cache, range by range (exact/ranges.hpp)
  kExactCompact,      // the same, in tables over the targeted elements only
};

inline const char* strategy_name(ElementsStrategy s) {
  switch (s) {
    case ElementsStrategy::kMove: return "move";
    case ElementsStrategy::kFoldInPlace: return "fold in place";
    case ElementsStrategy::kFoldInTable: return "fold in table";
    case ElementsStrategy::kFoldLineMean: return "fold line mean";
    case ElementsStrategy::kFoldSorted: return "fold sorted";
    case ElementsStrategy::kFusedFold: return "fused fold";
    case ElementsStrategy::kFusedFoldInParts: return "fused fold in parts";
    case ElementsStrategy::kFoldByRanges: return "fold by ranges";
    case ElementsStrategy::kExactTable: return "exact table";
    case ElementsStrategy::kExactCompact: return "exact compact";
  }
  return "?";
}

// The reductions ScatterElementsUpdate-12 defines.
using ElementsReductions = ReductionSet<Reduction::kSum, Reduction::kProd, Reduction::kMin,
                                        Reduction::kMax, Reduction::kMean>;

// Some reductions give the bits of another: integer sum and prod wrap alike in signed and
// unsigned arithmetic, and a bool sum is an or (max), a bool product an and (min), with the
// same identities. Each such pair runs one kernel: kernel_form names it, and
// KernelReductions<T> leaves the other one's uncompiled.
inline void kernel_form(DType& dtype, Reduction& reduction) {
  const bool wraps = reduction == Reduction::kSum || reduction == Reduction::kProd;
  if (!wraps) return;
  switch (dtype) {
    case DType::kBool:
      reduction = reduction == Reduction::kSum ? Reduction::kMax : Reduction::kMin;
      break;
    case DType::kInt8: dtype = DType::kUInt8; break;
    case DType::kInt16: dtype = DType::kUInt16; break;
    case DType::kInt32: dtype = DType::kUInt32; break;
    case DType::kInt64: dtype = DType::kUInt64; break;
    default: break;
  }
}

template <class T>
using KernelReductions =
    std::conditional_t<std::is_same_v<T, bool> || (is_int_v<T> && std::is_signed_v<T>),
                       ReductionSet<Reduction::kMin, Reduction::kMax, Reduction::kMean>,
                       ElementsReductions>;

// Whether folding the updates of a target in any grouping gives the bits of folding them in
// C order, so that threads may fold consecutive parts of one line into tables of their own
// and merge the tables in part order: wrapping integer sum and prod (a commutative ring), and
// min/max, which keep the first of equal values (say -0 and +0) and the first NaN, as an
// in-order merge does. Float sum and prod round differently when regrouped. Exact min/max
// would merge exactly but for an untargeted NaN in data, which keeps its bits: a part that
// only holds the identity cannot tell untouched from targeted.
template <class Op, class T>
constexpr bool merges_exactly_v =
    folds_in_place_v<Op, T> && (std::is_same_v<Op, MinOp<T>> || std::is_same_v<Op, MaxOp<T>> ||
                                (!std::is_floating_point_v<T> &&
                                 (std::is_same_v<Op, SumOp<T>> || std::is_same_v<Op, ProdOp<T>>)));

// Whether the histogram strategies (the fused folds: fused.hpp, histogram.hpp) are compiled
// for reduction Op over T: for the folds in place on 32- and 64-bit numbers, the types
// histograms use. Narrow types take the general folds after a validation pass, with the same
// bits, and leave the fused folds' compile time out of the build (bench/README.md, Build and
// CI times).
template <class Op, class T>
constexpr bool has_histogram_kernels_v =
    folds_in_place_v<Op, T> && sizeof(T) >= 4 && std::is_arithmetic_v<T>;

// A table fold's slot: an accumulator and its count side by side, one cache line per update.
template <class Acc>
struct TableSlot {
  Acc acc;
  uint32_t count;
};

// What the choice depends on besides the layout.
struct ElementsCall {
  Reduction reduction = Reduction::kNone;
  // The kernel that runs it (kernel_form).
  DType kernel_dtype = DType::kOpaque;
  Reduction kernel_reduction = Reduction::kNone;
  bool exact = false;      // exact=True, where it applies (float data)
  bool exact_sum = false;  // ... with sum or mean
  bool use_init_val = true;
  bool in_place = false;           // out is data
  bool folds_in_place = false;     // folds_through_storage_v: the fold may run on out
  bool histogram_kernels = false;  // has_histogram_kernels_v: the fused folds are compiled
  bool merges_exactly = false;     // merges_exactly_v: parts of a line may fold apart
  bool sums_in_storage = false;    // a table fold whose accumulator is the element type
  int64_t slot_bytes = 0;          // sizeof(TableSlot<Acc>)
  int64_t data_count = 0;          // data's elements
  int64_t itemsize = 0;
  int64_t updates = 0;
  int64_t index_size = 0;  // bytes per index
  // Memory the call touches, for the thread count: each update touches a target cache line
  // of its own (random along the axis).
  int64_t bytes() const { return updates * (64 + itemsize + index_size); }
};

struct ElementsPlan {
  ElementsStrategy strategy = ElementsStrategy::kMove;
  int64_t parts = 1;            // kFusedFoldInParts: threads' parts of each line
  bool copy_in_pieces = false;  // out is filled from data piece by piece as the walk goes
};

// Entries of a per-thread accumulator table.
constexpr int64_t kScratchEntries = int64_t(1) << 18;

// Bytes up to which a table of slots stays in L2: not worth fetching ahead, nor replacing
// by the line mean.
constexpr int64_t kTableInCacheBytes = int64_t(1) << 19;

// Copying out from data piece by piece (CopyFirst) pays for many small pieces: the walk then
// finds its targets in cache, where a copy of the whole array first left them in memory.
inline bool copy_in_pieces_pays(const ElementsLayout& l, int64_t itemsize) {
  return l.piece() > 0 && l.outer >= 2 && l.piece() * itemsize <= kCopyRunBytes / 4;
}

// A table of accumulators only pays when the axis is short or densely hit.
inline bool accumulator_table_fits(const ElementsLayout& l) {
  return l.axis_size <= kScratchEntries || l.axis_size <= 4 * l.along;
}

// A mean along one line hitting every target, whose table would leave L2, keeps its sums in
// place and its counts in bytes instead.
inline bool line_mean_pays(const ElementsLayout& l, const ElementsCall& c) {
  return c.sums_in_storage && narrow_block_lines(l) == 1 && l.along >= l.axis_size &&
         l.axis_size * c.slot_bytes > kTableInCacheBytes;
}

// Fusing validation into the fold pays when data is small next to its indices (a histogram),
// where a separate validation pass would read the indices twice.
inline bool fused_validation_pays(int64_t data_bytes, int64_t index_bytes) {
  return 4 * data_bytes <= index_bytes;
}

// Table bytes from which a one-line fold goes by ranges: past the last-level cache of a small
// machine. Below it the targets' misses are cheap enough that writing the updates out costs
// more than it saves (bench/README.md, Kernel choices).
constexpr int64_t kRangeFoldMinBytes = int64_t(16) << 20;

// Table elements per update past which the copy of the table dominates: the plain copy then
// the in-place fold is faster than copying through the ranges' scratch.
constexpr int64_t kRangeFoldMaxElementsPerUpdate = 64;

// Whether a call with layout l folds by ranges (fold_line_by_ranges, ranges.hpp), at any
// thread count: on one thread it reaches each target in cache, not in memory; on more it
// also splits the float sums that the in-place fold keeps on one thread.
inline bool range_fold_pays(const ElementsLayout& l, int64_t table_bytes, int64_t updates) {
  return l.outer == 1 && l.inner == 1 && l.axis_stride == 1 && l.inner_offset.empty() &&
         l.outer_offset.empty() && table_bytes >= kRangeFoldMinBytes &&
         updates * kRangeFoldMaxElementsPerUpdate >= l.axis_size;
}

// Into how many parts the fused fold splits each line: only when there are fewer lines than
// threads (else whole lines keep every thread busy), and only as far as the extra tables
// stay small next to the indices.
inline int64_t line_parts(const ElementsLayout& l, int64_t table_bytes, int64_t index_bytes,
                          int64_t bytes) {
  const int64_t lines = l.outer * l.inner;
  const int64_t threads = threads_for(l.along, bytes);
  if (lines >= threads) return 1;
  return std::clamp<int64_t>(1 + index_bytes / (2 * std::max<int64_t>(1, table_bytes)), 1, threads);
}

// Elements per update up to which a table over every element pays; past it, the tables cover
// the targeted elements only (bench/README.md, Exact sums).
constexpr int64_t kExactDenseRatio = 3;

inline bool exact_table_fits(int64_t elements, int64_t updates) {
  return elements <= kExactDenseRatio * updates;
}

// The one decision: which strategy runs a call.
inline ElementsPlan choose_elements_strategy(const ElementsLayout& l, const ElementsCall& c) {
  using S = ElementsStrategy;
  ElementsPlan plan;
  if (c.exact_sum) {
    // A 1-D histogram past the cache goes by ranges of its table (exact/ranges.hpp).
    const bool table = c.updates > 0 && c.data_count > 0 &&
                       (exact_table_fits(c.data_count, c.updates) ||
                        range_fold_pays(l, c.data_count * c.itemsize, c.updates));
    plan.strategy = table ? S::kExactTable : S::kExactCompact;
    return plan;
  }
  const int64_t data_bytes = c.data_count * c.itemsize, index_bytes = c.updates * c.index_size;
  // Without use_init_val a range could not tell its untouched bins from those it folded.
  if (c.reduction != Reduction::kNone && c.histogram_kernels && c.use_init_val &&
      range_fold_pays(l, data_bytes, c.updates)) {
    plan.strategy = S::kFoldByRanges;
    return plan;
  }
  const bool fuse = c.reduction != Reduction::kNone && c.updates > 0 &&
                    fused_validation_pays(data_bytes, index_bytes);
  if (fuse && c.histogram_kernels) {
    // Without use_init_val each target starts at the identity, which a part cannot tell from
    // a target that only other parts hit: whole lines.
    if (c.merges_exactly && c.use_init_val)
      plan.parts = line_parts(l, data_bytes, index_bytes, c.bytes());
    plan.strategy = plan.parts > 1 ? S::kFusedFoldInParts : S::kFusedFold;
    return plan;
  }
  plan.copy_in_pieces = !fuse && !c.in_place && copy_in_pieces_pays(l, c.itemsize);
  if (c.reduction == Reduction::kNone)
    plan.strategy = S::kMove;
  else if (c.folds_in_place)
    plan.strategy = S::kFoldInPlace;
  else if (!accumulator_table_fits(l))
    plan.strategy = S::kFoldSorted;
  else if (line_mean_pays(l, c))
    plan.strategy = S::kFoldLineMean;
  else
    plan.strategy = S::kFoldInTable;
  return plan;
}

// The traits of reduction Op over T that the choice reads.
template <class Op, class T>
void note_reduction_traits(ElementsCall& c) {
  using Acc = typename Op::Acc;
  c.folds_in_place = folds_through_storage_v<Op, T>;
  c.histogram_kernels = has_histogram_kernels_v<Op, T>;
  c.merges_exactly = merges_exactly_v<Op, T>;
  c.sums_in_storage = std::is_same_v<Acc, T>;
  c.slot_bytes = int64_t(sizeof(TableSlot<Acc>));
}

// The call as the choice sees it. `exact` is exact=True where it applies (float data);
// dtype and reduction have been checked (check_elements_call). The traits are those of the
// kernel that runs the reduction (kernel_form).
inline ElementsCall make_elements_call(const char* op, const Shape& data, DType dtype,
                                       int64_t itemsize, int64_t updates, int64_t index_size,
                                       Reduction reduction, bool use_init_val, bool exact,
                                       bool in_place) {
  ElementsCall c;
  c.reduction = reduction;
  c.exact = exact;
  c.exact_sum = exact && (reduction == Reduction::kSum || reduction == Reduction::kMean);
  c.use_init_val = use_init_val;
  c.in_place = in_place;
  c.data_count = numel(data);
  c.itemsize = itemsize;
  c.updates = updates;
  c.index_size = index_size;
  kernel_form(dtype, reduction);
  c.kernel_dtype = dtype;
  c.kernel_reduction = reduction;
  if (reduction != Reduction::kNone && !c.exact_sum)
    visit_arithmetic(op, dtype, [&](auto type) {
      using T = typename decltype(type)::type;
      visit_reduction<T, KernelReductions<T>>(
          op, reduction,
          [&](auto red) { note_reduction_traits<typename decltype(red)::type, T>(c); }, exact);
    });
  return c;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
