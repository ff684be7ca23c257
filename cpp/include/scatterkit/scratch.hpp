// Large scratch arrays, on transparent huge pages, recycled between calls.
//
// A fresh mapping of tens of megabytes costs the zeroing of each of its pages on first touch:
// for the 80 MB that a 1-D histogram of 10M updates writes its updates out to, that was 7-16 ms
// of a 40-60 ms call (bench/README.md). So the memory of the last scratch array freed is kept,
// up to a limit, for the next one it fits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace scatterkit {
namespace detail {

// Scratch blocks are whole transparent huge pages, and aligned to one.
constexpr size_t kScratchGrain = size_t(2) << 20;

// `bytes` rounded up to whole huge pages.
inline size_t huge_page_capacity(size_t bytes) {
  return (bytes + kScratchGrain - 1) / kScratchGrain * kScratchGrain;
}

// A fresh block of `capacity` bytes (whole huge pages), aligned to a huge page and advised onto
// them where the system gives them on request (Linux's "madvise" mode).
inline void* map_huge_page_block(size_t capacity) {
  void* p = std::aligned_alloc(kScratchGrain, capacity);
  if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(p, capacity, MADV_HUGEPAGE);  // advice only: without huge pages it still works
#endif
  return p;
}

// The most bytes of scratch kept between calls, unless set_scratch_cache says otherwise.
constexpr size_t kDefaultScratchCacheBytes = size_t(256) << 20;

// The one block kept between calls, shared by all threads.
class ScratchCache {
 public:
  // Never destroyed: a scratch array freed during exit still returns here.
  static ScratchCache& instance() {
    static ScratchCache* cache = new ScratchCache();
    return *cache;
  }

  // A block of `capacity` bytes or more (a multiple of kScratchGrain): the kept one if it is
  // large enough, else a fresh one.
  void* take(size_t& capacity) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (kept_ != nullptr && kept_capacity_ >= capacity) {
        capacity = std::exchange(kept_capacity_, 0);
        return std::exchange(kept_, nullptr);
      }
    }
    return map_huge_page_block(capacity);
  }

  // Keeps the block in place of the one kept before, if it is within the limit; else frees it.
  void give(void* p, size_t capacity) {
    void* freed = p;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (capacity <= limit_) {
        freed = std::exchange(kept_, p);
        kept_capacity_ = capacity;
      }
    }
    std::free(freed);
  }

  void set_limit(size_t limit) {
    void* freed = nullptr;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      limit_ = limit;
      if (kept_capacity_ > limit_) {
        freed = std::exchange(kept_, nullptr);
        kept_capacity_ = 0;
      }
    }
    std::free(freed);
  }

  size_t kept_bytes() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return kept_capacity_;
  }

 private:
  std::mutex mutex_;
  void* kept_ = nullptr;
  size_t kept_capacity_ = 0;
  size_t limit_ = kDefaultScratchCacheBytes;
};

// An uninitialized array of n elements of E (trivially copyable), its memory from ScratchCache.
template <class E>
class ScratchArray {
 public:
  explicit ScratchArray(int64_t n) {
    const size_t bytes = std::max<size_t>(size_t(n) * sizeof(E), 1);
    capacity_ = huge_page_capacity(bytes);
    ptr_ = static_cast<E*>(ScratchCache::instance().take(capacity_));
  }
  ~ScratchArray() { ScratchCache::instance().give(ptr_, capacity_); }
  ScratchArray(const ScratchArray&) = delete;
  ScratchArray& operator=(const ScratchArray&) = delete;
  E* get() const { return ptr_; }

 private:
  E* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace detail

// The most bytes of scratch memory the kernels keep between calls (default 256 MB); 0 frees
// what is kept and keeps none.
inline void set_scratch_cache(size_t max_bytes) {
  detail::ScratchCache::instance().set_limit(max_bytes);
}

// The bytes of scratch memory kept now.
inline size_t scratch_cache_bytes() { return detail::ScratchCache::instance().kept_bytes(); }

}  // namespace scatterkit
