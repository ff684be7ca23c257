// Helpers shared by the scatterkit C++ tests: views over containers, element
// construction and printing for every element type, bitwise comparison,
// exception checks, and plain-loop reference implementations of the ops
// (the semantics of docs/design.md section 2.1: updates applied one by one in C order
// of the indices).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "scatterkit/scatterkit.hpp"

namespace sktest {

using scatterkit::Shape;

// Read-only and writable views over any contiguous container with data().
// (std::vector<bool> has none: bool tests keep their values in std::array.)
template <class C>
auto cview(const C& c, Shape shape) {
  using T = std::remove_const_t<std::remove_pointer_t<decltype(c.data())>>;
  return scatterkit::TensorView<const T>{c.data(), std::move(shape)};
}

template <class C>
auto mview(C& c, Shape shape) {
  using T = std::remove_pointer_t<decltype(c.data())>;
  return scatterkit::TensorView<T>{c.data(), std::move(shape)};
}

template <class T>
constexpr bool is_half_v =
    std::is_same_v<T, scatterkit::float16> || std::is_same_v<T, scatterkit::bfloat16>;

// An element of type T holding the value x (halves round to nearest even).
template <class T>
T make(double x) {
  if constexpr (std::is_same_v<T, scatterkit::float16>)
    return scatterkit::to_float16(float(x));
  else if constexpr (std::is_same_v<T, scatterkit::bfloat16>)
    return scatterkit::to_bfloat16(float(x));
  else
    return static_cast<T>(x);
}

template <class T>
std::vector<T> make_vector(std::initializer_list<double> xs) {
  std::vector<T> v;
  v.reserve(xs.size());
  for (double x : xs) v.push_back(make<T>(x));
  return v;
}

// 0, 1, 2, ... as type T (wrapping for narrow integers).
template <class T>
std::vector<T> iota_vector(int64_t n, int64_t first = 0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>)
      v[size_t(i)] = T(first + i);
    else
      v[size_t(i)] = make<T>(double(first + i));
  }
  return v;
}

// Human-readable element, for failure messages.
template <class T>
std::string describe(const T& v) {
  std::ostringstream s;
  if constexpr (is_half_v<T>) {
    s << std::setprecision(9) << scatterkit::to_float(v) << " [0x" << std::hex << v.bits << ']';
  } else if constexpr (std::is_same_v<T, bool>) {
    s << (v ? "true" : "false");
  } else if constexpr (std::is_integral_v<T>) {
    s << +v;
  } else if constexpr (std::is_floating_point_v<T>) {
    s << std::setprecision(17) << v;
  } else {
    const auto* b = reinterpret_cast<const unsigned char*>(&v);
    s << "bytes";
    for (size_t i = 0; i < sizeof(T); ++i) s << ' ' << std::hex << int(b[i]);
  }
  return s.str();
}

// Element-by-element bitwise equality (NaN == NaN of the same bits, -0 != +0).
template <class C1, class C2>
::testing::AssertionResult same_bits(const C1& actual, const C2& expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected size " << expected.size();
  using T = std::remove_const_t<std::remove_reference_t<decltype(actual[0])>>;
  static_assert(
      std::is_same_v<T, std::remove_const_t<std::remove_reference_t<decltype(expected[0])>>>,
      "compare containers of one element type");
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(T)) != 0 && mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << actual.size() << " elements differ; first at flat index "
         << first << ": got " << describe(actual[first]) << ", expected "
         << describe(expected[first]);
}

inline std::string error_kind(const std::exception& e) {
  if (dynamic_cast<const scatterkit::IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const scatterkit::TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const scatterkit::ValueError*>(&e)) return "ValueError";
  return "a foreign std::exception";
}

// f() throws exactly E (not a sibling scatterkit error) whose message contains
// `fragment`.
template <class E, class F>
::testing::AssertionResult throws_with(F&& f, const std::string& fragment) {
  try {
    f();
  } catch (const E& e) {
    if (typeid(e) != typeid(E))
      return ::testing::AssertionFailure()
             << "threw a subclass: " << error_kind(e) << ": " << e.what();
    if (std::string(e.what()).find(fragment) == std::string::npos)
      return ::testing::AssertionFailure()
             << "message \"" << e.what() << "\" lacks \"" << fragment << '"';
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw " << error_kind(e) << ": " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw a non-std exception";
  }
  return ::testing::AssertionFailure() << "threw nothing";
}

// ---- plain-loop references ---------------------------------------------------

inline int64_t count_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline Shape strides_of(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Multi-index of the flat C-order position p in shape s.
inline Shape position_of(int64_t p, const Shape& s) {
  Shape pos(s.size(), 0);
  for (size_t d = s.size(); d-- > 0;) {
    pos[d] = p % s[d];
    p /= s[d];
  }
  return pos;
}

template <class I>
int64_t wrapped(I v, int64_t size) {
  const int64_t i = int64_t(v);
  return i < 0 ? i + size : i;
}

// out[..., idx[j...], ...] = upd[..., j..., ...], C order, last write wins.
template <class T, class I>
void ref_scatter_update(std::vector<T>& out, const Shape& dshape, const std::vector<I>& idx,
                        const std::vector<T>& upd, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dshape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < dshape.size(); ++d) inner *= dshape[d];
  const int64_t targets = dshape[size_t(axis)], n = int64_t(idx.size());
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t b = 0; b < inner; ++b)
        out[size_t((a * targets + wrapped(idx[size_t(j)], targets)) * inner + b)] =
            upd[size_t((a * n + j) * inner + b)];
}

// For each position p of indices in C order: fold(out[target(p)], upd[p]).
// U may differ from T (e.g. a float accumulator for float16 updates).
template <class T, class U, class I, class Fold>
void ref_scatter_elements(std::vector<T>& out, const Shape& dshape, const std::vector<I>& idx,
                          const Shape& ishape, const std::vector<U>& upd, int64_t axis, Fold fold) {
  const Shape st = strides_of(dshape);
  for (int64_t p = 0; p < count_of(ishape); ++p) {
    Shape pos = position_of(p, ishape);
    pos[size_t(axis)] = wrapped(idx[size_t(p)], dshape[size_t(axis)]);
    int64_t off = 0;
    for (size_t d = 0; d < pos.size(); ++d) off += pos[d] * st[d];
    fold(out[size_t(off)], upd[size_t(p)]);
  }
}

// For each index tuple in C order, each element e of its slab: fold(out, upd).
template <class T, class U, class I, class Fold>
void ref_scatter_nd(std::vector<T>& out, const Shape& dshape, const std::vector<I>& idx, int64_t k,
                    const std::vector<U>& upd, Fold fold) {
  int64_t slab = 1;
  for (size_t d = size_t(k); d < dshape.size(); ++d) slab *= dshape[d];
  const int64_t tuples = k == 0 ? int64_t(upd.size()) / slab : int64_t(idx.size()) / k;
  for (int64_t p = 0; p < tuples; ++p) {
    int64_t flat = 0;
    for (int64_t j = 0; j < k; ++j)
      flat = flat * dshape[size_t(j)] + wrapped(idx[size_t(p * k + j)], dshape[size_t(j)]);
    for (int64_t e = 0; e < slab; ++e)
      fold(out[size_t(flat * slab + e)], upd[size_t(p * slab + e)]);
  }
}

// Rows of tensors stored back to back, as Arrow list arrays hold them.
template <class T>
struct Ragged {
  std::vector<T> values;
  std::vector<int64_t> offsets = {0}, shapes, shape_offsets = {0};

  Ragged& add(const std::vector<T>& row, const Shape& shape) {
    values.insert(values.end(), row.begin(), row.end());
    offsets.push_back(int64_t(values.size()));
    shapes.insert(shapes.end(), shape.begin(), shape.end());
    shape_offsets.push_back(int64_t(shapes.size()));
    return *this;
  }
  int64_t rows() const { return int64_t(offsets.size()) - 1; }
  scatterkit::RaggedRef ref() const {
    return scatterkit::RaggedRef{
        values.data(), int64_t(values.size()), sizeof(T),           offsets.data(),
        shapes.data(), int64_t(shapes.size()), shape_offsets.data()};
  }
  std::vector<T> row(const std::vector<T>& flat, int64_t r) const {
    return {flat.begin() + offsets[size_t(r)], flat.begin() + offsets[size_t(r) + 1]};
  }
};

}  // namespace sktest
