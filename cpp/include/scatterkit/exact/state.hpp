// Exact sums, the public layer over the superaccumulator (superaccumulator.hpp): mergeable
// states, for aggregation in several places (Spark tasks, batches, threads): fold updates
// into states, merge states, finish them. Any split of the updates, merged in any order and
// grouping, finishes to the bits of scatter_nd_update(..., exact = true) over all of them.
//
//   std::vector<uint64_t> st(n * exact_state_words(DType::kFloat32));   // zeros: empty
//   exact_state_fold(DType::kFloat32, st.data(), {n}, indices, updates);
//   exact_state_merge(DType::kFloat32, st.data(), other.data(), n);
//   exact_state_finish(DType::kFloat32, st.data(), n, false, out.data());
//
// A state is exact_state_words(dtype) uint64 words per element, one superaccumulator each
// (superaccumulator.hpp describes the words). All zeros is the empty state (no terms).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/exact/bounded_slots.hpp"
#include "scatterkit/exact/double_slots.hpp"
#include "scatterkit/exact/line_fold.hpp"
#include "scatterkit/exact/state_merge.hpp"
#include "scatterkit/exact/superaccumulator.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {

namespace detail {

template <class F>
decltype(auto) visit_float(const char* op, DType t, F&& f) {
  switch (t) {
    case DType::kFloat16: return f(TypeTag<float16>{});
    case DType::kBFloat16: return f(TypeTag<bfloat16>{});
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    default: break;
  }
  throw_type_error(op,
                   std::string("exact sums are for float16, bfloat16, float32 and float64, not ") +
                       dtype_name(t));
}

inline void check_states(const char* op, DType dtype, const uint64_t* states, int64_t n) {
  visit_float(op, dtype, [&](auto tag) {
    using L = ExactLayout<typename decltype(tag)::type>;
    for (int64_t x = 0; x < n; ++x)
      if (!valid_flags(states[x * L::kWords + L::kFlags]))
        throw_value_error(
            op, "element " + std::to_string(x) + " is not an exact-sum state (unknown flag bits)");
  });
}

}  // namespace detail

namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Terms at most this many at a time through one table of slots: their counts are 32-bit.
constexpr int64_t kSlotFoldTerms = int64_t(1) << 31;

// fold_states_through_slots's way for float16, bfloat16 and float32 terms into at most
// kBoundedSlotsMaxElements elements: bounded double slots (bounded_slots.hpp), one per part.
template <class T, class I>
bool fold_states_through_bounded_slots(uint64_t* states, int64_t elements, const I* tgt,
                                       const T* upd, int64_t n, int64_t parts) {
  const int64_t bytes = n * int64_t(sizeof(I) + sizeof(T));
  for (int64_t p0 = 0; p0 < n; p0 += kSlotFoldTerms) {
    const int64_t m = std::min(kSlotFoldTerms, n - p0);
    std::vector<std::unique_ptr<BoundedSlots<T>>> tables(static_cast<size_t>(parts));
    std::atomic<bool> bad{false};
    parallel_for(parts, bytes, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        tables[size_t(k)] = std::make_unique<BoundedSlots<T>>(elements);  // on its thread's pages
        const int64_t a = p0 + m * k / parts, b = p0 + m * (k + 1) / parts;
        if (!fold_bounded(*tables[size_t(k)], tgt + a, upd + a, b - a,
                          IndexRange{-elements, elements}))
          bad.store(true, std::memory_order_relaxed);
      }
    });
    if (bad.load()) return false;
    for (const auto& t : tables) t->add_to(states);
  }
  return true;
}

// Folds the n terms upd[p] into the states of `elements` elements at the flat targets tgt[p]
// (a negative one wraps once) through tables of double slots, which are then added to the
// states: a sum in a double slot costs an add (the exact sums' fast path, line_fold.hpp), where a
// state costs a superaccumulator's words per term. Threads split the terms, each into a table of
// its own: the sums being exact, any split gives the same words. A slot holds its terms' exact
// sum (or has moved to an exact state, merged in), and a slot's sum is -0 exactly when every
// term was -0 (an empty slot's -0 adds nothing), so the flags come out as the terms' own.
// Returns false, with the states unchanged, if a target lies outside [-elements, elements) and n
// is at most kSlotFoldTerms (else the targets must have been checked).
// Float terms into a small tensor go through bounded double slots instead
// (fold_states_through_bounded_slots).
template <class T, class I>
bool fold_states_through_slots(uint64_t* states, int64_t elements, const I* tgt, const T* upd,
                               int64_t n) {
  using L = ExactLayout<T>;
  const int64_t bytes = n * int64_t(sizeof(I) + sizeof(T));
  // a table per thread, while the tables stay small next to the terms
  const int64_t parts =
      std::max<int64_t>(1, std::min<int64_t>(threads_for(n, bytes), 1 + 2 * n / elements));
  if constexpr (bounded_terms_v<T>)
    if (elements <= kBoundedSlotsMaxElements)
      return fold_states_through_bounded_slots(states, elements, tgt, upd, n, parts);
  std::unique_ptr<double[]> tab(new double[size_t(parts * elements)]);
  std::unique_ptr<uint32_t[]> cnt(new uint32_t[size_t(parts * elements)]);
  std::vector<ExactSlots<T>> slots(static_cast<size_t>(parts));
  const bool fetch = elements * int64_t(sizeof(double)) > (int64_t(1) << 20);
  for (int64_t p0 = 0; p0 < n; p0 += kSlotFoldTerms) {
    const int64_t m = std::min(kSlotFoldTerms, n - p0);
    std::atomic<bool> bad{false};
    parallel_for(parts, bytes, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        double* t = tab.get() + k * elements;
        uint32_t* c = cnt.get() + k * elements;
        std::fill_n(t, elements, -0.0);
        std::fill_n(c, elements, 0u);
        slots[size_t(k)] = ExactSlots<T>();
        ExactBound bound;
        if constexpr (bounded_terms_v<T>) bound.open();
        const int64_t a = p0 + m * k / parts, b = p0 + m * (k + 1) / parts;
        if (!fold_exact_line(tgt + a, upd + a, b - a, elements, IndexRange{-elements, elements}, t,
                             c, slots[size_t(k)], bound, fetch))
          bad.store(true, std::memory_order_relaxed);
      }
    });
    if (bad.load()) return false;
    for (int64_t x = 0; x < elements; ++x) {
      uint64_t* s = states + x * L::kWords;
      for (int64_t k = 0; k < parts; ++k) {
        const double v = tab[size_t(k * elements + x)];
        if (const uint64_t* moved = slots[size_t(k)].state(v))
          merge_state<T>(s, moved);
        else
          add_value<T>(s, v);
        s[L::kCount] += cnt[size_t(k * elements + x)];
      }
    }
  }
  return true;
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// uint64 words per element of a state for `dtype` (8 for float16, bfloat16 and
// float32, 36 for float64).
inline int exact_state_words(DType dtype) {
  return detail::visit_float("exact_state_words", dtype, [](auto tag) {
    return ExactLayout<typename decltype(tag)::type>::kWords;
  });
}

// states[x] = the state of the one term values[x], for x < n.
inline void exact_state_init(DType dtype, const void* values, int64_t n, uint64_t* states) {
  detail::visit_float("exact_state_init", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using L = ExactLayout<T>;
    const T* v = static_cast<const T*>(values);
    for (int64_t x = 0; x < n; ++x) {
      uint64_t* s = states + x * L::kWords;
      std::fill_n(s, L::kWords, uint64_t(0));
      detail::add_value<T>(s, detail::exact_double(v[x]));
      s[L::kCount] = 1;
    }
  });
}

// Folds updates into the states of a tensor of `shape`, addressed as
// ScatterNDUpdate-15 addresses them: indices (..., k), updates (..., shape[k:]),
// negative indices wrapping once. `subtract` folds minus the updates. Every
// index is checked before the first state changes.
inline void exact_state_fold(DType dtype, uint64_t* states, const Shape& shape,
                             const IndexRef& indices, const TensorRef& updates,
                             bool subtract = false, const char* name = "exact_state_fold") {
  using namespace detail;
  if (updates.dtype != dtype)
    throw_type_error(name, std::string("updates dtype ") + dtype_name(updates.dtype) +
                               " does not match the states' dtype " + dtype_name(dtype));
  check_shape(name, "states", shape, 8);
  check_tensor(name, "indices", indices.data, indices.shape, index_size(indices.type));
  check_tensor(name, "updates", updates.data, updates.shape, int64_t(dtype_size(dtype)));
  const size_t rank = shape.size();
  if (rank == 0) throw_value_error(name, "the tensor must have rank >= 1");
  if (indices.shape.empty())
    throw_value_error(name, "indices must have rank >= 1 (the last axis holds the index tuples)");
  const int64_t k = indices.shape.back();
  if (k > int64_t(rank))
    throw_value_error(name, "indices.shape[-1] = " + std::to_string(k) +
                                " exceeds the tensor rank " + std::to_string(rank));
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  const int64_t tuples = numel(expected);
  expected.insert(expected.end(), shape.begin() + k, shape.end());
  check_updates_shape(name, updates.shape, expected);
  const int64_t slab = product(shape, size_t(k), rank);
  visit_index(indices.type, [&](auto itag) {
    using I = typename decltype(itag)::type;
    const I* idx = static_cast<const I*>(indices.data);
    const int64_t elements = numel(shape);
    // Many terms a state fold through a table of slots; with one coordinate a tuple, it checks
    // each index as it reads it, before any state changes.
    const bool through_slots = slab == 1 && !subtract && elements > 0 && tuples >= elements;
    const bool checks_as_it_folds = through_slots && k == 1 && tuples <= kSlotFoldTerms;
    if (!checks_as_it_folds) check_index_tuples(name, idx, tuples, k, shape, indices.shape, true);
    visit_float(name, dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using L = ExactLayout<T>;
      const T* upd = static_cast<const T*>(updates.data);
      if (through_slots) {
        if (k == 1) {
          if (!fold_states_through_slots(states, elements, idx, upd, tuples))
            check_index_tuples(name, idx, tuples, k, shape, indices.shape, true);  // throws
        } else {
          std::vector<int64_t> flat(static_cast<size_t>(tuples));
          for (int64_t p = 0; p < tuples; ++p)
            flat[size_t(p)] = flat_tuple(idx, p, size_t(k), shape);
          fold_states_through_slots(states, elements, flat.data(), upd, tuples);
        }
        return;
      }
      for (int64_t p = 0; p < tuples; ++p) {
        const int64_t flat = flat_tuple(idx, p, size_t(k), shape);
        for (int64_t e = 0; e < slab; ++e) {
          uint64_t* s = states + (flat * slab + e) * L::kWords;
          const double v = exact_double(upd[p * slab + e]);
          add_value<T>(s, subtract ? -v : v);
          ++s[L::kCount];
        }
      }
    });
  });
}

// into[x] += other[x] for x < n: the states of both sets of terms.
// Both are checked (a flag word of unknown bits is a ValueError) before `into` changes: the
// merge checks as it goes and undoes itself if it finds one.
inline void exact_state_merge(DType dtype, uint64_t* into, const uint64_t* other, int64_t n) {
  const char* op = "exact_state_merge";
  detail::visit_float(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using L = ExactLayout<T>;
    if (n <= 0) return;
    constexpr int64_t kOnStack = 4096;
    uint8_t on_stack[kOnStack];
    std::unique_ptr<uint8_t[]> on_heap(n > kOnStack ? new uint8_t[size_t(n)] : nullptr);
    uint8_t* saved = n > kOnStack ? on_heap.get() : on_stack;
    std::atomic<bool> bad{false};
    detail::parallel_for(n, n * L::kWords * 16, [&](int64_t b, int64_t e) {
      if (detail::merge_states_checked_on<T>(into, other, saved, b, e))
        bad.store(true, std::memory_order_relaxed);
    });
    if (!bad.load()) return;
    detail::unmerge_states<T>(into, other, saved, n);
    detail::check_states(op, dtype, into, n);  // throws, naming the first bad state
    detail::check_states(op, dtype, other, n);
  });
}

// out[x] = the sum (mean: the sum divided by the count) of states[x], rounded
// once to dtype, for every x < n whose state has terms; out[x] is left as it
// is where the state is empty.
inline void exact_state_finish(DType dtype, const uint64_t* states, int64_t n, bool mean,
                               void* out) {
  const char* op = "exact_state_finish";
  detail::check_states(op, dtype, states, n);
  detail::visit_float(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using L = ExactLayout<T>;
    T* dst = static_cast<T*>(out);
    detail::parallel_for(n, n * L::kWords * 8, [&](int64_t b, int64_t e) {
      for (int64_t x = b; x < e; ++x) {
        const uint64_t* s = states + x * L::kWords;
        if (s[L::kCount] != 0) dst[x] = detail::finish_state<T>(s, mean, s[L::kCount]);
      }
    });
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit
