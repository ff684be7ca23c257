// scatterkit._core: the compiled kernels. The public API is the Python
// package; these entry points expect arguments it has already coerced.
#include <pybind11/pybind11.h>

#include "arrays.hpp"
#include "scatterkit/version.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "scatterkit compiled kernels (use the scatterkit package API)";

  // scatterkit::TypeError derives from std::invalid_argument, which pybind11
  // would report as ValueError; translators registered later are tried first.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const scatterkit::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });

  scatterkit::bindings::bind_scatter_update(m);
  scatterkit::bindings::bind_scatter_elements_update(m);
  scatterkit::bindings::bind_scatter_nd_update(m);
  scatterkit::bindings::bind_slice_scatter(m);
  scatterkit::bindings::bind_batch(m);
  scatterkit::bindings::bind_exact(m);
  scatterkit::bindings::bind_output_pool(m);

  m.def("set_num_threads", &scatterkit::set_num_threads, py::arg("n"),
        "Set the number of threads the kernels use (n >= 1).");
  m.def("get_num_threads", &scatterkit::get_num_threads, "Number of threads the kernels use.");
  m.attr("__version__") = SCATTERKIT_VERSION;
#ifdef _OPENMP
  m.attr("openmp") = true;
#else
  m.attr("openmp") = false;
#endif
}
