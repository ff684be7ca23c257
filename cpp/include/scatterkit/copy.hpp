// Parallel memcpy: the out-of-place floor every op pays once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "scatterkit/parallel.hpp"

namespace scatterkit {
namespace detail {

inline void parallel_copy(void* dst, const void* src, int64_t bytes) {
  if (dst == src || bytes <= 0) return;
  constexpr int64_t kBlock = int64_t(1) << 16;
  const int64_t blocks = (bytes + kBlock - 1) / kBlock;
  parallel_for(blocks, 2 * bytes, [&](int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kBlock;
    const int64_t end = std::min(bytes, b1 * kBlock);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                size_t(end - begin));
  });
}

}  // namespace detail
}  // namespace scatterkit
