// ScatterElementsUpdate-3 / -12:
//   out[p with p[axis] = indices[p]] = reduce(out[...], updates[p])
// for every position p of indices (= of updates), in C order of p.
// indices.shape[d] <= data.shape[d] for d != axis; indices.shape[axis] is free.
//
// Whole lines (ops/elements/walk.hpp) go to threads and each line folds in order: no races,
// and the same bits for any thread count. ops/elements/strategy.hpp chooses how a call runs;
// the strategies are in the other headers of ops/elements/, the exact sums
// (exact=True) in exact/scatter_elements.hpp.
#pragma once

#include <cstdint>
#include <type_traits>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/exact/scatter_elements.hpp"
#include "scatterkit/function_ref.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/fold.hpp"
#include "scatterkit/ops/elements/fused.hpp"
#include "scatterkit/ops/elements/histogram.hpp"
#include "scatterkit/ops/elements/move.hpp"
#include "scatterkit/ops/elements/ranges.hpp"
#include "scatterkit/ops/elements/strategy.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

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

// A checked call's layout, its description for the choice, and the choice.
struct ElementsRun {
  ElementsLayout layout;
  ElementsCall call;
  ElementsPlan plan;
};

// The one place a call is planned: the kernel runs this plan, and elements_strategy reports it.
inline ElementsRun plan_elements(const char* op, const TensorRef& data, const Shape& ishape,
                                 int64_t index_size, int64_t axis, Reduction reduction,
                                 bool use_init_val, const OpOptions& options, bool in_place) {
  ElementsRun run;
  if (numel(ishape) > 0) run.layout = make_elements_layout(data.shape, ishape, size_t(axis));
  const bool exact = exact_applies(op, options, data.dtype, reduction, kElementsExactReductions);
  run.call = make_elements_call(op, data.shape, data.dtype, int64_t(data.itemsize), numel(ishape),
                                index_size, reduction, use_init_val, exact, in_place);
  run.plan = choose_elements_strategy(run.layout, run.call);
  return run;
}

// The plan scatter_elements_update follows for a call with these shapes and attributes
// (for tests, and for anyone asking why a call runs as it does).
inline ElementsPlan elements_strategy(const Shape& data, const Shape& indices, int64_t axis,
                                      DType dtype, IndexType index_type,
                                      Reduction reduction = Reduction::kNone,
                                      bool use_init_val = true, bool exact = false,
                                      bool in_place = false) {
  const char* op = "elements_strategy";
  const TensorRef d{nullptr, data, dtype, dtype_size(dtype)};
  const IndexRef i{nullptr, indices, index_type};
  const TensorRef u{nullptr, indices, dtype, dtype_size(dtype)};
  const int64_t any_out = 0;  // the shape rules want a non-null out for non-empty data
  axis = check_elements_call(op, d, i, u, axis, &any_out, reduction);
  OpOptions options;
  options.exact = exact;
  return plan_elements(op, d, indices, index_size(index_type), axis, reduction, use_init_val,
                       options, in_place)
      .plan;
}

// A planned, validated (or self-checking) reduction, handed to the kernels of its element type.
template <class KI>
struct ElementsFold {
  const char* op;
  const ElementsRun& run;
  const KI* idx;
  const TensorRef& data;
  const TensorRef& updates;
  void* out;
  Reduction reduction;
  bool use_init_val;
  bool checks_as_it_folds;  // the strategy checks each index as it reads it
  bool discard_out_on_error;
  IndexRange valid;
  CopyFirst copy;
  FunctionRef<void()> validate;  // throws, naming the first bad index
};

// The reduction of fold f on elements of type T.
template <class KI, class T>
void fold_elements_of(const ElementsFold<KI>& f) {
  using S = ElementsStrategy;
  const ElementsLayout& layout = f.run.layout;
  const ElementsCall& call = f.run.call;
  const ElementsPlan& plan = f.run.plan;
  const int64_t bytes = call.bytes();
  const T* upd = static_cast<const T*>(f.updates.data);
  const T* in = static_cast<const T*>(f.data.data);
  T* dst = static_cast<T*>(f.out);
  const int64_t count = numel(f.data.shape);
  if (call.exact_sum) {
    if constexpr (is_float_v<T>) {
      const bool mean = f.reduction == Reduction::kMean;
      const bool done = plan.strategy == S::kExactTable
                            ? exact_elements_dense(layout, f.idx, upd, in, dst, count, mean,
                                                   f.use_init_val, f.valid, bytes)
                            : exact_elements_compact(layout, f.idx, upd, in, dst, count, mean,
                                                     f.use_init_val, f.valid, bytes, dst == in);
      if (!done) f.validate();
    }
    return;
  }
  visit_reduction<T, KernelReductions<T>>(
      f.op, call.kernel_reduction,
      [&](auto red) {
        using Op = typename decltype(red)::type;
        if constexpr (has_histogram_kernels_v<Op, T>) {
          bool ok = true;
          if (plan.strategy == S::kFoldByRanges) {
            const RangeFold done =
                fold_line_by_ranges<Op>(f.idx, upd, in, dst, layout.along, count, f.valid);
            if (done == RangeFold::kConcentrated) {  // fold in place instead
              f.validate();
              parallel_copy(dst, in, count * int64_t(sizeof(T)));
              fold_line_in_memory<Op>(f.idx, upd, dst, layout.along, count, f.valid);  // checked
              return;
            }
            ok = done == RangeFold::kFolded;
          }
          if (plan.strategy == S::kFusedFold)
            ok = reduce_via_scratch<Op>(layout, f.idx, upd, in, dst, count, f.use_init_val, f.valid,
                                        bytes, f.discard_out_on_error);
          if constexpr (merges_exactly_v<Op, T>)
            if (plan.strategy == S::kFusedFoldInParts)
              ok = reduce_in_parts<Op>(layout, f.idx, upd, in, dst, count, plan.parts, f.valid,
                                       bytes, f.discard_out_on_error);
          if (!ok) f.validate();
          if (f.checks_as_it_folds) return;
        }
        scatter_elements_reduce<Op>(plan.strategy, layout, f.idx, upd, dst, f.use_init_val, bytes,
                                    f.copy);
      },
      call.exact);
}

// The element types whose reductions compile with the index type's kernels, at the build's
// full optimization: float16, float32 and float64, the types the benchmarks measure. The
// others (integers, bool, bfloat16) compile in translation units of their own, which a build
// may optimize less (CMakeLists.txt).
template <class T>
constexpr bool is_measured_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, float16>;

inline bool is_measured_type(const char* op, DType t) {
  return visit_arithmetic(
      op, t, [](auto tag) { return is_measured_type_v<typename decltype(tag)::type>; });
}

template <class KI>
void fold_elements_measured(const ElementsFold<KI>& f) {
  visit_arithmetic(f.op, f.run.call.kernel_dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (is_measured_type_v<T>) fold_elements_of<KI, T>(f);
  });
}

template <class KI>
void fold_elements_other(const ElementsFold<KI>& f) {
  visit_arithmetic(f.op, f.run.call.kernel_dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    if constexpr (!is_measured_type_v<T>) fold_elements_of<KI, T>(f);
  });
}

// scatter_elements_update for one index type, on inputs the public entry has checked
// (buffers, element types, check_elements_call, which normalized axis) and set apart from out
// (data may be out). A template of its own, not inline, so that a build may compile it once
// per index type, in translation units of their own (SCATTERKIT_EXTERN_KERNELS).
template <class I>
void scatter_elements_update_for_index(const TensorRef& data, const I* raw, const Shape& ishape,
                                       const TensorRef& updates, int64_t axis, void* out,
                                       Reduction reduction, bool use_init_val,
                                       const OpOptions& options) {
  using S = ElementsStrategy;
  using KI = kernel_index_t<I>;
  const char* op = op_name(options, "scatter_elements_update");
  const int64_t n = numel(ishape), size = data.shape[size_t(axis)];
  const int64_t data_bytes = numel(data.shape) * int64_t(data.itemsize);
  auto validate = [&] {
    check_indices(op, raw, n, 1, 0, size, axis, ishape, options.allow_negative_indices);
  };
  const ElementsRun run = plan_elements(op, data, ishape, int64_t(sizeof(I)), axis, reduction,
                                        use_init_val, options, out == data.data);
  const ElementsPlan& plan = run.plan;
  const KI* idx = reinterpret_cast<const KI*>(raw);
  // The strategies that check each index as they fold leave out untouched on a bad one; the
  // others run after a validation pass, and from then on nothing throws but allocation.
  const bool checks_as_it_folds =
      plan.strategy == S::kExactTable || plan.strategy == S::kExactCompact ||
      plan.strategy == S::kFusedFold || plan.strategy == S::kFusedFoldInParts ||
      plan.strategy == S::kFoldByRanges;
  const IndexRange valid{options.allow_negative_indices && std::is_signed_v<I> ? -size : 0, size};
  CopyFirst copy{static_cast<char*>(out), nullptr, data.itemsize};
  if (!checks_as_it_folds) {
    validate();
    if (plan.copy_in_pieces)
      copy.data = static_cast<const char*>(data.data);
    else
      parallel_copy(out, data.data, data_bytes);
    if (n == 0) return;
  }
  if (plan.strategy == S::kMove) {
    visit_width(data.itemsize, [&](auto width) {
      scatter_elements_move<typename decltype(width)::type>(
          run.layout, idx, static_cast<const char*>(updates.data), static_cast<char*>(out),
          data.itemsize, run.call.bytes(), copy);
    });
    return;
  }
  const ElementsFold<KI> fold{op,
                              run,
                              idx,
                              data,
                              updates,
                              out,
                              reduction,
                              use_init_val,
                              checks_as_it_folds,
                              options.discard_out_on_error,
                              valid,
                              copy,
                              validate};
  if (is_measured_type(op, run.call.kernel_dtype))
    fold_elements_measured(fold);
  else
    fold_elements_other(fold);
}

// scatter_elements_update on inputs the public entry has checked and set apart from out.
inline void scatter_elements_update_unaliased(const TensorRef& data, const IndexRef& indices,
                                              const TensorRef& updates, int64_t axis, void* out,
                                              Reduction reduction, bool use_init_val,
                                              const OpOptions& options) {
  visit_index(indices.type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    scatter_elements_update_for_index(data, static_cast<const I*>(indices.data), indices.shape,
                                      updates, axis, out, reduction, use_init_val, options);
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

// A build that compiles these kernels once, in translation units of their own (cpp/kernels/),
// defines SCATTERKIT_EXTERN_KERNELS for every other unit, which then only calls them.
#ifdef SCATTERKIT_EXTERN_KERNELS
namespace scatterkit::detail {
extern template void scatter_elements_update_for_index<int32_t>(const TensorRef&, const int32_t*,
                                                                const Shape&, const TensorRef&,
                                                                int64_t, void*, Reduction, bool,
                                                                const OpOptions&);
extern template void scatter_elements_update_for_index<int64_t>(const TensorRef&, const int64_t*,
                                                                const Shape&, const TensorRef&,
                                                                int64_t, void*, Reduction, bool,
                                                                const OpOptions&);
extern template void scatter_elements_update_for_index<uint64_t>(const TensorRef&, const uint64_t*,
                                                                 const Shape&, const TensorRef&,
                                                                 int64_t, void*, Reduction, bool,
                                                                 const OpOptions&);
extern template void fold_elements_other<int32_t>(const ElementsFold<int32_t>&);
extern template void fold_elements_other<int64_t>(const ElementsFold<int64_t>&);
}  // namespace scatterkit::detail
#endif
