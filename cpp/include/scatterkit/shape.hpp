// Shapes and the small arithmetic on them that every op needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scatterkit/errors.hpp"

namespace scatterkit {

using Shape = std::vector<int64_t>;

// Product of shape[begin:end]; an empty range is 1.
inline int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) p *= shape[i];
  return p;
}

inline int64_t numel(const Shape& shape) { return product(shape, 0, shape.size()); }

namespace detail {

// Whether the non-zero extents multiply to at most INT64_MAX / itemsize bytes:
// then every product of extents and every byte offset fits in int64, also for
// a zero-size tensor such as (2**62, 2**62, 0) (NumPy's rule).
inline bool extents_fit(const Shape& shape, int64_t itemsize) {
  const int64_t limit = INT64_MAX / (itemsize > 0 ? itemsize : 1);
  int64_t product = 1;
  for (int64_t d : shape) {
    if (d == 0) continue;
    if (product > limit / d) return false;
    product *= d;
  }
  return true;
}

// Checks every extent is non-negative and that they fit (see extents_fit):
// views from C++ callers and rows of a batch are not trusted.
inline void check_shape(const char* op, const char* name, const Shape& shape, int64_t itemsize) {
  for (int64_t d : shape)
    if (d < 0)
      throw_value_error(
          op, std::string(name) + " shape " + format_shape(shape) + " has a negative extent");
  if (!extents_fit(shape, itemsize))
    throw_value_error(op, std::string(name) + " shape " + format_shape(shape) +
                              " is too big: its extents multiply past 2**63 - 1 bytes");
}

// Maps axis from [-rank, rank-1] to [0, rank-1].
inline int64_t normalize_axis(const char* op, int64_t axis, int64_t rank) {
  if (rank == 0) throw_value_error(op, "data must have rank >= 1, got a 0-D tensor");
  if (axis < -rank || axis >= rank)
    throw_value_error(op, "axis " + std::to_string(axis) + " is out of bounds for rank " +
                              std::to_string(rank) + " (valid range [" + std::to_string(-rank) +
                              ", " + std::to_string(rank - 1) + "])");
  return axis < 0 ? axis + rank : axis;
}

inline void check_updates_shape(const char* op, const Shape& updates, const Shape& expected) {
  if (updates != expected)
    throw_value_error(op, "updates shape " + format_shape(updates) +
                              " does not match the expected shape " + format_shape(expected));
}

// Offset of every position of `shape`, in C order, given the stride of each
// of its dimensions: an odometer, no allocation per position (a layout can
// have millions of positions).
inline std::vector<int64_t> offsets_in_c_order(const Shape& shape, const Shape& strides) {
  std::vector<int64_t> offsets(size_t(numel(shape)));
  Shape pos(shape.size(), 0);
  int64_t off = 0;
  for (size_t k = 0; k < offsets.size(); ++k) {
    offsets[k] = off;
    for (size_t d = shape.size(); d-- > 0;) {  // advance the last dimension, carrying
      off += strides[d];
      if (++pos[d] < shape[d]) break;
      off -= pos[d] * strides[d];
      pos[d] = 0;
    }
  }
  return offsets;
}

}  // namespace detail
}  // namespace scatterkit
