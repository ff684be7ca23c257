// ScatterElementsUpdate without a reduction: elements move, the last write along a line
// wins.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "scatterkit/dtype.hpp"
#include "scatterkit/ops/elements/walk.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// reduction = none: element moves, last write along the line wins.
// E is Bytes<N>, or void for a run-time itemsize.
template <class E, class I>
void scatter_elements_move(const ElementsLayout& l, const I* idx, const char* upd, char* out,
                           size_t itemsize, int64_t bytes, CopyFirst copy) {
  const int64_t width = int64_t(itemsize);
  for_each_line_block(
      l, bytes, kWideBlockLines,
      [&](const LineBlock& blk) {
        char* base = out + l.outer_at(blk.o0) * width;
        visit_block(
            l, blk, idx,
            [base, upd, width, itemsize](int64_t, int64_t t, int64_t p) {
              if constexpr (std::is_void_v<E>)
                std::memcpy(base + t * width, upd + p * width, itemsize);
              else
                move_element<E>(base + t * int64_t(sizeof(E)), upd + p * int64_t(sizeof(E)));
            },
            Prevalidated{}, PrefetchTargetAcrossRows{{base, itemsize}});
      },
      copy);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
