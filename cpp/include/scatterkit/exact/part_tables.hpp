// Exact sums, the scaffolding the ops' table strategies share (scatter_elements.hpp): tables
// of double slots (double_slots.hpp), one per part of the updates, which threads fill apart
// and which finish to one rounded sum (or mean) per slot. Exactness makes any split of the
// updates give the same bits, so parts need no order between them. A strategy only says how
// a part folds its updates and where a slot's result goes; both are lambdas, inlined.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/scratch.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Parts for `updates` updates into `slots` slots, split along an extent of `along`: no more
// than threads_for gives, nor so many that filling and merging the tables outweighs the
// updates.
inline int64_t exact_parts(int64_t along, int64_t updates, int64_t slots, int64_t bytes) {
  return std::max<int64_t>(1,
                           std::min<int64_t>(threads_for(along, bytes), 1 + 2 * updates / slots));
}

// Bytes of tables (and counts) from which they take a scratch block (scratch.hpp): past L2.
constexpr int64_t kScratchTableBytes = int64_t(1) << 20;

// `parts` tables of `slots` double slots, with a count per slot when `counted` (a mean, or
// targets told apart from untargeted elements); up to kStackSlots of them on the stack.
template <class T, int64_t kStackSlots = 0>
class PartTables {
 public:
  // may_scratch: false where the caller holds the scratch block itself.
  PartTables(int64_t parts, int64_t slots, bool counted, bool may_scratch = true)
      : parts_(parts),
        slots_(slots),
        spilled_(size_t(parts)),
        bounds_(size_t(parts)),
        tables_(size_t(parts)) {
    const int64_t cells = parts * slots;
    if (may_scratch && cells * int64_t(counted ? 12 : 8) >= kScratchTableBytes) {
      // Tables past L2 on huge pages, their memory recycled (scratch.hpp): fresh 4 KB pages
      // cost their zeroing and a TLB miss on most updates. The counts, if any, follow the
      // tables in the same block. Smaller ones stay off the scratch block, which a small call
      // (a batch row's) would otherwise take whole.
      scratch_.reset(new ScratchArray<double>(counted ? cells + (cells + 1) / 2 : cells));
      table_ = scratch_->get();
      if (counted) counts_ = reinterpret_cast<uint32_t*>(table_ + cells);
    } else {
      if (cells > kStackSlots) heap_.reset(new double[size_t(cells)]);
      table_ = heap_ ? heap_.get() : stack_.data();
      if (counted) {
        heap_counts_.reset(new uint32_t[size_t(cells)]);
        counts_ = heap_counts_.get();
      }
    }
    for (int64_t k = 0; k < parts; ++k) tables_[size_t(k)] = table_ + k * slots;
  }
  PartTables(const PartTables&) = delete;
  PartTables& operator=(const PartTables&) = delete;

  // Fetching targets ahead pays once a table leaves L2.
  bool prefetch() const { return slots_ * int64_t(sizeof(double)) > (int64_t(1) << 20); }

  // Calls fold(k, table, counts, spilled, bound) for every part k, threads taking parts, on its
  // table of -0 (the identity of IEEE addition: -0 + -0 = -0, -0 + +0 = +0), its counts at 0
  // (null if not counted), its slots' exact states and its bound (double_slots.hpp), which the
  // fold keeps (or leaves broken: then the finish checks each sum). With first_set, fold sets
  // every slot of table 0 itself (to the initial values), which is then not filled with -0.
  // fold returns false at a bad index; then so does fill.
  template <class Fold>
  bool fill(int64_t bytes, bool first_set, Fold&& fold) {
    std::atomic<bool> bad{false};
    parallel_for(parts_, bytes, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        double* tab = table_ + k * slots_;
        if (k != 0 || !first_set) std::fill_n(tab, slots_, -0.0);
        uint32_t* cnt = counts_ ? counts_ + k * slots_ : nullptr;
        if (cnt) std::fill_n(cnt, slots_, 0u);
        // The part's bound and spilled slots on this thread's stack while it folds: side by
        // side in their vectors, parts' bounds share a cache line, which a line fold writes
        // every step (2 threads at 4K bins took 1.3-1.5x one thread's time).
        ExactSlots<T> spilled = std::move(spilled_[size_t(k)]);
        ExactBound bound = bounds_[size_t(k)];
        const bool ok = fold(k, tab, cnt, spilled, bound);
        spilled_[size_t(k)] = std::move(spilled);
        bounds_[size_t(k)] = bound;
        if (!ok) bad.store(true, std::memory_order_relaxed);
      }
    });
    return !bad.load();
  }

  // Calls put(r, value) with every slot's sum (mean: divided by its terms) and one more term
  // start(r) first, counted with use_init_val (an initial value read where the result goes; -0,
  // the identity, for none), rounded once.
  template <class Start, class Put>
  void finish_from(bool mean, bool use_init_val, int64_t bytes_per_slot, Start&& start,
                   Put&& put) const {
    parallel_for(slots_, slots_ * bytes_per_slot, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        uint64_t n = use_init_val ? 1 : 0;
        if (counts_)
          for (int64_t k = 0; k < parts_; ++k) n += counts_[size_t(k * slots_ + r)];
        put(r, finish_parts_from<T>(start(r), spilled_.data(), tables_.data(), parts_, r, mean, n));
      }
    });
  }

  // Calls put(r, value) with every slot's sum (mean: divided by its terms) rounded once. Its
  // terms: the initial value with use_init_val, and, counted, the updates. With kMayMiss, a
  // counted slot that no update hit calls miss(r) instead. Bytes per slot for the threading
  // threshold of the fast path (one table, nothing spilled): `fast_bytes`.
  template <bool kMayMiss, class Put, class Miss>
  void finish(bool mean, bool use_init_val, int64_t fast_bytes, Put&& put, Miss&& miss) const {
    if (parts_ == 1 && !counts_ && !mean && spilled_[0].empty()) {  // every slot holds its sum
      const double* tab = table_;
      parallel_for(slots_, slots_ * fast_bytes, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) put(r, round_double<T>(tab[r]));
      });
      return;
    }
    if (!counts_ && !mean && ExactBound::hold_together(bounds_.data(), parts_)) {
      // every slot holds its part's sum, and the parts' sums add exactly
      parallel_for(slots_, slots_ * (fast_bytes + (parts_ - 1) * 8), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          double sum = table_[r];
          for (int64_t k = 1; k < parts_; ++k) sum += table_[k * slots_ + r];
          put(r, round_double<T>(sum));
        }
      });
      return;
    }
    parallel_for(slots_, slots_ * int64_t(sizeof(T) + parts_ * 12), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        uint64_t n = use_init_val ? 1 : 0;
        if (counts_) {
          uint64_t hits = 0;
          for (int64_t k = 0; k < parts_; ++k) hits += counts_[size_t(k * slots_ + r)];
          if constexpr (kMayMiss) {
            if (hits == 0) {  // untargeted
              miss(r);
              continue;
            }
          }
          n += hits;
        }
        put(r, finish_parts<T>(spilled_.data(), tables_.data(), parts_, r, mean, n));
      }
    });
  }

 private:
  int64_t parts_, slots_;
  std::array<double, size_t(kStackSlots)> stack_;  // left uninitialized: fill sets it
  std::unique_ptr<ScratchArray<double>> scratch_;
  std::unique_ptr<double[]> heap_;
  std::unique_ptr<uint32_t[]> heap_counts_;
  double* table_;
  uint32_t* counts_ = nullptr;
  std::vector<ExactSlots<T>> spilled_;
  std::vector<ExactBound> bounds_;
  std::vector<const double*> tables_;
};

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
