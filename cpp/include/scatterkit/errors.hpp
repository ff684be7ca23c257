// Exception types and message builders.
//
// The types derive from the standard ones that pybind11 already translates
// (std::invalid_argument -> ValueError, std::out_of_range -> IndexError), so
// C++ callers can catch the standard bases and Python sees the right class.
// TypeError has no standard counterpart; the bindings register it.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace scatterkit {

// A shape, an attribute or argument value is wrong (Python: ValueError).
class ValueError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An index is outside its dimension (Python: IndexError).
class IndexError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

// An element or index type is not supported by the operation (Python: TypeError).
class TypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

inline std::string format_shape(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << '(';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s << ", ";
    s << shape[i];
  }
  if (shape.size() == 1) s << ',';
  s << ')';
  return s.str();
}

// Message builders live out of line and never return, so that the hot
// validation loops hold only a compare and a call.
[[noreturn]] inline void throw_value_error(const char* op, const std::string& what) {
  throw ValueError(std::string(op) + ": " + what);
}

[[noreturn]] inline void throw_type_error(const char* op, const std::string& what) {
  throw TypeError(std::string(op) + ": " + what);
}

// `value` may be signed or unsigned; it is printed as given (never wrapped).
template <class V>
[[noreturn]] void throw_index_error(const char* op, V value, int64_t axis, int64_t size,
                                    const std::vector<int64_t>& position, bool allow_negative) {
  std::ostringstream s;
  s << op << ": index " << +value << " is out of bounds for axis " << axis << " with size " << size
    << " (at indices[";
  for (size_t i = 0; i < position.size(); ++i) s << (i ? ", " : "") << position[i];
  s << "]; valid range ";
  if (size == 0)
    s << "is empty";
  else
    s << '[' << (allow_negative ? -size : 0) << ", " << size - 1 << ']';
  if (!allow_negative && value < V(0) && static_cast<int64_t>(value) >= -size)
    s << "; negative indices are not allowed in this operation version";
  s << ')';
  throw IndexError(s.str());
}

// Unravels a flat C-order offset into a multi-index of `shape`.
inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> pos(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      pos[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return pos;
}

}  // namespace detail
}  // namespace scatterkit
