#include "scatterkit/ops/slice_scatter.hpp"

#include <pybind11/stl.h>

#include "arrays.hpp"

namespace scatterkit::bindings {

void slice_scatter_kernel(const TensorRef& data, const TensorRef& updates,
                          const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                          const std::vector<int64_t>& steps, const std::vector<int64_t>& axes,
                          void* out, const OpOptions& options) {
  slice_scatter(data, updates, starts, stops, steps, axes, out, options);
}

void bind_slice_scatter(py::module_& m) {
  m.def(
      "slice_scatter",
      [](const py::array& data, const py::array& updates, const std::vector<int64_t>& start,
         const std::vector<int64_t>& stop, const std::vector<int64_t>& step,
         const std::vector<int64_t>& axis, py::array& out, const std::string& dtype,
         const std::string& name) {
        const char* op = name.c_str();
        const TensorRef d = tensor_of(op, data, dtype, "data");
        const TensorRef u = tensor_of(op, updates, dtype, "updates");
        void* o = output_of(op, out, d);
        py::gil_scoped_release release;
        slice_scatter_kernel(d, u, start, stop, step, axis, o, OpOptions{true, op});
      },
      py::arg("data"), py::arg("updates"), py::arg("start"), py::arg("stop"), py::arg("step"),
      py::arg("axis"), py::arg("out"), py::arg("dtype"), py::arg("name"),
      "SliceScatter kernel on prepared C-contiguous arrays.");
}

}  // namespace scatterkit::bindings
