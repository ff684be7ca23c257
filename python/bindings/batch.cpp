// run_batch: one op over many ragged rows (the Spark executors' entry point), through
// the kernels the op bindings compile.
#include <pybind11/stl.h>

#include <optional>

#include "arrays.hpp"
#include "scatterkit/batch_rows.hpp"

namespace scatterkit::bindings {

namespace {

const int64_t* int64_vector(const char* op, const py::array& a, const char* what, int64_t length) {
  require_c_contiguous(op, a, what);
  if (a.ndim() != 1 || a.dtype().kind() != 'i' || a.itemsize() != 8)
    throw TypeError(std::string(op) + ": " + what + " must be a 1-D int64 array");
  if (length >= 0 && a.shape(0) != length)
    throw ValueError(std::string(op) + ": " + what + " must have " + std::to_string(length) +
                     " entries, got " + std::to_string(a.shape(0)));
  return static_cast<const int64_t*>(a.data());
}

// (values, offsets, shapes, shape_offsets) -> RaggedRef, with the buffers checked.
RaggedRef ragged_of(const char* op, const py::tuple& t, const char* name, int64_t rows) {
  if (t.size() != 4)
    throw ValueError(std::string(op) + ": " + name +
                     " must be (values, offsets, shapes, shape_offsets)");
  const py::array values = t[0].cast<py::array>();
  const py::array shapes = t[2].cast<py::array>();
  require_c_contiguous(op, values, name);
  if (values.ndim() != 1) throw ValueError(std::string(op) + ": " + name + " values must be 1-D");
  RaggedRef r;
  r.values = values.data();
  r.size = values.shape(0);
  r.itemsize = size_t(values.itemsize());
  r.offsets = int64_vector(op, t[1].cast<py::array>(), "offsets", rows + 1);
  r.shapes = int64_vector(op, shapes, "shapes", -1);
  r.shapes_size = shapes.shape(0);
  r.shape_offsets = int64_vector(op, t[3].cast<py::array>(), "shape offsets", rows + 1);
  return r;
}

BatchKind kind_of(const std::string& kind) {
  if (kind == "scatter_update") return BatchKind::kScatterUpdate;
  if (kind == "scatter_elements_update") return BatchKind::kScatterElementsUpdate;
  if (kind == "scatter_nd_update") return BatchKind::kScatterNDUpdate;
  if (kind == "slice_scatter") return BatchKind::kSliceScatter;
  throw ValueError("run_batch: unknown operation '" + kind + "'");
}

// Whether exact applies is the kernels' decision (exact_applies), made here once for the
// call: a reduction it is not defined for is an error of the call, not one of every row.
void check_exact(const char* op, const BatchOp& b) {
  switch (b.kind) {
    case BatchKind::kScatterElementsUpdate:
      detail::exact_applies(op, b.options, b.dtype, b.reduction, detail::kElementsExactReductions);
      break;
    case BatchKind::kScatterNDUpdate:
      detail::exact_applies(op, b.options, b.dtype, b.reduction, detail::kNDExactReductions);
      break;
    default:  // no reduction to make exact
      detail::exact_applies(op, b.options, b.dtype, b.reduction, std::array<Reduction, 0>{});
  }
}

}  // namespace

void bind_batch(py::module_& m) {
  m.def(
      "run_batch",
      [](const std::string& kind, int64_t rows, const py::tuple& data,
         const std::optional<py::tuple>& indices, const py::tuple& updates, py::array& out,
         const std::string& dtype, int64_t axis, const std::string& reduction, bool use_init_val,
         bool allow_negative, const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
         const std::vector<int64_t>& steps, const std::vector<int64_t>& axes, bool exact,
         const std::string& name) {
        const char* op = name.c_str();
        BatchOp b;
        b.kind = kind_of(kind);
        b.dtype = dtype_from_name(dtype);
        b.axis = axis;
        b.reduction = reduction_from_name(reduction);
        b.use_init_val = use_init_val;
        b.options = OpOptions{allow_negative, op, false, exact};
        b.starts = starts;
        b.stops = stops;
        b.steps = steps;
        b.axes = axes;
        check_exact(op, b);
        if (rows < 0) throw ValueError(std::string(op) + ": rows must be >= 0");
        const RaggedRef d = ragged_of(op, data, "data", rows);
        const RaggedRef u = ragged_of(op, updates, "updates", rows);
        RaggedRef i;
        if (indices) {
          i = ragged_of(op, *indices, "indices", rows);
          b.index_type = index_type_of(op, (*indices)[0].cast<py::array>());
        }
        require_c_contiguous(op, out, "out");
        if (!out.writeable()) throw ValueError(std::string(op) + ": out is read-only");
        if (out.ndim() != 1 || out.shape(0) != d.size || size_t(out.itemsize()) != d.itemsize)
          throw ValueError(std::string(op) + ": out must be 1-D like the data values");
        void* o = out.mutable_data();
        py::gil_scoped_release release;
        const BatchKernels kernels{&scatter_update_kernel, &scatter_elements_update_kernel,
                                   &scatter_nd_update_kernel, &slice_scatter_kernel};
        return run_batch(kernels, b, rows, d, indices ? &i : nullptr, u, o);
      },
      py::arg("kind"), py::arg("rows"), py::arg("data"), py::arg("indices"), py::arg("updates"),
      py::arg("out"), py::arg("dtype"), py::arg("axis"), py::arg("reduction"),
      py::arg("use_init_val"), py::arg("allow_negative"), py::arg("starts"), py::arg("stops"),
      py::arg("steps"), py::arg("axes"), py::arg("exact"), py::arg("name"),
      "Applies one op to every ragged row; returns a message per row ('' when it succeeded).");
}

}  // namespace scatterkit::bindings
