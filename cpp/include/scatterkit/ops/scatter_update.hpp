// ScatterUpdate-3:
//   out[a..., indices[j...], b...] = updates[a..., j..., b...]
// with `a...` the first `axis` dims of data and `b...` the rest after `axis`.
// Duplicate indices: the last in C order wins. Negative indices are errors
// unless the caller allows them.
//
// Strategy: a winner-per-target table (the last j hitting each target) so every
// output slab is written exactly once, straight from updates or from data;
// the copy of data is fused with the scatter and no slab is written twice.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "scatterkit/copy.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {
namespace detail {

// winner[t] = last position j with indices[j] == t, or -1.
template <class I>
std::vector<int64_t> last_writer_per_target(const I* indices, int64_t n, int64_t targets) {
  std::vector<int64_t> winner(size_t(targets), -1);
  for (int64_t j = 0; j < n; ++j) winner[size_t(wrap_index(indices[j], targets))] = j;
  return winner;
}

inline void scatter_update_slabs(const char* data, char* out, const char* updates,
                                 const std::vector<int64_t>& winner, int64_t outer, int64_t targets,
                                 int64_t n, int64_t slab_bytes) {
  const bool in_place = data == out;
  if (in_place) {
    // Only the winners move: cost proportional to the updates.
    std::vector<int64_t> written;  // pairs (target, j)
    for (int64_t t = 0; t < targets; ++t)
      if (winner[size_t(t)] >= 0) written.insert(written.end(), {t, winner[size_t(t)]});
    const int64_t w = int64_t(written.size() / 2);
    parallel_for(outer * w, outer * w * slab_bytes * 2, [&](int64_t b, int64_t e) {
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / w, k = item % w;
        const int64_t t = written[size_t(2 * k)], j = written[size_t(2 * k + 1)];
        std::memcpy(out + (o * targets + t) * slab_bytes, updates + (o * n + j) * slab_bytes,
                    size_t(slab_bytes));
      }
    });
    return;
  }
  // Out of place: blocks of targets written front to back; runs of untargeted
  // slabs copy from data in one piece, targeted slabs come from their winner,
  // whose source is prefetched a few slabs ahead (winners are scattered).
  const int64_t per_block =
      std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, slab_bytes));
  const int64_t blocks = (targets + per_block - 1) / per_block;
  const bool streaming = use_streaming_stores(outer * targets * slab_bytes);
  constexpr int64_t kAhead = 4;
  parallel_for(outer * blocks, outer * targets * slab_bytes * 2, [&](int64_t b, int64_t e) {
    const int64_t first_o = b / blocks;
    const int64_t first_t = (b % blocks) * per_block;
    with_writer(streaming, out + (first_o * targets + first_t) * slab_bytes, [&](auto& writer) {
      for (int64_t item = b; item < e; ++item) {
        const int64_t o = item / blocks;
        const int64_t t_end = std::min(targets, (item % blocks + 1) * per_block);
        for (int64_t t = (item % blocks) * per_block; t < t_end;) {
          const int64_t j = winner[size_t(t)];
          if (j >= 0) {
            if (t + kAhead < targets && winner[size_t(t + kAhead)] >= 0) {
              const char* next = updates + (o * n + winner[size_t(t + kAhead)]) * slab_bytes;
              for (int64_t k = 0; k < slab_bytes; k += 64) __builtin_prefetch(next + k);
            }
            writer.write(updates + (o * n + j) * slab_bytes, size_t(slab_bytes));
            ++t;
            continue;
          }
          int64_t run_end = t + 1;
          while (run_end < t_end && winner[size_t(run_end)] < 0) ++run_end;
          writer.write(data + (o * targets + t) * slab_bytes, size_t((run_end - t) * slab_bytes));
          t = run_end;
        }
      }
    });
  });
}

}  // namespace detail

// Type-erased ScatterUpdate-3 (negative indices are errors unless options
// allow them). `out` has data's shape and type; out == data.data updates in
// place. Everything is validated before the first write.
inline void scatter_update(const TensorRef& data, const IndexRef& indices, const TensorRef& updates,
                           int64_t axis, void* out, const OpOptions& options = {false, nullptr}) {
  using namespace detail;
  const char* op = op_name(options, "scatter_update");
  check_scatter_inputs(op, data, indices, updates);
  const int64_t rank = int64_t(data.shape.size());
  axis = normalize_axis(op, axis, rank);

  Shape expected(data.shape.begin(), data.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + axis + 1, data.shape.end());
  check_updates_shape(op, updates.shape, expected);

  const int64_t n = numel(indices.shape);
  const int64_t targets = data.shape[size_t(axis)];
  const int64_t outer = product(data.shape, 0, size_t(axis));
  const int64_t slab_bytes =
      product(data.shape, size_t(axis) + 1, data.shape.size()) * int64_t(data.itemsize);
  if (numel(data.shape) != 0 && out == nullptr) throw_value_error(op, "out is a null pointer");

  std::vector<int64_t> winner;
  visit_index(indices.type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* idx = static_cast<const I*>(indices.data);
    check_indices(op, idx, n, 1, 0, targets, axis, indices.shape, options.allow_negative_indices);
    winner = last_writer_per_target(reinterpret_cast<const kernel_index_t<I>*>(idx), n, targets);
  });
  if (numel(data.shape) == 0) return;
  scatter_update_slabs(static_cast<const char*>(data.data), static_cast<char*>(out),
                       static_cast<const char*>(updates.data), winner, outer, targets, n,
                       slab_bytes);
}

}  // namespace scatterkit
