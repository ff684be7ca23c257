// How ScatterNDUpdate groups its updates: index tuples turned into flat slab numbers and
// sorted by (slab, tuple number), so that each target's updates sit together in C order, and
// (group, slab chunk) work items that threads take without ever sharing a target.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/shape.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Updates grouped by target slab: order[group_begin[g] .. group_begin[g+1]) are
// the tuple numbers hitting slab target[g], ascending.
struct SlabGroups {
  std::vector<int64_t> target;
  std::vector<int64_t> group_begin;
  std::vector<int64_t> order;
};

template <class I>
SlabGroups group_by_slab(const I* idx, int64_t tuples, size_t k, const Shape& data) {
  std::vector<std::pair<int64_t, int64_t>> keyed(static_cast<size_t>(tuples));
  for (int64_t p = 0; p < tuples; ++p) keyed[size_t(p)] = {flat_tuple(idx, p, k, data), p};
  std::sort(keyed.begin(), keyed.end());
  SlabGroups g;
  g.order.resize(keyed.size());
  for (size_t p = 0; p < keyed.size(); ++p) {
    g.order[p] = keyed[p].second;
    if (p == 0 || keyed[p].first != keyed[p - 1].first) {
      g.target.push_back(keyed[p].first);
      g.group_begin.push_back(int64_t(p));
    }
  }
  g.group_begin.push_back(tuples);
  return g;
}

// Calls body(group, chunk_begin, chunk_end) over (group, slab chunk) items.
template <class Body>
void for_each_group_chunk(const SlabGroups& g, int64_t slab, int64_t chunk, int64_t bytes,
                          Body&& body) {
  const int64_t chunks = std::max<int64_t>(1, (slab + chunk - 1) / chunk);
  const int64_t groups = int64_t(g.target.size());
  parallel_for(groups * chunks, bytes, [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t c0 = (item % chunks) * chunk;
      body(item / chunks, c0, std::min(slab, c0 + chunk));
    }
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
