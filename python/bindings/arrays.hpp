// Turning NumPy arrays into the core's views, defensively: the Python layer
// already coerces its inputs, but _core is importable, so every buffer is
// still checked (layout, size, writeability) before the GIL is released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "scatterkit/batch_rows.hpp"
#include "scatterkit/dtype.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/shape.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit::bindings {

namespace py = pybind11;

inline Shape shape_of(const py::array& a) { return Shape(a.shape(), a.shape() + a.ndim()); }

inline void require_c_contiguous(const char* op, const py::array& a, const char* name) {
  const int flags = py::detail::array_proxy(a.ptr())->flags;
  if (!(flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) ||
      !(flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw ValueError(std::string(op) + ": " + name + " must be C-contiguous and aligned");
}

inline TensorRef tensor_of(const char* op, const py::array& a, const std::string& dtype,
                           const char* name) {
  require_c_contiguous(op, a, name);
  return TensorRef{a.data(), shape_of(a), dtype_from_name(dtype), size_t(a.itemsize())};
}

// The kernels' index type of an index array (the Python side casts other integers first).
inline IndexType index_type_of(const char* op, const py::array& a) {
  const char kind = a.dtype().kind();
  if (kind == 'i' && a.itemsize() == 4) return IndexType::kInt32;
  if (kind == 'i' && a.itemsize() == 8) return IndexType::kInt64;
  if (kind == 'u' && a.itemsize() == 8) return IndexType::kUInt64;
  throw TypeError(std::string(op) + ": indices must be int32, int64 or uint64 here");
}

inline IndexRef indices_of(const char* op, const py::array& a) {
  require_c_contiguous(op, a, "indices");
  return IndexRef{a.data(), shape_of(a), index_type_of(op, a)};
}

// The output buffer: data's shape and item size, writeable, C-contiguous.
// Returns the pointer to write through (equal to data's for in place).
inline void* output_of(const char* op, py::array& out, const TensorRef& data) {
  require_c_contiguous(op, out, "out");
  if (!out.writeable()) throw ValueError(std::string(op) + ": out is read-only");
  if (shape_of(out) != data.shape)
    throw ValueError(std::string(op) + ": out shape " + detail::format_shape(shape_of(out)) +
                     " does not match data shape " + detail::format_shape(data.shape));
  if (size_t(out.itemsize()) != data.itemsize)
    throw TypeError(std::string(op) + ": out has " + std::to_string(out.itemsize()) +
                    "-byte items, data " + std::to_string(data.itemsize) + "-byte items");
  return out.mutable_data();
}

// The checked views an indexed scatter binding hands to the core.
struct ScatterArgs {
  TensorRef data, updates;
  IndexRef indices;
  void* out;
};

inline ScatterArgs scatter_args(const char* op, const py::array& data, const py::array& indices,
                                const py::array& updates, py::array& out,
                                const std::string& dtype) {
  ScatterArgs a{tensor_of(op, data, dtype, "data"), tensor_of(op, updates, dtype, "updates"),
                indices_of(op, indices), nullptr};
  a.out = output_of(op, out, a.data);
  return a;
}

// The type-erased ops, each compiled in its own binding's translation unit only
// (a kernel instantiated once per build), which the single-call bindings and
// run_batch both call.
void scatter_update_kernel(const TensorRef& data, const IndexRef& indices, const TensorRef& updates,
                           int64_t axis, void* out, const OpOptions& options);
void scatter_elements_update_kernel(const TensorRef& data, const IndexRef& indices,
                                    const TensorRef& updates, int64_t axis, void* out,
                                    Reduction reduction, bool use_init_val,
                                    const OpOptions& options);
void scatter_nd_update_kernel(const TensorRef& data, const IndexRef& indices,
                              const TensorRef& updates, void* out, Reduction reduction,
                              const OpOptions& options);
void slice_scatter_kernel(const TensorRef& data, const TensorRef& updates,
                          const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                          const std::vector<int64_t>& steps, const std::vector<int64_t>& axes,
                          void* out, const OpOptions& options);

void bind_scatter_update(py::module_& m);
void bind_scatter_elements_update(py::module_& m);
void bind_scatter_nd_update(py::module_& m);
void bind_slice_scatter(py::module_& m);
void bind_batch(py::module_& m);
void bind_exact(py::module_& m);
void bind_output_pool(py::module_& m);

}  // namespace scatterkit::bindings
