// Copies for the out-of-place floor: every op writes the whole output once.
//
// Outputs larger than the cache are written with streaming (non-temporal)
// stores where the CPU has them: a normal store first reads the destination
// line (read-for-ownership), so it moves 3 bytes per byte copied instead of 2.
// Small outputs use plain memcpy so they stay in cache for the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#define SCATTERKIT_HAS_STREAMING_STORES 1
#endif

#include "scatterkit/parallel.hpp"

namespace scatterkit {
namespace detail {

// Outputs above this size are streamed (about the last-level cache of a small machine).
constexpr int64_t kStreamingMinBytes = int64_t(8) << 20;

inline bool use_streaming_stores(int64_t output_bytes) {
#ifdef SCATTERKIT_HAS_STREAMING_STORES
  return output_bytes >= kStreamingMinBytes;
#else
  (void)output_bytes;
  return false;
#endif
}

// memcpy with non-temporal stores for the cache-line-aligned middle part.
// Callers finish with streaming_fence() before other threads read the output.
inline void stream_copy(void* dst_, const void* src_, size_t n) {
#ifdef SCATTERKIT_HAS_STREAMING_STORES
  char* dst = static_cast<char*>(dst_);
  const char* src = static_cast<const char*>(src_);
  if (n < 128) {
    std::memcpy(dst, src, n);
    return;
  }
  // Stream whole cache lines only: a partly written streamed line costs a
  // read-modify-write in memory, and mixing it with plain stores flushes it early.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  for (; n >= 64; n -= 64, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  std::memcpy(dst, src, n);
#else
  std::memcpy(dst_, src_, n);
#endif
}

// Orders this thread's streaming stores before what follows.
inline void streaming_fence() {
#ifdef SCATTERKIT_HAS_STREAMING_STORES
  _mm_sfence();
#endif
}

// Copies with the store kind chosen once for the whole output.
struct BlockCopier {
  bool streaming;
  void operator()(void* dst, const void* src, size_t n) const {
    if (streaming)
      stream_copy(dst, src, n);
    else
      std::memcpy(dst, src, n);
  }
  void finish() const {
    if (streaming) streaming_fence();
  }
};

// Parallel memcpy: each thread copies one contiguous range.
inline void parallel_copy(void* dst, const void* src, int64_t bytes) {
  if (dst == src || bytes <= 0) return;
  constexpr int64_t kBlock = int64_t(1) << 16;
  const int64_t blocks = (bytes + kBlock - 1) / kBlock;
  const BlockCopier copy{use_streaming_stores(bytes)};
  parallel_for(blocks, 2 * bytes, [&](int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kBlock;
    const int64_t end = std::min(bytes, b1 * kBlock);
    copy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
         size_t(end - begin));
    copy.finish();
  });
}

}  // namespace detail
}  // namespace scatterkit
