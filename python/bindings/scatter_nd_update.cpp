#include "arrays.hpp"

namespace scatterkit::bindings {

void bind_scatter_nd_update(py::module_& m) {
  m.def(
      "scatter_nd_update",
      [](const py::array& data, const py::array& indices, const py::array& updates, py::array& out,
         const std::string& dtype, const std::string& reduction, bool allow_negative,
         const std::string& name) {
        const char* op = name.c_str();
        const TensorRef d = tensor_of(op, data, dtype, "data");
        const TensorRef u = tensor_of(op, updates, dtype, "updates");
        const IndexRef i = indices_of(op, indices);
        const Reduction r = reduction_from_name(reduction);
        void* o = output_of(op, out, d);
        py::gil_scoped_release release;
        scatter_nd_update(d, i, u, o, r, OpOptions{allow_negative, op});
      },
      py::arg("data"), py::arg("indices"), py::arg("updates"), py::arg("out"), py::arg("dtype"),
      py::arg("reduction"), py::arg("allow_negative"), py::arg("name"),
      "ScatterNDUpdate kernel on prepared C-contiguous arrays.");
}

}  // namespace scatterkit::bindings
