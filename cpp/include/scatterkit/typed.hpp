// Typed entry points over non-owning views, for C++ callers that know their
// element and index types at compile time. They forward to the type-erased
// ops, so semantics, validation and error messages are the same everywhere.
//
//   std::vector<float> data(8), out(8);
//   std::vector<int64_t> idx = {4, 3};
//   std::vector<float> upd = {9, 10};
//   scatterkit::scatter_nd_update<float, int64_t>({data.data(), {8}}, {idx.data(), {2, 1}},
//                                                 {upd.data(), {2}}, {out.data(), {8}});
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/dtype.hpp"
#include "scatterkit/ops/scatter_elements_update.hpp"
#include "scatterkit/ops/scatter_nd_update.hpp"
#include "scatterkit/ops/scatter_update.hpp"
#include "scatterkit/ops/slice_scatter.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {

namespace detail {

template <class T>
TensorRef typed_ref(const TensorView<const T>& v) {
  return TensorRef{v.data, v.shape, dtype_of<T>(), sizeof(T)};
}

template <class I>
IndexRef typed_indices(const TensorView<const I>& v) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "indices must be integers");
  static_assert(sizeof(I) == 4 || sizeof(I) == 8, "use 32- or 64-bit indices");
  static_assert(!std::is_same_v<I, uint32_t>, "widen uint32 indices to int64");
  return IndexRef{v.data, v.shape, index_type_of<I>()};
}

template <class T>
void check_out(const char* op, const TensorView<const T>& data, const TensorView<T>& out) {
  if (out.shape != data.shape)
    throw_value_error(op, "out shape " + format_shape(out.shape) + " does not match data shape " +
                              format_shape(data.shape));
}

}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// ScatterUpdate-3. out may be data (in place); an input that shares memory with out
// otherwise is read from a copy (the same holds for every op).
template <class T, class I>
void scatter_update(TensorView<const T> data, TensorView<const I> indices,
                    TensorView<const T> updates, int64_t axis, TensorView<T> out,
                    const OpOptions& options = {false, nullptr}) {
  detail::check_out(detail::op_name(options, "scatter_update"), data, out);
  scatter_update(detail::typed_ref(data), detail::typed_indices(indices),
                 detail::typed_ref(updates), axis, out.data, options);
}

// ScatterElementsUpdate-12 (v3: reduction none and allow_negative_indices false).
template <class T, class I>
void scatter_elements_update(TensorView<const T> data, TensorView<const I> indices,
                             TensorView<const T> updates, int64_t axis, TensorView<T> out,
                             Reduction reduction = Reduction::kNone, bool use_init_val = true,
                             const OpOptions& options = {}) {
  detail::check_out(detail::op_name(options, "scatter_elements_update"), data, out);
  scatter_elements_update(detail::typed_ref(data), detail::typed_indices(indices),
                          detail::typed_ref(updates), axis, out.data, reduction, use_init_val,
                          options);
}

// ScatterNDUpdate-15 reductions (v3: none and allow_negative_indices false).
template <class T, class I>
void scatter_nd_update(TensorView<const T> data, TensorView<const I> indices,
                       TensorView<const T> updates, TensorView<T> out,
                       Reduction reduction = Reduction::kNone, const OpOptions& options = {}) {
  detail::check_out(detail::op_name(options, "scatter_nd_update"), data, out);
  scatter_nd_update(detail::typed_ref(data), detail::typed_indices(indices),
                    detail::typed_ref(updates), out.data, reduction, options);
}

// SliceScatter-15, one axis.
template <class T>
void slice_scatter(TensorView<const T> data, TensorView<const T> updates, int64_t start,
                   int64_t stop, int64_t step, int64_t axis, TensorView<T> out) {
  detail::check_out("slice_scatter", data, out);
  slice_scatter(detail::typed_ref(data), detail::typed_ref(updates), {start}, {stop}, {step},
                {axis}, out.data);
}

// SliceScatter over several distinct axes at once.
template <class T>
void slice_scatter(TensorView<const T> data, TensorView<const T> updates,
                   const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                   const std::vector<int64_t>& steps, const std::vector<int64_t>& axes,
                   TensorView<T> out) {
  detail::check_out("slice_scatter", data, out);
  slice_scatter(detail::typed_ref(data), detail::typed_ref(updates), starts, stops, steps, axes,
                out.data);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
