// ScatterElementsUpdate's fold for one line whose table is too large for the cache (a 1-D
// histogram of many MB): reaching each target at random costs a miss to memory per update, so
// the updates are first partitioned, stably, by range of bins, and each range is then copied
// from data, folded while it stays in cache and written to out once. Each bin still sees its
// updates in C order, so the bits are those of the C-order fold at any thread count. The pass
// that counts the updates of each range checks every index, before anything is written.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/histogram.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Bytes of one range of bins, folded at a time: half of a core's L2 here, so that the range
// and the stream of its updates both stay in it.
constexpr int64_t kPartitionRangeBytes = int64_t(1) << 20;

// An update as the partition stores it: its bin's offset within its range, and its value.
template <class T>
struct PartEntry {
  uint32_t at;
  T value;
};

// The partition's buffer: each call writes it once, so its pages are asked for as huge pages
// (a fault per 4 KB page of a fresh 80 MB buffer would cost as much as a pass over it).
template <class E>
class PartBuffer {
 public:
  explicit PartBuffer(int64_t n) {
    static_assert(std::is_trivially_copyable_v<E>, "entries are written before they are read");
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = std::max<size_t>(size_t(n) * sizeof(E), 1);
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    p_ = static_cast<E*>(std::aligned_alloc(kHuge, rounded));
    if (!p_) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p_, rounded, MADV_HUGEPAGE);
#endif
  }
  ~PartBuffer() { std::free(p_); }
  PartBuffer(const PartBuffer&) = delete;
  PartBuffer& operator=(const PartBuffer&) = delete;
  E* get() const { return p_; }

 private:
  E* p_ = nullptr;
};

// log2 of the bins in one range for elements of `itemsize` bytes.
inline int partition_range_shift(int64_t itemsize) {
  int s = 0;
  while ((int64_t(1) << (s + 1)) * itemsize <= kPartitionRangeBytes) ++s;
  return s;
}

// Counts the updates [j0, j1) of each range into counts (ranges of 2^shift bins), checking
// each index; false at the first one `valid` rejects. Four tables of counts taken in turn: with
// few ranges, consecutive updates of one range would otherwise wait on each other's count.
template <class KI>
bool count_ranges(const KI* idx, int64_t j0, int64_t j1, int64_t size, int shift, IndexRange valid,
                  int64_t ranges, int64_t* counts) {
  constexpr int64_t kTables = 4;
  std::vector<int64_t> tables(size_t(kTables * ranges), 0);
  int64_t* const t = tables.data();
  int64_t j = j0;
  for (; j + kTables <= j1; j += kTables)
    for (int64_t q = 0; q < kTables; ++q) {
      const KI v = idx[j + q];
      if (uint64_t(int64_t(v)) >= uint64_t(size) && !valid(v)) return false;  // rare
      ++t[q * ranges + (wrap_index(v, size) >> shift)];
    }
  for (; j < j1; ++j) {
    const KI v = idx[j];
    if (!valid(v)) return false;
    ++t[wrap_index(v, size) >> shift];
  }
  for (int64_t r = 0; r < ranges; ++r)
    counts[r] = t[r] + t[ranges + r] + t[2 * ranges + r] + t[3 * ranges + r];
  return true;
}

// Writes the updates [j0, j1) as entries at next[range], in order (indices already checked).
// Each range's entries are staged a cache line at a time and whole lines are streamed: stores
// to hundreds of places at once would each read their line from memory first. A line this
// call does not fill from its start (the first and last of a range's run) is written with
// plain stores, as another thread may write the rest of it.
template <class T, class KI>
void place_ranges(const KI* idx, const T* upd, int64_t j0, int64_t j1, int64_t size, int shift,
                  int64_t ranges, int64_t* next, PartEntry<T>* entries) {
  using E = PartEntry<T>;
  constexpr int64_t kPerLine = 64 / int64_t(sizeof(E));
  static_assert(64 % sizeof(E) == 0, "entries tile a cache line");
  struct alignas(64) Line {
    E e[kPerLine];
  };
  const std::unique_ptr<Line[]> lines(new Line[size_t(ranges)]);
  // each staged line's first slot written by this call
  std::vector<uint8_t> first(static_cast<size_t>(ranges));
  for (int64_t r = 0; r < ranges; ++r) first[size_t(r)] = uint8_t(next[r] % kPerLine);
  const int64_t mask = (int64_t(1) << shift) - 1;
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t a = wrap_index(idx[j], size), r = a >> shift;
    const int64_t at = next[r]++, slot = at % kPerLine;
    lines[r].e[slot] = E{uint32_t(a & mask), upd[j]};
    if (slot != kPerLine - 1) continue;
    E* const line = entries + (at - slot);
    if (first[size_t(r)] == 0) {
      stream_line(line, &lines[r]);
    } else {
      std::memcpy(line + first[size_t(r)], lines[r].e + first[size_t(r)],
                  size_t(kPerLine - first[size_t(r)]) * sizeof(E));
      first[size_t(r)] = 0;
    }
  }
  for (int64_t r = 0; r < ranges; ++r) {
    const int64_t end = next[r] % kPerLine, from = first[size_t(r)];
    if (end > from)
      std::memcpy(entries + (next[r] - end + from), lines[r].e + from,
                  size_t(end - from) * sizeof(E));
  }
  streaming_fence();
}

// Folds the entries [e, e + n) of one range into table, in order.
template <class Op, class T>
void fold_range_entries(const PartEntry<T>* e, int64_t n, T* table) {
  int64_t k = 0;
  if constexpr (selects_without_nan_v<Op, T>) {
    T values[kStreamStep];
    for (; k + kStreamStep <= n; k += kStreamStep) {
      for (int64_t q = 0; q < kStreamStep; ++q) values[q] = e[k + q].value;
      if (step_has_nan(values, kStreamStep)) {
        for (int64_t q = k; q < k + kStreamStep; ++q)
          table[e[q].at] = fold_into_storage<Op>(table[e[q].at], e[q].value);
        continue;
      }
      for (int64_t q = k; q < k + kStreamStep; ++q)
        table[e[q].at] = select_no_nan<Op>(table[e[q].at], e[q].value);
    }
  }
  for (; k < n; ++k) table[e[k].at] = fold_into_storage<Op>(table[e[k].at], e[k].value);
}

// The updates of one line partitioned by range of bins: range r's entries are
// entries[starts[r], starts[r + 1]), in C order.
template <class T>
struct Partition {
  int shift = 0;  // 2^shift bins per range
  int64_t ranges = 0;
  std::vector<int64_t> starts;
  std::unique_ptr<PartBuffer<PartEntry<T>>> buffer;
  const PartEntry<T>* entries() const { return buffer->get(); }
};

// Partitions the n updates (idx, upd) of one line of `size` bins, stably, checking each index
// first; false at a bad one, before anything is written.
template <class T, class KI>
bool partition_updates(const KI* idx, const T* upd, int64_t n, int64_t size, IndexRange valid,
                       Partition<T>& p) {
  p.shift = partition_range_shift(int64_t(sizeof(T)));
  const int shift = p.shift;
  const int64_t ranges = p.ranges = (size + (int64_t(1) << shift) - 1) >> shift;
  const int64_t input_bytes = n * int64_t(sizeof(KI) + sizeof(T));
  // One chunk of the updates per thread: the counts of each chunk give it its own places in
  // every range, after those of the chunks before it (a stable partition).
  const int64_t chunks = threads_for(n, input_bytes);
  std::vector<int64_t> counts(size_t(chunks * ranges), 0);
  std::atomic<bool> bad{false};
  parallel_for(chunks, input_bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      if (!count_ranges(idx, n * k / chunks, n * (k + 1) / chunks, size, shift, valid, ranges,
                        counts.data() + k * ranges))
        bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) return false;
  // counts become each chunk's next place in each range
  p.starts.assign(size_t(ranges + 1), 0);
  int64_t at = 0;
  for (int64_t r = 0; r < ranges; ++r) {
    p.starts[size_t(r)] = at;
    for (int64_t k = 0; k < chunks; ++k) {
      int64_t& c = counts[size_t(k * ranges + r)];
      const int64_t here = c;
      c = at;
      at += here;
    }
  }
  p.starts[size_t(ranges)] = at;
  p.buffer = std::make_unique<PartBuffer<PartEntry<T>>>(n);
  PartEntry<T>* const entries = p.buffer->get();
  parallel_for(chunks, input_bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      place_ranges(idx, upd, n * k / chunks, n * (k + 1) / chunks, size, shift, ranges,
                   counts.data() + k * ranges, entries);
  });
  return true;
}

// out = data with each range's entries folded in (out may be data): each range is copied into
// a scratch that stays in cache, folded there and written out once; folded in out, its lines
// would be read from memory before being written.
template <class Op, class T>
void fold_ranges(const Partition<T>& p, const T* data, T* out, int64_t size) {
  const int64_t span = int64_t(1) << p.shift, n = p.starts.back();
  const int64_t table_bytes = size * int64_t(sizeof(T));
  const bool in_place = out == data, streaming = use_streaming_stores(table_bytes);
  const PartEntry<T>* const entries = p.entries();
  parallel_for(p.ranges, 2 * table_bytes + n * int64_t(sizeof(PartEntry<T>)),
               [&](int64_t r0, int64_t r1) {
                 const std::unique_ptr<T[]> scratch(in_place ? nullptr : new T[size_t(span)]);
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t b = r * span, len = std::min(span, size - b);
                   const PartEntry<T>* e = entries + p.starts[size_t(r)];
                   const int64_t m = p.starts[size_t(r + 1)] - p.starts[size_t(r)];
                   if (in_place) {
                     fold_range_entries<Op>(e, m, out + b);
                     continue;
                   }
                   std::memcpy(scratch.get(), data + b, size_t(len) * sizeof(T));
                   fold_range_entries<Op>(e, m, scratch.get());
                   with_writer(streaming, out + b,
                               [&](auto& w) { w.write(scratch.get(), size_t(len) * sizeof(T)); });
                 }
               });
}

// out = data folded with the n updates (idx, upd) of one contiguous line of `size` bins,
// use_init_val, in C order per bin. Returns false, with out untouched, if an index is bad.
// out may be data.
template <class Op, class T, class KI>
bool fold_partitioned(const KI* idx, const T* upd, const T* data, T* out, int64_t n, int64_t size,
                      IndexRange valid) {
  Partition<T> p;
  if (!partition_updates(idx, upd, n, size, valid, p)) return false;
  fold_ranges<Op>(p, data, out, size);
  return true;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
