// ScatterElementsUpdate's fold of a 1-D histogram whose table is larger than the last-level
// cache. Reaching each target at random costs a miss to memory per update, and a float sum
// folded in place cannot be split between threads without changing its bits. So the updates
// are first written out, stably, by range of bins, and then each range is copied from data
// into a scratch that stays in cache, folded there in C order and streamed to out:
//
// - each bin sees its updates in C order, so the bits are those of the C-order fold at any
//   thread count;
// - the threads split both passes (the updates to write out, then the ranges to fold);
// - the first pass checks every index before out is written, so a bad one leaves it untouched.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "scatterkit/copy.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/elements/walk.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/prefetch.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/scratch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Ranges a table is cut into. With a few hundred ranges and more the write of each update to
// its range is fast; with fewer, consecutive updates often hit the same range's count and the
// writes slow down several times (bench/README.md).
constexpr int kRangeFoldRangesLog2 = 10;

// A range's bytes: at least a page, at most twice a core's L2 (a range folds from L3 well).
constexpr int64_t kRangeMinBytes = int64_t(4) << 10;
constexpr int64_t kRangeMaxBytes = int64_t(1) << 20;

// log2 of a range's bins for a table of `size` elements of `itemsize` bytes.
inline int range_shift(int64_t size, int64_t itemsize) {
  int log2_size = 0;
  while ((int64_t(1) << log2_size) < size) ++log2_size;
  int lo = 0, hi = 0;
  while ((itemsize << (lo + 1)) <= kRangeMinBytes) ++lo;
  while ((itemsize << (hi + 1)) <= kRangeMaxBytes) ++hi;
  return std::clamp(log2_size - kRangeFoldRangesLog2, lo, hi);
}

// One update written out to its range: the bin's offset in the range and the value.
template <class T>
struct RangeEntry {
  uint32_t at;
  T value;
};

// Updates concentrated enough for one thread to fold them in place: the ranges holding more
// than kRangeFoldHotShare times their share of them together hold more than
// kRangeFoldHotPercent percent. Those bins then mostly stay in cache for the in-place fold
// (fold_line_in_memory, histogram.hpp), which beats writing their updates out; with less on
// them, the rest of the updates miss to memory in place and going by ranges wins (1 thread,
// a share of the updates on 1% of the bins and the rest spread: crossing over at 10-20% on
// them at 16M bins and 25-35% at 128M, bench/README.md).
constexpr int64_t kRangeFoldHotShare = 4;
constexpr int64_t kRangeFoldHotPercent = 30;

enum class RangeFold { kFolded, kBadIndex, kConcentrated };

// Sums the updates on hot ranges (see above) of `total` updates in `ranges` ranges.
class HotShare {
 public:
  HotShare(int64_t total, int64_t ranges) : total_(total), ranges_(ranges) {}
  void add_range(int64_t count) {
    if (count * ranges_ > kRangeFoldHotShare * total_) on_hot_ += count;
  }
  // Whether more than `percent` percent of the updates are on hot ranges.
  bool above(int64_t percent) const { return on_hot_ * 100 > percent * total_; }
  bool concentrated() const { return above(kRangeFoldHotPercent); }

 private:
  int64_t total_, ranges_, on_hot_ = 0;
};

// Indices sampled, evenly spaced, to find concentrated updates before counting them all.
constexpr int64_t kRangeFoldSamples = 4096;

// The hot share of a sample of the indices (bad ones left out: the count finds them).
template <class KI>
HotShare sample_share(const KI* idx, int64_t n, int64_t size, IndexRange valid, int shift,
                      int64_t ranges) {
  const int64_t samples = std::min(n, kRangeFoldSamples);
  std::vector<int32_t> count(size_t(ranges), 0);
  for (int64_t s = 0; s < samples; ++s) {
    const KI v = idx[s * n / samples];
    if (valid(v)) ++count[size_t(wrap_index(v, size) >> shift)];
  }
  HotShare share(samples, ranges);
  for (const int32_t c : count) share.add_range(c);
  return share;
}

// The bin of index v in a table of `size` (negative indices wrap); false if `valid` rejects v.
template <class KI>
SCATTERKIT_ALWAYS_INLINE bool range_fold_bin(KI v, int64_t size, IndexRange valid, int64_t& a) {
  a = int64_t(v);
  if (__builtin_expect(uint64_t(a) < uint64_t(size), 1)) return true;
  if (!valid(v)) return false;
  a = wrap_index(v, size);
  return true;
}

// Counts updates [j0, j1) by range into count[r]; false at the first bad index. The arguments
// are values, not a lambda's references: a store to a count could otherwise alias them, and
// reloading them after each one made the loop three times slower.
template <class KI>
bool count_part(const KI* idx, int64_t j0, int64_t j1, int64_t size, IndexRange valid, int shift,
                int64_t* count) {
  for (int64_t j = j0; j < j1; ++j) {
    int64_t a;
    if (!range_fold_bin(idx[j], size, valid, a)) return false;
    ++count[a >> shift];
  }
  return true;
}

// Updates whose places are taken from the counts before any of them is written out: stores of
// entries between the loads and stores of the counts made updates concentrated on a few ranges
// 1.6-1.9x slower to write out (bench/README.md).
constexpr int64_t kWriteOutBlock = 64;

// Percent of the updates on hot ranges (HotShare, counted) above which the write-out fetches each
// entry's line into L2 a block ahead. Entries written at a fast pace to a few dozen places
// are slow to write without (a fifth to a half of the write-out's time with a quarter to most
// of the updates on hot ranges); spread updates, a few percent faster without (bench/README.md).
constexpr int64_t kWriteOutFetchHotPercent = 25;

// Takes the places of updates [b, b + len) from the counts at[]; Fetch: and fetches each
// place's line of e into L2.
template <bool Fetch, class T, class KI>
SCATTERKIT_ALWAYS_INLINE void take_places(const KI* idx, int64_t b, int64_t len, int64_t size,
                                          int shift, int64_t* at, const RangeEntry<T>* e,
                                          int64_t* place) {
  for (int64_t k = 0; k < len; ++k) {
    place[k] = at[wrap_index(idx[b + k], size) >> shift]++;  // checked by count_part
    if constexpr (Fetch) prefetch_l2(e + place[k]);
  }
}

// Writes updates [j0, j1) out to their ranges, range r's from at[r] on (advanced as it goes).
// Fetch: each block's places are taken, and their lines fetched, while the block before is
// written. Values as arguments for the same reason as count_part.
template <bool Fetch, class T, class KI>
void write_out_part(const KI* idx, const T* upd, int64_t j0, int64_t j1, int64_t size, int shift,
                    int64_t* at, RangeEntry<T>* e) {
  const int64_t bin_mask = (int64_t(1) << shift) - 1;
  int64_t places[2][kWriteOutBlock];
  if (Fetch && j0 < j1)
    take_places<true>(idx, j0, std::min(kWriteOutBlock, j1 - j0), size, shift, at, e, places[0]);
  for (int64_t b = j0, i = 0; b < j1; b += kWriteOutBlock, i ^= 1) {
    const int64_t len = std::min(kWriteOutBlock, j1 - b), next = b + kWriteOutBlock;
    int64_t* const place = places[i];
    if (!Fetch)
      take_places<false>(idx, b, len, size, shift, at, e, place);
    else if (next < j1)
      take_places<true>(idx, next, std::min(kWriteOutBlock, j1 - next), size, shift, at, e,
                        places[i ^ 1]);
    for (int64_t k = 0; k < len; ++k)
      e[place[k]] = RangeEntry<T>{uint32_t(wrap_index(idx[b + k], size) & bin_mask), upd[b + k]};
  }
}

// Folds the n entries at p of one range into its scratch s, in order, reading them ahead in
// two stages (prefetch_inputs_ahead): left to the hardware prefetchers, a range's entries
// arrive too slowly for the fold, which then waits on them (bench/README.md).
template <class Op, class T>
void fold_range(const RangeEntry<T>* p, int64_t n, T* s) {
  const auto fold = [&](int64_t k) { s[p[k].at] = fold_into_storage<Op>(s[p[k].at], p[k].value); };
  for (int64_t j = read_ahead_steps(0, n, n, fold, p); j < n; ++j) fold(j);
}

// The bytes of a page, for at_page_offset_of.
constexpr uintptr_t kPageBytes = 4096;

// The address in block (kPageBytes more than it must hold) at the same offset in its page as
// `like`. A range streamed from its scratch to out at another offset can have each load wait for
// the streaming stores just before it whose addresses agree with it in their low 12 bits (4K
// aliasing): with out 16 bytes past a page, as NumPy's large arrays are, and the scratch on a
// page's start, the stream out took 2.2x as long (bench/README.md).
template <class T>
T* at_page_offset_of(char* block, const T* like) {
  const uintptr_t delta = (uintptr_t(like) - uintptr_t(block)) & (kPageBytes - 1);
  return reinterpret_cast<T*>(block + delta);
}

// Ranges [r0, r1) of a table of `size` bins in ranges of 2^shift: each copied from data into a
// scratch in cache, its entries folded in (range r's: e[start[r]] up to e[start[r + 1]]) and
// written to out.
template <class Op, class T>
void fold_ranges(const T* data, T* out, int64_t size, int shift, const RangeEntry<T>* e,
                 const int64_t* start, int64_t r0, int64_t r1) {
  const int64_t range_bins = int64_t(1) << shift;
  const bool streaming = use_streaming_stores(size * int64_t(sizeof(T)));
  const std::unique_ptr<char[]> block(new char[size_t(range_bins) * sizeof(T) + kPageBytes]);
  T* const s = at_page_offset_of(block.get(), out);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = r << shift, len = std::min(range_bins, size - b);
    std::memcpy(s, data + b, size_t(len) * sizeof(T));
    fold_range<Op>(e + start[r], start[r + 1] - start[r], s);
    with_writer(streaming, out + b,
                [&](auto& writer) { writer.write(s, size_t(len) * sizeof(T)); });
  }
}

// What folding a range costs next to copying one of its bins through the scratch: an entry
// is read and folded into a random bin in cache, a bin is copied in and streamed out. With the
// entries read ahead (fold_range), an entry costs about two bins at 16M bins and four at 128M
// on two threads (bench/README.md, Kernel choices).
constexpr int64_t kEntryCostInBins = 3;

// The first range of thread k of `threads` when the ranges are split between them by cost
// (kEntryCostInBins), not by count: updates concentrated on a few ranges would otherwise
// leave their thread folding most of them while the others wait. `cost_before[r]` is the
// cost of ranges [0, r), for r up to the number of ranges.
inline int64_t first_range_of(const std::vector<int64_t>& cost_before, int64_t k, int64_t threads) {
  const int64_t goal = cost_before.back() * k / threads;
  return std::lower_bound(cost_before.begin(), cost_before.end(), goal) - cost_before.begin();
}

// The n updates of one contiguous line of `size` bins sorted into ranges of bins (see the top
// of this file), then fold(e, start, shift, r0, r1) called on threads that take the ranges
// [r0, r1) by cost: range r's entries are e[start[r]] up to e[start[r + 1]], in C order. With
// may_decline, on one thread, updates too concentrated to pay are declined before any is
// written (kConcentrated; the indices may not have been checked). kBadIndex at a bad index.
template <class T, class KI, class Fold>
RangeFold by_ranges(const KI* idx, const T* upd, int64_t n, int64_t size, IndexRange valid,
                    bool may_decline, Fold&& fold) {
  using Entry = RangeEntry<T>;
  const int shift = range_shift(size, int64_t(sizeof(T)));
  const int64_t range_bins = int64_t(1) << shift, ranges = ((size - 1) >> shift) + 1;
  const int64_t table_bytes = size * int64_t(sizeof(T));
  const int64_t input_bytes = n * int64_t(sizeof(KI) + sizeof(T) + sizeof(Entry));
  // One part of the updates per thread, in C order: part k's entries of a range follow part
  // k - 1's, so every range's entries are in C order whatever the thread count.
  const int64_t parts = threads_for(n, input_bytes);
  may_decline = may_decline && parts == 1;
  if (may_decline && sample_share(idx, n, size, valid, shift, ranges).concentrated())
    return RangeFold::kConcentrated;
  std::vector<int64_t> next(size_t(parts * ranges), 0);  // part k's counts, then places
  std::atomic<bool> bad{false};
  parallel_for(parts, input_bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      if (!count_part(idx, n * k / parts, n * (k + 1) / parts, size, valid, shift,
                      next.data() + k * ranges))
        bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) return RangeFold::kBadIndex;
  std::vector<int64_t> start(size_t(ranges + 1));
  int64_t place = 0;
  HotShare share(n, ranges);
  for (int64_t r = 0; r < ranges; ++r) {
    start[size_t(r)] = place;
    for (int64_t k = 0; k < parts; ++k) {
      int64_t& c = next[size_t(k * ranges + r)];
      const int64_t count = c;
      c = place;
      place += count;
    }
    share.add_range(place - start[size_t(r)]);
  }
  // Concentrated updates the sample missed.
  if (may_decline && share.concentrated()) return RangeFold::kConcentrated;
  start[size_t(ranges)] = place;
  // On huge pages: each range's entries are written at random among a thousand places,
  // which with 4 KB pages would miss the TLB as well.
  const ScratchArray<Entry> entries(n);
  Entry* const e = entries.get();
  const bool fetch = share.above(kWriteOutFetchHotPercent);
  parallel_for(parts, input_bytes, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t j0 = n * k / parts, j1 = n * (k + 1) / parts;
      int64_t* const at = next.data() + k * ranges;
      if (fetch)
        write_out_part<true>(idx, upd, j0, j1, size, shift, at, e);
      else
        write_out_part<false>(idx, upd, j0, j1, size, shift, at, e);
    }
  });
  std::vector<int64_t> cost_before(size_t(ranges + 1), 0);
  for (int64_t r = 0; r < ranges; ++r)
    cost_before[size_t(r + 1)] = cost_before[size_t(r)] +
                                 kEntryCostInBins * (start[size_t(r + 1)] - start[size_t(r)]) +
                                 std::min(range_bins, size - (r << shift));
  const int64_t fold_bytes = 2 * table_bytes + input_bytes;
  const int64_t threads = threads_for(ranges, fold_bytes);
  parallel_for(threads, fold_bytes, [&](int64_t k0, int64_t k1) {
    fold(static_cast<const Entry*>(e), static_cast<const int64_t*>(start.data()), shift,
         first_range_of(cost_before, k0, threads), first_range_of(cost_before, k1, threads));
  });
  return RangeFold::kFolded;
}

// out = data with the n updates of one contiguous line folded in by Op, in C order, going by
// ranges of bins. Out is untouched unless it returns kFolded: on a bad index, and on one
// thread on updates too concentrated to pay (the caller then folds in place).
template <class Op, class T, class KI>
RangeFold fold_line_by_ranges(const KI* idx, const T* upd, const T* data, T* out, int64_t n,
                              int64_t size, IndexRange valid) {
  return by_ranges(idx, upd, n, size, valid, true,
                   [&](const RangeEntry<T>* e, const int64_t* start, int shift, int64_t r0,
                       int64_t r1) { fold_ranges<Op>(data, out, size, shift, e, start, r0, r1); });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
