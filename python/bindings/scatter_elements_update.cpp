#include "scatterkit/ops/scatter_elements_update.hpp"

#include "arrays.hpp"

namespace scatterkit::bindings {

void scatter_elements_update_kernel(const TensorRef& data, const IndexRef& indices,
                                    const TensorRef& updates, int64_t axis, void* out,
                                    Reduction reduction, bool use_init_val,
                                    const OpOptions& options) {
  scatter_elements_update(data, indices, updates, axis, out, reduction, use_init_val, options);
}

void bind_scatter_elements_update(py::module_& m) {
  m.def(
      "scatter_elements_update",
      [](const py::array& data, const py::array& indices, const py::array& updates, int64_t axis,
         py::array& out, const std::string& dtype, const std::string& reduction, bool use_init_val,
         bool allow_negative, bool discard_out_on_error, bool exact, const std::string& name) {
        const char* op = name.c_str();
        const ScatterArgs a = scatter_args(op, data, indices, updates, out, dtype);
        const Reduction r = reduction_from_name(reduction);
        py::gil_scoped_release release;
        scatter_elements_update_kernel(a.data, a.indices, a.updates, axis, a.out, r, use_init_val,
                                       OpOptions{allow_negative, op, discard_out_on_error, exact});
      },
      py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("axis"), py::arg("out"),
      py::arg("dtype"), py::arg("reduction"), py::arg("use_init_val"), py::arg("allow_negative"),
      py::arg("discard_out_on_error"), py::arg("exact"), py::arg("name"),
      "ScatterElementsUpdate kernel on prepared C-contiguous arrays.");
}

}  // namespace scatterkit::bindings
