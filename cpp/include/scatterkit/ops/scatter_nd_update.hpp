// ScatterNDUpdate-3 / -15:
//   out[indices[p, 0], ..., indices[p, k-1], ...] = reduce(out[...], updates[p, ...])
// for every index tuple p (indices.shape[:-1]) in C order; k = indices.shape[-1]
// <= rank and each tuple addresses a slab data.shape[k:] (k = 0: the whole
// tensor). v15 reductions: none, sum, sub, prod, min, max.
//
// Strategy: tuples are turned into flat slab numbers and sorted by (slab, p),
// which groups the updates of each target in C order (ops/nd/slab_groups.hpp).
// Groups (and chunks of large slabs) are independent work items, so threads
// never share a target, and each target is folded in C order: the same bits for
// any thread count. Work for one thread skips the sort and applies the tuples
// in C order. Exact sums (exact=True) are in exact/scatter_nd.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/copy.hpp"
#include "scatterkit/exact/scatter_nd.hpp"
#include "scatterkit/index.hpp"
#include "scatterkit/ops/nd/slab_groups.hpp"
#include "scatterkit/parallel.hpp"
#include "scatterkit/reduction.hpp"
#include "scatterkit/tensor.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Slab chunk per work item: bytes for moves, elements for reductions (the
// latter bounds the on-stack accumulator).
constexpr int64_t kMoveChunkBytes = int64_t(1) << 16;
constexpr int64_t kReduceChunk = 2048;

inline void scatter_nd_move(const SlabGroups& g, const char* upd, char* out, int64_t slab_bytes,
                            int64_t bytes) {
  for_each_group_chunk(g, slab_bytes, kMoveChunkBytes, bytes,
                       [&](int64_t grp, int64_t c0, int64_t c1) {
                         const int64_t last = g.order[size_t(g.group_begin[size_t(grp) + 1] - 1)];
                         std::memcpy(out + g.target[size_t(grp)] * slab_bytes + c0,
                                     upd + last * slab_bytes + c0, size_t(c1 - c0));
                       });
}

template <class Op, class T>
void scatter_nd_reduce(const SlabGroups& g, const T* upd, T* out, int64_t slab, int64_t bytes) {
  for_each_group_chunk(g, slab, kReduceChunk, bytes, [&](int64_t grp, int64_t c0, int64_t c1) {
    T* dst = out + g.target[size_t(grp)] * slab;
    const int64_t begin = g.group_begin[size_t(grp)], end = g.group_begin[size_t(grp) + 1];
    if constexpr (folds_in_place_v<Op, T>) {
      for (int64_t q = begin; q < end; ++q) {
        const T* src = upd + g.order[size_t(q)] * slab;
        for (int64_t e = c0; e < c1; ++e) dst[e] = Op::combine(dst[e], src[e]);
      }
    } else {
      typename Op::Acc acc[kReduceChunk];
      for (int64_t e = c0; e < c1; ++e) acc[e - c0] = Op::load(dst[e]);
      for (int64_t q = begin; q < end; ++q) {
        const T* src = upd + g.order[size_t(q)] * slab;
        for (int64_t e = c0; e < c1; ++e) acc[e - c0] = Op::combine(acc[e - c0], src[e]);
      }
      for (int64_t e = c0; e < c1; ++e) dst[e] = Op::store(acc[e - c0], end - begin + 1);
    }
  });
}

// Few updates (one thread's worth): apply them one by one in C order, which is
// the definition itself; grouping by target only exists so that threads never
// share one. Only where each step is exact in T (no wider accumulator), so the
// bits equal the grouped path's.
template <class KI, class Step>
void scatter_nd_in_order(const KI* idx, int64_t tuples, size_t k, const Shape& data, Step&& step) {
  for (int64_t p = 0; p < tuples; ++p) step(flat_tuple(idx, p, k, data), p);
}

// The attribute and shape rules, checked before any input is copied or read.
inline void check_nd_call(const char* op, const TensorRef& data, const IndexRef& indices,
                          const TensorRef& updates, const void* out, Reduction reduction) {
  check_reduction(op, reduction, data.dtype,
                  {Reduction::kNone, Reduction::kSum, Reduction::kSub, Reduction::kProd,
                   Reduction::kMin, Reduction::kMax});
  const size_t rank = data.shape.size();
  if (rank == 0) throw_value_error(op, "data must have rank >= 1, got a 0-D tensor");
  if (indices.shape.empty())
    throw_value_error(op, "indices must have rank >= 1 (the last axis holds the index tuples)");
  const size_t k = size_t(indices.shape.back());
  if (indices.shape.back() > int64_t(rank))
    throw_value_error(op, "indices.shape[-1] = " + std::to_string(indices.shape.back()) +
                              " exceeds the data rank " + std::to_string(rank));
  const Shape batch(indices.shape.begin(), indices.shape.end() - 1);
  Shape expected = batch;
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  const bool single_element_ok = expected.empty() && numel(updates.shape) == 1;
  if (!single_element_ok) check_updates_shape(op, updates.shape, expected);
  if (numel(data.shape) != 0 && out == nullptr) throw_value_error(op, "out is a null pointer");
}

// scatter_nd_update for one index type, on inputs the public entry has checked (buffers,
// element types, check_nd_call) and set apart from out (data may be out). A template of its
// own, not inline, so that a build may compile it once (SCATTERKIT_EXTERN_KERNELS).
template <class I>
void scatter_nd_update_for_index(const TensorRef& data, const I* raw, const Shape& ishape,
                                 const TensorRef& updates, void* out, Reduction reduction,
                                 const OpOptions& options) {
  using KI = kernel_index_t<I>;
  const char* op = op_name(options, "scatter_nd_update");
  const size_t rank = data.shape.size(), k = size_t(ishape.back());
  const int64_t tuples = product(ishape, 0, ishape.size() - 1);
  const int64_t slab = product(data.shape, k, rank);
  const bool exact = exact_applies(op, options, data.dtype, reduction, kNDExactReductions);
  // Each coordinate against its own axis (the shared parallel scan), then,
  // only on failure, the first offender in C order for the message.
  const int64_t kk = int64_t(k);
  bool bad = false;
  for (int64_t j = 0; j < kk && !bad; ++j)
    bad = any_index_out_of_range(raw, tuples, kk, j, data.shape[size_t(j)],
                                 options.allow_negative_indices);
  if (bad)
    check_index_tuples(op, raw, tuples, kk, data.shape, ishape, options.allow_negative_indices);
  parallel_copy(out, data.data, numel(data.shape) * int64_t(data.itemsize));
  if (tuples == 0 || slab == 0) return;
  const KI* idx = reinterpret_cast<const KI*>(raw);
  const int64_t bytes = tuples * slab * int64_t(data.itemsize) * 2;
  const bool in_order = threads_for(tuples, bytes) == 1;
  if (reduction == Reduction::kNone) {
    const int64_t slab_bytes = slab * int64_t(data.itemsize);
    const char* upd = static_cast<const char*>(updates.data);
    char* dst = static_cast<char*>(out);
    if (in_order)
      scatter_nd_in_order(idx, tuples, k, data.shape, [&](int64_t t, int64_t p) {
        std::memcpy(dst + t * slab_bytes, upd + p * slab_bytes, size_t(slab_bytes));
      });
    else
      scatter_nd_move(group_by_slab(idx, tuples, k, data.shape), upd, dst, slab_bytes, bytes);
    return;
  }
  visit_arithmetic(op, data.dtype, [&](auto type) {
    using T = typename decltype(type)::type;
    visit_reduction<T, ReductionSet<Reduction::kSum, Reduction::kSub, Reduction::kProd,
                                    Reduction::kMin, Reduction::kMax>>(
        op, reduction,
        [&](auto red) {
          using Op = typename decltype(red)::type;
          const T* upd = static_cast<const T*>(updates.data);
          T* dst = static_cast<T*>(out);
          if constexpr (is_float_v<T>) {
            if (exact && (reduction == Reduction::kSum || reduction == Reduction::kSub)) {
              exact_nd_sum(group_by_slab(idx, tuples, k, data.shape), upd, dst, slab,
                           reduction == Reduction::kSub, bytes);
              return;
            }
          }
          if constexpr (folds_in_place_v<Op, T>) {
            if (in_order) {
              scatter_nd_in_order(idx, tuples, k, data.shape, [&](int64_t t, int64_t p) {
                T* target = dst + t * slab;
                const T* src = upd + p * slab;
                for (int64_t e = 0; e < slab; ++e) target[e] = Op::combine(target[e], src[e]);
              });
              return;
            }
          }
          scatter_nd_reduce<Op>(group_by_slab(idx, tuples, k, data.shape), upd, dst, slab, bytes);
        },
        exact && (reduction == Reduction::kMin || reduction == Reduction::kMax));
  });
}

// scatter_nd_update on inputs the public entry has checked and set apart from out.
inline void scatter_nd_update_unaliased(const TensorRef& data, const IndexRef& indices,
                                        const TensorRef& updates, void* out, Reduction reduction,
                                        const OpOptions& options) {
  visit_index(indices.type, [&](auto tag) {
    using I = typename decltype(tag)::type;
    scatter_nd_update_for_index(data, static_cast<const I*>(indices.data), indices.shape, updates,
                                out, reduction, options);
  });
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// Type-erased ScatterNDUpdate (v15 semantics; v3 with
// options.allow_negative_indices = false and reduction none). Inputs that share memory with out
// otherwise are read from copies.
inline void scatter_nd_update(const TensorRef& data, const IndexRef& indices,
                              const TensorRef& updates, void* out,
                              Reduction reduction = Reduction::kNone,
                              const OpOptions& options = {}) {
  const char* op = detail::op_name(options, "scatter_nd_update");
  detail::check_scatter_inputs(op, data, indices, updates);
  detail::check_nd_call(op, data, indices, updates, out, reduction);
  detail::ApartFromOut apart(data, out);
  detail::scatter_nd_update_unaliased(apart.data(data), apart.indices(indices),
                                      apart.input(updates), out, reduction, options);
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace scatterkit

// A build that compiles these kernels once, in translation units of their own (cpp/kernels/),
// defines SCATTERKIT_EXTERN_KERNELS for every other unit, which then only calls them.
#ifdef SCATTERKIT_EXTERN_KERNELS
namespace scatterkit::detail {
extern template void scatter_nd_update_for_index<int32_t>(const TensorRef&, const int32_t*,
                                                          const Shape&, const TensorRef&, void*,
                                                          Reduction, const OpOptions&);
extern template void scatter_nd_update_for_index<int64_t>(const TensorRef&, const int64_t*,
                                                          const Shape&, const TensorRef&, void*,
                                                          Reduction, const OpOptions&);
extern template void scatter_nd_update_for_index<uint64_t>(const TensorRef&, const uint64_t*,
                                                           const Shape&, const TensorRef&, void*,
                                                           Reduction, const OpOptions&);
}  // namespace scatterkit::detail
#endif
