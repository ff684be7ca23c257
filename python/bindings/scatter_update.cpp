#include "scatterkit/ops/scatter_update.hpp"

#include "arrays.hpp"

namespace scatterkit::bindings {

void scatter_update_kernel(const TensorRef& data, const IndexRef& indices, const TensorRef& updates,
                           int64_t axis, void* out, const OpOptions& options) {
  scatter_update(data, indices, updates, axis, out, options);
}

void bind_scatter_update(py::module_& m) {
  m.def(
      "scatter_update",
      [](const py::array& data, const py::array& indices, const py::array& updates, int64_t axis,
         py::array& out, const std::string& dtype, bool allow_negative, const std::string& name) {
        const char* op = name.c_str();
        const ScatterArgs a = scatter_args(op, data, indices, updates, out, dtype);
        py::gil_scoped_release release;
        scatter_update_kernel(a.data, a.indices, a.updates, axis, a.out,
                              OpOptions{allow_negative, op});
      },
      py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("axis"), py::arg("out"),
      py::arg("dtype"), py::arg("allow_negative"), py::arg("name"),
      "ScatterUpdate kernel on prepared C-contiguous arrays; writes `out`.");
}

}  // namespace scatterkit::bindings
