#include "scatterkit/ops/scatter_nd_update.hpp"

#include "arrays.hpp"

namespace scatterkit::bindings {

void scatter_nd_update_kernel(const TensorRef& data, const IndexRef& indices,
                              const TensorRef& updates, void* out, Reduction reduction,
                              const OpOptions& options) {
  scatter_nd_update(data, indices, updates, out, reduction, options);
}

void bind_scatter_nd_update(py::module_& m) {
  m.def(
      "scatter_nd_update",
      [](const py::array& data, const py::array& indices, const py::array& updates, py::array& out,
         const std::string& dtype, const std::string& reduction, bool allow_negative, bool exact,
         const std::string& name) {
        const char* op = name.c_str();
        const ScatterArgs a = scatter_args(op, data, indices, updates, out, dtype);
        const Reduction r = reduction_from_name(reduction);
        py::gil_scoped_release release;
        scatter_nd_update_kernel(a.data, a.indices, a.updates, a.out, r,
                                 OpOptions{allow_negative, op, false, exact});
      },
      py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("out"), py::arg("dtype"),
      py::arg("reduction"), py::arg("allow_negative"), py::arg("exact"), py::arg("name"),
      "ScatterNDUpdate kernel on prepared C-contiguous arrays.");
}

}  // namespace scatterkit::bindings
