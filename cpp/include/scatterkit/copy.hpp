// Writing outputs: the out-of-place floor every op pays once.
//
// Outputs larger than the cache are written with streaming (non-temporal)
// stores where the CPU has them: a normal store first reads the destination
// line (read-for-ownership), so it moves 3 bytes per byte copied instead of 2.
// Small outputs use plain stores so they stay in cache for the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#define SCATTERKIT_HAS_STREAMING_STORES 1
#endif

#include "scatterkit/config.hpp"
#include "scatterkit/parallel.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

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

// Streams one 64-byte line to a 64-byte-aligned destination.
inline void stream_line(void* dst, const void* src) {
#ifdef SCATTERKIT_HAS_STREAMING_STORES
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (int k = 0; k < 64; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + k),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
#else
  std::memcpy(dst, src, 64);
#endif
}

// Orders this thread's streaming stores before what follows.
inline void streaming_fence() {
#ifdef SCATTERKIT_HAS_STREAMING_STORES
  _mm_sfence();
#endif
}

// Writes an output range front to back from many sources. Interior cache
// lines always leave as whole streamed lines, even when the pieces do not
// line up with them: a piece ending mid-line is staged until the line is
// complete (a partly streamed line costs a read-modify-write in memory). Only
// the range's first and last partial lines use plain stores, so neighbouring
// ranges written by other threads stay correct.
class StreamWriter {
 public:
  explicit StreamWriter(void* dst) : dst_(static_cast<char*>(dst)), first_(offset()) {}

  void write(const void* source, size_t n) {
    const char* src = static_cast<const char*>(source);
    while (n > 0) {
      const size_t at = offset();
      if (at == 0 && n >= 64) {  // aligned: stream whole lines straight from the source
        for (; n >= 64; n -= 64, dst_ += 64, src += 64) stream_line(dst_, src);
        continue;
      }
      const size_t take = std::min(n, 64 - at);
      std::memcpy(line_ + at, src, take);
      dst_ += take;
      src += take;
      n -= take;
      if (offset() == 0) flush_line(dst_ - 64, 64);
    }
  }

  // Writes a staged partial line and orders the streamed stores.
  void finish() {
    if (offset() != 0) flush_line(dst_ - offset(), offset());
    streaming_fence();
  }

 private:
  size_t offset() const { return reinterpret_cast<uintptr_t>(dst_) & 63; }

  // Writes line_[first_, end) to the line at `line`; whole lines are streamed.
  void flush_line(char* line, size_t end) {
    if (first_ == 0 && end == 64)
      stream_line(line, line_);
    else
      std::memcpy(line + first_, line_ + first_, end - first_);
    first_ = 0;
  }

  char* dst_;
  size_t first_;  // where in the current line this writer's bytes start
  alignas(64) char line_[64];
};

// The same interface with plain stores, for outputs that should stay in cache.
class PlainWriter {
 public:
  explicit PlainWriter(void* dst) : dst_(static_cast<char*>(dst)) {}
  void write(const void* src, size_t n) {
    std::memcpy(dst_, src, n);
    dst_ += n;
  }
  void finish() {}

 private:
  char* dst_;
};

// Calls f(writer) with a StreamWriter for large outputs, else a PlainWriter.
template <class F>
void with_writer(bool streaming, void* dst, F&& f) {
  if (streaming) {
    StreamWriter w(dst);
    f(w);
    w.finish();
  } else {
    PlainWriter w(dst);
    f(w);
    w.finish();
  }
}

// Parallel memcpy: each thread copies one contiguous range.
inline void parallel_copy(void* dst, const void* src, int64_t bytes) {
  if (dst == src || bytes <= 0) return;
  constexpr int64_t kBlock = int64_t(1) << 16;
  const int64_t blocks = (bytes + kBlock - 1) / kBlock;
  const bool streaming = use_streaming_stores(bytes);
  parallel_for(blocks, 2 * bytes, [&](int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kBlock;
    const int64_t end = std::min(bytes, b1 * kBlock);
    with_writer(streaming, static_cast<char*>(dst) + begin, [&](auto& writer) {
      writer.write(static_cast<const char*>(src) + begin, size_t(end - begin));
    });
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
