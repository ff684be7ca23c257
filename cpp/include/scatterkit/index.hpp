// Index validation and normalisation, shared by the scatter ops.
//
// Validation is a pass of its own before anything is written ("validate, then
// move bytes"): a branch-free scan says whether any index is bad, and only
// then a second scan finds the first offender in C order for the message.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/shape.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// uint64 indices are validated as unsigned, then read as int64 by the
// kernels: every valid value is below 2^63, so the bits are the same.
template <class I>
using kernel_index_t = std::conditional_t<std::is_same_v<I, uint64_t>, int64_t, I>;

template <class I>
inline bool index_in_range(I v, int64_t size, bool allow_negative) {
  if constexpr (std::is_unsigned_v<I>) {
    return uint64_t(v) < uint64_t(size);
  } else {
    const int64_t lo = allow_negative ? -size : 0;
    return int64_t(v) >= lo && int64_t(v) < size;
  }
}

// Index of the valid value v along an axis of the given size, in [0, size).
template <class I>
inline int64_t wrap_index(I v, int64_t size) {
  const int64_t i = int64_t(v);
  return i < 0 ? i + size : i;
}

// Axis extents up to which out_of_range_bits holds (any real array's are).
constexpr int64_t kMaxCheckedExtent = int64_t(1) << 62;

// Bit 63 is set iff v lies outside [lo, hi), for -2^62 <= lo <= 0 <= hi <=
// 2^62: in wrapping arithmetic v - lo is negative exactly when v < lo or v is
// so large that it wraps, and v - hi is non-negative exactly when v >= hi or
// v is so small that it wraps. Unlike a pair of compares, this vectorizes
// (64-bit subtract, not and or), which makes the scan 4x faster.
inline uint64_t out_of_range_bits(uint64_t v, uint64_t lo, uint64_t hi) {
  return (v - lo) | ~(v - hi);
}

// Whether any of indices[p * stride + offset], p < count, is out of range: a
// branch-free scan, split between threads (each block sets its own flag).
template <class I>
bool any_index_out_of_range(const I* indices, int64_t count, int64_t stride, int64_t offset,
                            int64_t size, bool allow_negative) {
  constexpr int64_t kBlock = int64_t(1) << 16;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  const bool negatives = std::is_signed_v<I> && allow_negative;
  const uint64_t lo = negatives ? uint64_t(-size) : 0, hi = uint64_t(size);
  const I* column = indices + offset;
  std::vector<unsigned char> bad(size_t(blocks), 0);
  parallel_for(blocks, count * int64_t(sizeof(I)) * stride, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * kBlock, end = std::min(count, begin + kBlock);
      if (size > kMaxCheckedExtent) {
        bool any = false;
        for (int64_t p = begin; p < end; ++p)
          any |= !index_in_range(column[p * stride], size, allow_negative);
        bad[size_t(b)] = any;
        continue;
      }
      // uint64 indices pass through int64: those >= 2^63 read as negative
      auto bits = [&](I v) { return out_of_range_bits(uint64_t(int64_t(v)), lo, hi); };
      uint64_t acc = 0;
      if (stride == 1)  // the common case, spelled out so that it vectorizes
        for (int64_t p = begin; p < end; ++p) acc |= bits(column[p]);
      else
        for (int64_t p = begin; p < end; ++p) acc |= bits(column[p * stride]);
      bad[size_t(b)] = (acc >> 63) != 0;
    }
  });
  return std::find(bad.begin(), bad.end(), 1) != bad.end();
}

// Checks indices[p * stride + offset] for p in [0, count) against `size`, the
// extent of data axis `axis`. `indices_shape` is used for the message only.
template <class I>
void check_indices(const char* op, const I* indices, int64_t count, int64_t stride, int64_t offset,
                   int64_t size, int64_t axis, const Shape& indices_shape, bool allow_negative) {
  if (!any_index_out_of_range(indices, count, stride, offset, size, allow_negative)) return;
  for (int64_t p = 0; p < count; ++p) {
    const I v = indices[p * stride + offset];
    if (!index_in_range(v, size, allow_negative))
      throw_index_error(op, v, axis, size, unravel(p * stride + offset, indices_shape),
                        allow_negative);
  }
}

// The slab an index tuple addresses (ScatterNDUpdate, exact states): tuple p's k
// coordinates, validated and wrapped once, as a C-order offset over shape[0, k). The one
// place an ND index tuple becomes a flat offset.
template <class I>
SCATTERKIT_ALWAYS_INLINE int64_t flat_tuple(const I* idx, int64_t p, size_t k, const Shape& shape) {
  int64_t flat = 0;
  for (size_t j = 0; j < k; ++j)
    flat = flat * shape[j] + wrap_index(idx[p * int64_t(k) + int64_t(j)], shape[j]);
  return flat;
}

// Throws IndexError for the first coordinate of the k-tuples idx[0, tuples * k), in C order,
// that is out of range for its axis of `shape` (`indices_shape` for the message); returns if
// there is none. Inlined, so that a caller's constant allow_negative folds into the loop.
template <class I>
SCATTERKIT_ALWAYS_INLINE void check_index_tuples(const char* op, const I* idx, int64_t tuples,
                                                 int64_t k, const Shape& shape,
                                                 const Shape& indices_shape, bool allow_negative) {
  for (int64_t p = 0; p < tuples * k; ++p) {
    const int64_t axis = p % k;
    if (!index_in_range(idx[p], shape[size_t(axis)], allow_negative))
      throw_index_error(op, idx[p], axis, shape[size_t(axis)], unravel(p, indices_shape),
                        allow_negative);
  }
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
