// Non-owning views of C-contiguous tensors, as the type-erased entry points
// take them. Callers keep the buffers alive for the call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "scatterkit/dtype.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/shape.hpp"

namespace scatterkit {

// A C-contiguous tensor of T: pointer + shape, as the typed entry points (typed.hpp)
// take them. T may be const for inputs.
template <class T>
struct TensorView {
  T* data = nullptr;
  Shape shape;

  // A view of mutable elements is also a view of const ones.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, const T> &&
                                              !std::is_const_v<T> && std::is_const_v<U>>>
  operator TensorView<U>() const {
    return {data, shape};
  }
};

// A read-only tensor: pointer, shape, element tag and byte width.
struct TensorRef {
  const void* data = nullptr;
  Shape shape;
  DType dtype = DType::kOpaque;
  size_t itemsize = 0;
};

// An index tensor. Narrower integer types are widened by the caller.
struct IndexRef {
  const void* data = nullptr;
  Shape shape;
  IndexType type = IndexType::kInt64;
};

// Per-call settings.
struct OpOptions {
  // false gives the v3 semantics: a negative index is an error.
  bool allow_negative_indices = true;
  // Prefix of error messages; the op's own name when null.
  const char* name = nullptr;
  // The caller throws `out` away if the op fails (a buffer it has just
  // allocated), so the op may write to it before every index is checked: a
  // histogram then folds straight into it instead of into a scratch copy.
  bool discard_out_on_error = false;
  // Float sums and means exact (the real sum rounded once), min/max free of
  // order (-0 < +0, one NaN): the same bits for every order of the updates.
  // Other reductions of float data are an error; other types are unchanged.
  bool exact = false;
};

namespace detail {

inline const char* op_name(const OpOptions& o, const char* fallback) {
  return o.name ? o.name : fallback;
}

inline void check_element(const char* op, const char* name, const TensorRef& t) {
  if (int(t.dtype) < 0 || int(t.dtype) > int(DType::kOpaque))
    throw_type_error(
        op, std::string(name) + " has an unknown dtype tag " + std::to_string(int(t.dtype)));
  if (t.itemsize > size_t(1) << 32)  // larger than any element type NumPy can describe
    throw_type_error(
        op, std::string(name) + " item size " + std::to_string(t.itemsize) + " is too large");
  const size_t want = dtype_size(t.dtype);
  if (t.itemsize == 0 || (want != 0 && t.itemsize != want))
    throw_type_error(op, std::string(name) + " item size " + std::to_string(t.itemsize) +
                             " does not fit dtype " + dtype_name(t.dtype));
}

inline void check_same_element(const char* op, const TensorRef& data, const TensorRef& updates) {
  check_element(op, "data", data);
  check_element(op, "updates", updates);
  if (data.dtype != updates.dtype || data.itemsize != updates.itemsize)
    throw_type_error(op, std::string("updates dtype ") + dtype_name(updates.dtype) +
                             " does not match data dtype " + dtype_name(data.dtype));
}

inline void check_tensor(const char* op, const char* name, const void* ptr, const Shape& shape,
                         int64_t itemsize) {
  check_shape(op, name, shape, itemsize);
  if (ptr == nullptr && numel(shape) != 0)
    throw_value_error(op, std::string(name) + " is a null pointer");
}

// The checks every indexed scatter starts with: buffers, element types.
inline void check_scatter_inputs(const char* op, const TensorRef& data, const IndexRef& indices,
                                 const TensorRef& updates) {
  check_same_element(op, data, updates);
  if (int(indices.type) < 0 || int(indices.type) > int(IndexType::kUInt64))
    throw_type_error(op, "unknown index type " + std::to_string(int(indices.type)));
  check_tensor(op, "data", data.data, data.shape, int64_t(data.itemsize));
  check_tensor(op, "indices", indices.data, indices.shape, index_size(indices.type));
  check_tensor(op, "updates", updates.data, updates.shape, int64_t(updates.itemsize));
}

// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
inline bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes <= 0 || b_bytes <= 0) return false;
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + uintptr_t(b_bytes) && y < x + uintptr_t(a_bytes);
}

// The ops read their inputs while they write `out`: an input sharing memory with out
// would be read after being overwritten, so it is read from a copy that this holds for
// the call (NumPy's rule). data *being* out, the in-place update, is read as it is.
class ApartFromOut {
 public:
  ApartFromOut(const void* out, int64_t out_bytes) : out_(out), out_bytes_(out_bytes) {}
  ApartFromOut(const TensorRef& data, const void* out)
      : ApartFromOut(out, numel(data.shape) * int64_t(data.itemsize)) {}

  TensorRef data(const TensorRef& d) { return d.data == out_ ? d : input(d); }
  TensorRef input(const TensorRef& t) {
    TensorRef apart = t;
    apart.data = read_from(t.data, numel(t.shape) * int64_t(t.itemsize));
    return apart;
  }
  IndexRef indices(const IndexRef& i) {
    IndexRef apart = i;
    apart.data = read_from(i.data, numel(i.shape) * index_size(i.type));
    return apart;
  }

  // p itself when [p, p + bytes) does not share memory with out, else a copy (aligned as
  // operator new aligns, enough for every element type).
  const void* read_from(const void* p, int64_t bytes) {
    if (!overlaps(p, bytes, out_, out_bytes_)) return p;
    const auto* begin = static_cast<const unsigned char*>(p);
    copies_.emplace_back(begin, begin + bytes);  // a vector's buffer survives moves
    return copies_.back().data();
  }
  template <class T>
  const T* read_from(const T* p, int64_t count) {
    return static_cast<const T*>(
        read_from(static_cast<const void*>(p), count * int64_t(sizeof(T))));
  }

 private:
  const void* out_;
  int64_t out_bytes_;
  std::vector<std::vector<unsigned char>> copies_;
};

// The reduction is one the op version has (`allowed`, listed in the message)
// and one the element type supports.
inline void check_reduction(const char* op, Reduction reduction, DType dtype,
                            std::initializer_list<Reduction> allowed) {
  bool known = false;
  std::string names;
  for (Reduction r : allowed) {
    known |= r == reduction;
    names += std::string(names.empty() ? "" : ", ") + reduction_name(r);
  }
  if (!known)
    throw_value_error(op, std::string("reduction '") + reduction_name(reduction) +
                              "' is not supported (expected one of " + names + ")");
  if (reduction != Reduction::kNone && dtype == DType::kOpaque)
    throw_type_error(op, std::string("reduction '") + reduction_name(reduction) +
                             "' needs an arithmetic element type (bool, integer or float)");
  if (reduction == Reduction::kMean && dtype == DType::kBool)
    throw_type_error(op, "reduction 'mean' is not supported for bool data");
}

// The reductions exact=True is defined for on float data: scatter_elements_update's and
// scatter_nd_update's (the other operations have none to make exact).
inline constexpr std::array<Reduction, 4> kElementsExactReductions{
    Reduction::kSum, Reduction::kMean, Reduction::kMin, Reduction::kMax};
inline constexpr std::array<Reduction, 4> kNDExactReductions{Reduction::kSum, Reduction::kSub,
                                                             Reduction::kMin, Reduction::kMax};

// Whether options.exact applies: float data, with one of the reductions that
// `supported` lists (else ValueError, naming the reduction). The kernels decide it per
// call, and the batch entry once for all its rows.
template <size_t N>
inline bool exact_applies(const char* op, const OpOptions& options, DType dtype,
                          Reduction reduction, const std::array<Reduction, N>& supported) {
  const bool is_float = dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
                        dtype == DType::kFloat32 || dtype == DType::kFloat64;
  if (!options.exact || !is_float) return false;
  std::string names;
  bool ok = false;
  for (Reduction r : supported) {
    ok |= r == reduction;
    names += std::string(names.empty() ? "" : ", ") + reduction_name(r);
  }
  if (!ok)
    throw_value_error(op, std::string("exact=True is not defined for reduction '") +
                              reduction_name(reduction) + "' on float data" +
                              (names.empty() ? "" : " (it is for " + names + ")"));
  return true;
}

}  // namespace detail
}  // namespace scatterkit
