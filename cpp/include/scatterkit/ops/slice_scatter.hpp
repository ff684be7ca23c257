// SliceScatter-15 (with several axes at once as an extension):
//   out[..., start + i * step, ...] = updates[..., i, ...]   for i in range(count)
// on each sliced axis. start/stop are clamped (OpenVINO Slice-8 rule): for
// step > 0 both to [0, dim]; for step < 0 start to [0, dim - 1] and stop to
// [-1, dim]; negative values first count from the end.
//
// Strategy: out of place, with output blocks (the contiguous run after the
// last sliced axis) of at least kMinFusedBlockBytes, one fused pass writes
// each block once, from updates or from data (fused_slice_scatter). In place,
// or with smaller blocks, data is copied first and the updates written over it
// row by row; a row whose last axis has step 1 is one memcpy. Slice positions
// are distinct, so blocks or rows split between threads never collide.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {

// One axis of a slice after clamping: positions first + i * step, i < count.
struct SliceAxis {
  int64_t first = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// Clamps start/stop for an axis of extent dim (no overflow for any int64 input).
inline SliceAxis clamp_slice(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  SliceAxis s;
  s.step = step;
  if (dim == 0) return s;
  if (start < 0) start += dim;  // cannot overflow: dim >= 0
  if (stop < 0) stop += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    stop = std::clamp<int64_t>(stop, 0, dim);
    if (stop > start) s.count = (stop - start - 1) / step + 1;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    stop = std::clamp<int64_t>(stop, -1, dim);
    // The magnitude is taken unsigned: -INT64_MIN does not fit int64.
    const uint64_t magnitude = uint64_t(0) - uint64_t(step);
    if (start > stop) s.count = int64_t(uint64_t(start - stop - 1) / magnitude) + 1;
  }
  s.first = start;
  if (s.count <= 1) s.step = 1;  // the step is never applied; |step| > dim would overflow offsets
  return s;
}

namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Below this block size the fused pass decides too often per byte; copy then scatter instead.
constexpr int64_t kMinFusedBlockBytes = 64;

// Out of place in one pass: every output block (the contiguous run after the
// last sliced axis) is written once, from updates when all its coordinates lie
// in the slice and from data otherwise; consecutive data blocks are one memcpy.
inline void fused_slice_scatter(const char* data, const char* updates, char* out,
                                const Shape& shape, const Shape& slice_shape,
                                const std::vector<SliceAxis>& plan, const std::vector<bool>& sliced,
                                size_t last_sliced, int64_t block_bytes) {
  const size_t dims = last_sliced + 1;
  const Shape outer(shape.begin(), shape.begin() + int64_t(dims));
  // slot[d][c]: the updates coordinate for data coordinate c on axis d, or -1.
  std::vector<std::vector<int64_t>> slot(dims);
  for (size_t d = 0; d < dims; ++d) {
    slot[d].assign(size_t(shape[d]), sliced[d] ? -1 : 0);
    for (int64_t i = 0; i < plan[d].count; ++i)
      slot[d][size_t(plan[d].first + i * plan[d].step)] = i;
  }
  Shape ustride(dims, 1);  // updates strides in blocks
  for (size_t d = dims - 1; d-- > 0;) ustride[d] = ustride[d + 1] * slice_shape[d + 1];
  const int64_t positions = product(shape, 0, dims);
  const bool streaming = use_streaming_stores(positions * block_bytes);

  // Blocks whose sources are fetched ahead: blocks drawn by turns from
  // updates and data defeat the hardware prefetcher (W5, 600-byte blocks:
  // 1.9x the time of a copy without).
  const int64_t ahead = std::max<int64_t>(1, kFetchAheadBytes / block_bytes);

  parallel_for(positions, positions * block_bytes * 2, [&](int64_t p0, int64_t p1) {
    auto source_block = [&](const Shape& c) -> int64_t {  // updates block, or -1 for data
      int64_t offset = 0;
      for (size_t d = 0; d < dims; ++d) {
        const int64_t k = sliced[d] ? slot[d][size_t(c[d])] : c[d];
        if (k < 0) return -1;
        offset += k * ustride[d];
      }
      return offset;
    };
    auto advance = [&](Shape& c) {
      for (size_t d = dims; d-- > 0;) {
        if (++c[d] < outer[d]) return;
        c[d] = 0;
      }
    };
    Shape c = unravel(p0, outer);
    Shape c_next = c;  // the first position not yet fetched
    int64_t p_next = p0;
    auto fetch_until = [&](int64_t end) {
      for (end = std::min(end, p1); p_next < end; ++p_next, advance(c_next)) {
        const int64_t from = source_block(c_next);
        const char* src = from >= 0 ? updates + from * block_bytes : data + p_next * block_bytes;
        prefetch_range(src, block_bytes);
      }
    };
    with_writer(streaming, out + p0 * block_bytes, [&](auto& writer) {
      for (int64_t p = p0; p < p1;) {
        if (ahead > 1) fetch_until(p + ahead);
        const int64_t from = source_block(c);
        advance(c);
        if (from >= 0) {
          writer.write(updates + from * block_bytes, size_t(block_bytes));
          ++p;
          continue;
        }
        int64_t q = p + 1;
        while (q < p1 && source_block(c) < 0) {
          advance(c);
          ++q;
        }
        writer.write(data + p * block_bytes, size_t((q - p) * block_bytes));
        p = q;
        // a long run of data blocks streams on its own: fetch from here on
        if (p_next < p) p_next = p, c_next = c;
      }
    });
  });
}

// slice_scatter on inputs the public entry has checked (buffers, element types)
// and set apart from out (data may be out).
inline void slice_scatter_unaliased(const TensorRef& data, const TensorRef& updates,
                                    const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& stops,
                                    const std::vector<int64_t>& steps,
                                    const std::vector<int64_t>& axes, void* out,
                                    const OpOptions& options) {
  using namespace detail;
  const char* op = op_name(options, "slice_scatter");
  const size_t m = axes.size();
  if (m == 0 || starts.size() != m || stops.size() != m || steps.size() != m)
    throw_value_error(op, "start, stop, step and axis must have the same length >= 1");
  const size_t rank = data.shape.size();
  if (rank == 0) throw_value_error(op, "data must have rank >= 1, got a 0-D tensor");

  std::vector<SliceAxis> plan(rank);
  std::vector<bool> sliced(rank, false);
  for (size_t d = 0; d < rank; ++d) plan[d] = {0, 1, data.shape[d]};
  for (size_t a = 0; a < m; ++a) {
    const size_t axis = size_t(normalize_axis(op, axes[a], int64_t(rank)));
    if (sliced[axis])
      throw_value_error(op, "axes must be distinct, axis " + std::to_string(axis) + " repeats");
    if (steps[a] == 0) throw_value_error(op, "step must not be 0");
    sliced[axis] = true;
    plan[axis] = clamp_slice(starts[a], stops[a], steps[a], data.shape[axis]);
  }
  Shape expected(rank);
  for (size_t d = 0; d < rank; ++d) expected[d] = plan[d].count;
  check_updates_shape(op, updates.shape, expected);
  const int64_t total_bytes = numel(data.shape) * int64_t(data.itemsize);
  if (total_bytes != 0 && out == nullptr) throw_value_error(op, "out is a null pointer");

  if (total_bytes == 0) return;
  if (out != data.data) {
    size_t last_sliced = 0;
    for (size_t d = 0; d < rank; ++d)
      if (sliced[d]) last_sliced = d;
    const int64_t block_bytes = product(data.shape, last_sliced + 1, rank) * int64_t(data.itemsize);
    if (block_bytes >= kMinFusedBlockBytes) {
      fused_slice_scatter(static_cast<const char*>(data.data),
                          static_cast<const char*>(updates.data), static_cast<char*>(out),
                          data.shape, expected, plan, sliced, last_sliced, block_bytes);
      return;
    }
  }
  // In place, or small blocks: copy data, then write the updates row by row.
  parallel_copy(out, data.data, total_bytes);
  const int64_t rows_len = expected[rank - 1];
  const int64_t rows = rows_len == 0 ? 0 : numel(expected) / rows_len;
  if (rows == 0) return;

  Shape strides(rank, int64_t(data.itemsize));  // data strides in bytes
  for (size_t d = rank - 1; d-- > 0;) strides[d] = strides[d + 1] * data.shape[d + 1];
  const Shape row_shape(expected.begin(), expected.end() - 1);
  const SliceAxis last = plan[rank - 1];
  const int64_t item = int64_t(data.itemsize);
  const bool contiguous_rows = last.step == 1;
  const char* src = static_cast<const char*>(updates.data);
  char* dst = static_cast<char*>(out);

  parallel_for(rows, rows * rows_len * item * 2, [&](int64_t r0, int64_t r1) {
    Shape pos = unravel(r0, row_shape);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t base = last.first * item;
      for (size_t d = 0; d + 1 < rank; ++d)
        base += (plan[d].first + pos[d] * plan[d].step) * strides[d];
      const char* row = src + r * rows_len * item;
      if (contiguous_rows) {
        std::memcpy(dst + base, row, size_t(rows_len * item));
      } else {
        const int64_t step_bytes = last.step * item;
        visit_width(data.itemsize, [&](auto width) {
          using E = typename decltype(width)::type;
          for (int64_t i = 0; i < rows_len; ++i) {
            if constexpr (std::is_void_v<E>)
              std::memcpy(dst + base + i * step_bytes, row + i * item, size_t(item));
            else
              move_element<E>(dst + base + i * step_bytes, row + i * item);
          }
        });
      }
      for (size_t d = row_shape.size(); d-- > 0;) {  // next row position
        if (++pos[d] < row_shape[d]) break;
        pos[d] = 0;
      }
    }
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// Type-erased SliceScatter. starts/stops/steps/axes have one common length >= 1
// and name distinct axes. `out` has data's shape and type; out == data.data
// updates in place. Inputs that share memory with out otherwise are read from copies.
inline void slice_scatter(const TensorRef& data, const TensorRef& updates,
                          const std::vector<int64_t>& starts, const std::vector<int64_t>& stops,
                          const std::vector<int64_t>& steps, const std::vector<int64_t>& axes,
                          void* out, const OpOptions& options = {}) {
  const char* op = detail::op_name(options, "slice_scatter");
  detail::check_same_element(op, data, updates);
  detail::check_tensor(op, "data", data.data, data.shape, int64_t(data.itemsize));
  detail::check_tensor(op, "updates", updates.data, updates.shape, int64_t(updates.itemsize));
  detail::ApartFromOut apart(data, out);
  detail::slice_scatter_unaliased(apart.data(data), apart.input(updates), starts, stops, steps,
                                  axes, out, options);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
