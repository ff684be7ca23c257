// Exact-sum states: fold, merge, finish (scatterkit.exact_* in Python).
#include "arrays.hpp"
#include "scatterkit/exact/state.hpp"

namespace scatterkit::bindings {

namespace {

// The uint64 words of a state array of shape (*tensor, words), checked.
// (Read-only states, from Arrow say, are read through a const pointer.)
uint64_t* state_words(const char* op, py::array& a, DType dtype, bool writeable) {
  require_c_contiguous(op, a, "state");
  const int words = exact_state_words(dtype);
  if (a.dtype().kind() != 'u' || a.itemsize() != 8 || a.ndim() < 1 ||
      a.shape(a.ndim() - 1) != words)
    throw ValueError(std::string(op) + ": a state for " + dtype_name(dtype) +
                     " is a uint64 array whose last axis has " + std::to_string(words) + " words");
  if (writeable && !a.writeable()) throw ValueError(std::string(op) + ": state is read-only");
  return static_cast<uint64_t*>(writeable ? a.mutable_data() : const_cast<void*>(a.data()));
}

int64_t elements_of(const py::array& a) { return a.size() / a.shape(a.ndim() - 1); }

}  // namespace

void bind_exact(py::module_& m) {
  m.def(
      "exact_state_words",
      [](const std::string& dtype) { return exact_state_words(dtype_from_name(dtype)); },
      py::arg("dtype"), "uint64 words per element of an exact-sum state.");
  m.def(
      "exact_state_init",
      [](py::array& state, const py::array& values, const std::string& dtype) {
        const DType t = dtype_from_name(dtype);
        uint64_t* s = state_words("exact_state", state, t, true);
        const TensorRef v = tensor_of("exact_state", values, dtype, "data");
        if (numel(v.shape) != elements_of(state))
          throw ValueError("exact_state: data has " + std::to_string(numel(v.shape)) +
                           " elements, the state " + std::to_string(elements_of(state)));
        py::gil_scoped_release release;
        exact_state_init(t, v.data, numel(v.shape), s);
      },
      py::arg("state"), py::arg("values"), py::arg("dtype"));
  m.def(
      "exact_state_fold",
      [](py::array& state, const py::array& indices, const py::array& updates,
         const std::string& dtype, bool subtract) {
        const char* op = "exact_fold";
        const DType t = dtype_from_name(dtype);
        uint64_t* s = state_words(op, state, t, true);
        const Shape shape(state.shape(), state.shape() + state.ndim() - 1);
        const IndexRef i = indices_of(op, indices);
        const TensorRef u = tensor_of(op, updates, dtype, "updates");
        py::gil_scoped_release release;
        exact_state_fold(t, s, shape, i, u, subtract, op);
      },
      py::arg("state"), py::arg("indices"), py::arg("updates"), py::arg("dtype"),
      py::arg("subtract"));
  m.def(
      "exact_state_merge",
      [](py::array& into, py::array& other, const std::string& dtype) {
        const char* op = "exact_merge";
        const DType t = dtype_from_name(dtype);
        uint64_t* a = state_words(op, into, t, true);
        const uint64_t* b = state_words(op, other, t, false);
        if (shape_of(into) != shape_of(other))
          throw ValueError(std::string(op) + ": states of shapes " +
                           detail::format_shape(shape_of(into)) + " and " +
                           detail::format_shape(shape_of(other)) + " do not merge");
        py::gil_scoped_release release;
        exact_state_merge(t, a, b, elements_of(into));
      },
      py::arg("into"), py::arg("other"), py::arg("dtype"));
  m.def(
      "exact_state_finish",
      [](py::array& state, py::array& out, const std::string& dtype, bool mean) {
        const char* op = "exact_finish";
        const DType t = dtype_from_name(dtype);
        const uint64_t* s = state_words(op, state, t, false);
        require_c_contiguous(op, out, "out");
        if (!out.writeable() || out.size() != elements_of(state) ||
            size_t(out.itemsize()) != dtype_size(t))
          throw ValueError(std::string(op) + ": out must be a writeable array of the state's " +
                           "elements");
        void* o = out.mutable_data();
        py::gil_scoped_release release;
        exact_state_finish(t, s, elements_of(state), mean, o);
      },
      py::arg("state"), py::arg("out"), py::arg("dtype"), py::arg("mean"));
}

}  // namespace scatterkit::bindings
