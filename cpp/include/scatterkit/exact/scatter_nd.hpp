// Exact sums, the top layer for ScatterNDUpdate (exact=True, sum and sub): each target's
// updates, grouped by slab (ops/nd/slab_groups.hpp), folded into double slots
// (double_slots.hpp) over the slab's chunk.
#pragma once

#include <cstdint>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/ops/nd/slab_groups.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Exact sum (or, with `subtract`, data minus the updates) of ScatterNDUpdate
// over slabs grouped by target; out holds data.
template <class T>
void exact_nd_sum(const SlabGroups& g, const T* upd, T* out, int64_t slab, bool subtract,
                  int64_t bytes) {
  constexpr int64_t kChunk = 256;
  for_each_group_chunk(g, slab, kChunk, bytes, [&](int64_t grp, int64_t c0, int64_t c1) {
    T* dst = out + g.target[size_t(grp)] * slab;
    const int64_t begin = g.group_begin[size_t(grp)], end = g.group_begin[size_t(grp) + 1];
    ExactSlots<T> slots;
    double acc[kChunk];
    for (int64_t e = c0; e < c1; ++e) {
      acc[e - c0] = -0.0;
      slots.add(&acc[e - c0], exact_double(dst[e]));
    }
    for (int64_t q = begin; q < end; ++q) {
      const T* src = upd + g.order[size_t(q)] * slab;
      for (int64_t e = c0; e < c1; ++e) {
        const double v = exact_double(src[e]);
        slots.add(&acc[e - c0], subtract ? -v : v);
      }
    }
    const double* tables[1] = {acc};
    for (int64_t e = c0; e < c1; ++e)
      dst[e] = finish_parts<T>(&slots, tables, 1, e - c0, false, uint64_t(end - begin + 1));
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
