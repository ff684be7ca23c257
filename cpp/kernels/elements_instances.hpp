// ScatterElementsUpdate's folds for one index type, named one by one so that they compile in
// units of their own beside the unit of scatter_elements_update_for_index, which declares
// them extern: one index type's kernels then build on both cores (CMakeLists.txt). A unit
// defines SCATTERKIT_DECL (`template`, or `extern template`) and SCATTERKIT_KI (the kernels'
// index type, kernel_index_t) before it expands a list.
//
// The lists follow the kernel's dispatch: the reductions of strategy.hpp's KernelReductions,
// on out's storage where reduction.hpp's folds_through_storage_v holds, in parts where
// merges_exactly_v does too. A fold missing from them still works, compiled in the for_index
// unit; one listed in excess fails its static_assert.
#pragma once

#include "scatterkit/ops/scatter_elements_update.hpp"

// A fold after a validation pass.
#define SCATTERKIT_FOLD(Op, T)                                                                    \
  SCATTERKIT_DECL void scatter_elements_reduce<Op, T, SCATTERKIT_KI>(                             \
      ElementsStrategy, const ElementsLayout&, const SCATTERKIT_KI*, const T*, T*, bool, int64_t, \
      CopyFirst);

// The same, and the fold on out's storage that checks each index (reduce_via_scratch).
#define SCATTERKIT_FOLD_ON_STORAGE(Op, T)                                                       \
  SCATTERKIT_FOLD(Op, T)                                                                        \
  static_assert(folds_through_storage_v<Op, T>, "the kernel does not fold " #Op " on storage"); \
  SCATTERKIT_DECL bool reduce_via_scratch<Op, T, SCATTERKIT_KI>(                                \
      const ElementsLayout&, const SCATTERKIT_KI*, const T*, const T*, T*, int64_t, bool,       \
      IndexRange, int64_t, bool);

// The same, and the fold split between threads along a line (reduce_in_parts).
#define SCATTERKIT_FOLD_IN_PARTS(Op, T)                                                      \
  SCATTERKIT_FOLD_ON_STORAGE(Op, T)                                                          \
  static_assert(merges_exactly_v<Op, T>, "the kernel does not fold " #Op " in parts");       \
  SCATTERKIT_DECL bool reduce_in_parts<Op, T, SCATTERKIT_KI>(                                \
      const ElementsLayout&, const SCATTERKIT_KI*, const T*, const T*, T*, int64_t, int64_t, \
      IndexRange, int64_t, bool);

// Exact sums and means (float elements).
#define SCATTERKIT_EXACT_SUMS(T)                                                                \
  SCATTERKIT_DECL bool exact_elements_dense<T, SCATTERKIT_KI>(                                  \
      const ElementsLayout&, const SCATTERKIT_KI*, const T*, const T*, T*, int64_t, bool, bool, \
      IndexRange, int64_t);                                                                     \
  SCATTERKIT_DECL void exact_elements_sorted<T, SCATTERKIT_KI>(                                 \
      const ElementsLayout&, const SCATTERKIT_KI*, const T*, T*, bool, bool, int64_t);

// Each element type's folds (one fold or type a line).
// clang-format off
#define SCATTERKIT_MIN_MAX_FOLDS(T)            \
  SCATTERKIT_FOLD_IN_PARTS(MinOp<T>, T)        \
  SCATTERKIT_FOLD_IN_PARTS(MaxOp<T>, T)
#define SCATTERKIT_SIGNED_FOLDS(T)             \
  SCATTERKIT_MIN_MAX_FOLDS(T)                  \
  SCATTERKIT_FOLD(MeanOp<T>, T)
#define SCATTERKIT_UNSIGNED_FOLDS(T)           \
  SCATTERKIT_SIGNED_FOLDS(T)                   \
  SCATTERKIT_FOLD_IN_PARTS(SumOp<T>, T)        \
  SCATTERKIT_FOLD_IN_PARTS(ProdOp<T>, T)
#define SCATTERKIT_EXACT_MIN_MAX_FOLDS(T)      \
  SCATTERKIT_FOLD_ON_STORAGE(ExactMinOp<T>, T) \
  SCATTERKIT_FOLD_ON_STORAGE(ExactMaxOp<T>, T)
#define SCATTERKIT_FLOAT_FOLDS(T)              \
  SCATTERKIT_SIGNED_FOLDS(T)                   \
  SCATTERKIT_FOLD_ON_STORAGE(SumOp<T>, T)      \
  SCATTERKIT_FOLD_ON_STORAGE(ProdOp<T>, T)     \
  SCATTERKIT_EXACT_MIN_MAX_FOLDS(T)            \
  SCATTERKIT_EXACT_SUMS(T)
// float16 and bfloat16 accumulate in float: only min and max fold on storage, none in parts.
#define SCATTERKIT_HALF_FOLDS(T)               \
  SCATTERKIT_FOLD_ON_STORAGE(MinOp<T>, T)      \
  SCATTERKIT_FOLD_ON_STORAGE(MaxOp<T>, T)      \
  SCATTERKIT_FOLD(SumOp<T>, T)                 \
  SCATTERKIT_FOLD(ProdOp<T>, T)                \
  SCATTERKIT_FOLD(MeanOp<T>, T)                \
  SCATTERKIT_EXACT_MIN_MAX_FOLDS(T)            \
  SCATTERKIT_EXACT_SUMS(T)

// The two halves, by element type (a bool mean is refused before any fold).
#define SCATTERKIT_INTEGER_FOLDS               \
  SCATTERKIT_MIN_MAX_FOLDS(bool)               \
  SCATTERKIT_SIGNED_FOLDS(int8_t)              \
  SCATTERKIT_SIGNED_FOLDS(int16_t)             \
  SCATTERKIT_SIGNED_FOLDS(int32_t)             \
  SCATTERKIT_SIGNED_FOLDS(int64_t)             \
  SCATTERKIT_UNSIGNED_FOLDS(uint8_t)           \
  SCATTERKIT_UNSIGNED_FOLDS(uint16_t)          \
  SCATTERKIT_UNSIGNED_FOLDS(uint32_t)          \
  SCATTERKIT_UNSIGNED_FOLDS(uint64_t)
#define SCATTERKIT_FLOATING_FOLDS              \
  SCATTERKIT_HALF_FOLDS(float16)               \
  SCATTERKIT_HALF_FOLDS(bfloat16)              \
  SCATTERKIT_FLOAT_FOLDS(float)                \
  SCATTERKIT_FLOAT_FOLDS(double)
// clang-format on
