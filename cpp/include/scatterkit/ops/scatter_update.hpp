// ScatterUpdate-3:
//   out[a..., indices[j...], b...] = updates[a..., j..., b...]
// with `a...` the first `axis` dims of data and `b...` the rest after `axis`.
// Duplicate indices: the last in C order wins. Negative indices are errors
// unless the caller allows them.
//
// Strategy: a winner-per-target table (the last j hitting each target) so every
// output slab is written exactly once, straight from updates or from data;
// the copy of data is fused with the scatter and no slab is written twice.
// A few indices into a long axis keep a sorted list of winners instead, then
// write them over a plain copy: no memory is sized by the axis alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/dtype.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// winner[t] = last position j with indices[j] == t, or -1.
template <class I>
std::vector<int64_t> last_writer_per_target(const I* indices, int64_t n, int64_t targets) {
  std::vector<int64_t> winner(size_t(targets), -1);
  for (int64_t j = 0; j < n; ++j) winner[size_t(wrap_index(indices[j], targets))] = j;
  return winner;
}

using Writers = std::vector<std::pair<int64_t, int64_t>>;  // (target, last j), by target

// The same as last_writer_per_target, but sized by the indices rather than by
// the axis: for a few indices into a long axis, where a table over every
// target would dwarf the inputs (and could exhaust memory).
template <class I>
Writers last_writers_sorted(const I* indices, int64_t n, int64_t targets) {
  Writers hits(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) hits[size_t(j)] = {wrap_index(indices[j], targets), j};
  std::sort(hits.begin(), hits.end());  // by target, then by j: the last of a run wins
  size_t kept = 0;
  for (size_t k = 0; k < hits.size(); ++k)
    if (k + 1 == hits.size() || hits[k + 1].first != hits[k].first) hits[kept++] = hits[k];
  hits.resize(kept);
  return hits;
}

// A table of winners only pays when the axis is short or densely hit.
inline bool winner_table_fits(int64_t targets, int64_t n) {
  constexpr int64_t kAlwaysTable = int64_t(1) << 16;
  return targets <= kAlwaysTable || targets <= 4 * n;
}

// Moves one slab: E is Bytes<N> (a move the compiler inlines) or void (a
// memcpy of slab_bytes).
template <class E>
inline void move_slab(char* dst, const char* src, int64_t slab_bytes) {
  if constexpr (std::is_void_v<E>)
    std::memcpy(dst, src, size_t(slab_bytes));
  else
    move_element<E>(dst, src);
}

// Writes only the winning slabs over `out` (which already holds data): cost
// proportional to the updates.
template <class E>
void write_winners(char* out, const char* updates, const Writers& writers, int64_t outer,
                   int64_t targets, int64_t n, int64_t slab_bytes) {
  const int64_t w = int64_t(writers.size());
  if (w == 0) return;
  parallel_for(outer * w, outer * w * slab_bytes * 2, [&](int64_t b, int64_t e) {
    int64_t o = b / w, k = b % w;  // no division per slab: small ones cost little else
    for (int64_t item = b; item < e; ++item) {
      const auto [t, j] = writers[size_t(k)];
      move_slab<E>(out + (o * targets + t) * slab_bytes, updates + (o * n + j) * slab_bytes,
                   slab_bytes);
      if (++k == w) k = 0, ++o;
    }
  });
}

// Slabs up to this size are written over a copy (copy_then_write_winners).
constexpr int64_t kSmallSlabBytes = 16;

// Out of place, for small slabs (updates along the last axis, say): copies
// data a block of targets at a time and writes the block's winners over it
// while it is in cache. Copying each run between winners was a memcpy call
// per run, 1.7x slower than PyTorch's copy and index_copy_.
template <class E>
void copy_then_write_winners(const char* data, char* out, const char* updates,
                             const Writers& writers, int64_t outer, int64_t targets, int64_t n,
                             int64_t slab_bytes) {
  const int64_t per_block = std::max<int64_t>(1, (int64_t(1) << 16) / slab_bytes);
  const int64_t blocks = (targets + per_block - 1) / per_block;
  // first_writer[b]: the first writer of block b (writers are sorted by target)
  std::vector<size_t> first_writer(size_t(blocks) + 1);
  for (int64_t b = 0; b <= blocks; ++b)
    first_writer[size_t(b)] =
        size_t(std::lower_bound(
                   writers.begin(), writers.end(), std::min(targets, b * per_block),
                   [](const std::pair<int64_t, int64_t>& w, int64_t t) { return w.first < t; }) -
               writers.begin());
  parallel_for(outer * blocks, outer * targets * slab_bytes * 2, [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t o = item / blocks, block = item % blocks;
      const int64_t t0 = block * per_block, t1 = std::min(targets, t0 + per_block);
      char* row = out + o * targets * slab_bytes;
      std::memcpy(row + t0 * slab_bytes, data + (o * targets + t0) * slab_bytes,
                  size_t((t1 - t0) * slab_bytes));
      const char* from = updates + o * n * slab_bytes;
      for (size_t k = first_writer[size_t(block)]; k < first_writer[size_t(block) + 1]; ++k)
        move_slab<E>(row + writers[k].first * slab_bytes, from + writers[k].second * slab_bytes,
                     slab_bytes);
    }
  });
}

// The winners of a table, in target order.
inline Writers writers_of(const std::vector<int64_t>& winner) {
  Writers writers;
  for (int64_t t = 0; t < int64_t(winner.size()); ++t)
    if (winner[size_t(t)] >= 0) writers.emplace_back(t, winner[size_t(t)]);
  return writers;
}

// Writes the winners (in target order) over data in out: in place only they
// move; out of place small slabs go over a copy made block by block, larger
// ones over a whole copy.
inline void scatter_update_writers(const char* data, char* out, const char* updates,
                                   const Writers& writers, int64_t outer, int64_t targets,
                                   int64_t n, int64_t slab_bytes) {
  visit_width(size_t(slab_bytes), [&](auto width) {
    using E = typename decltype(width)::type;
    if (data == out) {
      write_winners<E>(out, updates, writers, outer, targets, n, slab_bytes);
    } else if (slab_bytes <= kSmallSlabBytes) {
      copy_then_write_winners<E>(data, out, updates, writers, outer, targets, n, slab_bytes);
    } else {
      parallel_copy(out, data, outer * targets * slab_bytes);
      write_winners<E>(out, updates, writers, outer, targets, n, slab_bytes);
    }
  });
}

inline void scatter_update_slabs(const char* data, char* out, const char* updates,
                                 const std::vector<int64_t>& winner, int64_t outer, int64_t targets,
                                 int64_t n, int64_t slab_bytes) {
  if (data == out || slab_bytes <= kSmallSlabBytes)
    return scatter_update_writers(data, out, updates, writers_of(winner), outer, targets, n,
                                  slab_bytes);
  // Out of place: blocks of targets written front to back; runs of untargeted
  // slabs copy from data in one piece, targeted slabs come from their winner,
  // whose source is prefetched a few KB ahead (winners are scattered).
  const int64_t per_block =
      std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, slab_bytes));
  const int64_t blocks = (targets + per_block - 1) / per_block;
  const bool streaming = use_streaming_stores(outer * targets * slab_bytes);
  const int64_t ahead = std::max<int64_t>(1, kFetchAheadBytes / slab_bytes);
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
            if (t + ahead < targets && winner[size_t(t + ahead)] >= 0) {
              const char* next = updates + (o * n + winner[size_t(t + ahead)]) * slab_bytes;
              prefetch_range(next, slab_bytes);
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

// scatter_update on inputs the public entry has checked (buffers, element types)
// and set apart from out (data may be out).
inline void scatter_update_unaliased(const TensorRef& data, const IndexRef& indices,
                                     const TensorRef& updates, int64_t axis, void* out,
                                     const OpOptions& options) {
  using namespace detail;
  const char* op = op_name(options, "scatter_update");
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

  const bool table = winner_table_fits(targets, n);
  std::vector<int64_t> winner;
  Writers writers;
  visit_index(indices.type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    const I* idx = static_cast<const I*>(indices.data);
    check_indices(op, idx, n, 1, 0, targets, axis, indices.shape, options.allow_negative_indices);
    const auto* kidx = reinterpret_cast<const kernel_index_t<I>*>(idx);
    if (table)
      winner = last_writer_per_target(kidx, n, targets);
    else
      writers = last_writers_sorted(kidx, n, targets);
  });
  if (numel(data.shape) == 0) return;
  const char* src = static_cast<const char*>(data.data);
  char* dst = static_cast<char*>(out);
  const char* upd = static_cast<const char*>(updates.data);
  if (table)
    scatter_update_slabs(src, dst, upd, winner, outer, targets, n, slab_bytes);
  else
    scatter_update_writers(src, dst, upd, writers, outer, targets, n, slab_bytes);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// Type-erased ScatterUpdate-3 (negative indices are errors unless options
// allow them). `out` has data's shape and type; out == data.data updates in
// place. Everything is validated before the first write. Inputs that share memory with out
// otherwise are read from copies.
inline void scatter_update(const TensorRef& data, const IndexRef& indices, const TensorRef& updates,
                           int64_t axis, void* out, const OpOptions& options = {false, nullptr}) {
  const char* op = detail::op_name(options, "scatter_update");
  detail::check_scatter_inputs(op, data, indices, updates);
  detail::ApartFromOut apart(data, out);
  detail::scatter_update_unaliased(apart.data(data), apart.indices(indices), apart.input(updates),
                                   axis, out, options);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
