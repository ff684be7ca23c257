// ScatterElementsUpdate-12 microbenchmarks.
//
// W2: data [1000, 256, 7, 7], indices and updates [125, 20, 7, 6], axis 0,
//     reduction none; out of place and in place (out = data).
// W3: the same with reduction sum, max and mean (use_init_val true).
// W2 and W3 also with float16 data and int32 indices (same index values).
// W6 (histogram): data float32 [1'000'000] zeros, 10'000'000 random indices,
//     axis 0, reduction sum, max and mean; sum and mean also exact
//     (OpOptions::exact: the real sum rounded once).
// Batch_spark: the Spark pipeline's shape through run_batch: 10,000 rows, each
//     1,000 float32 updates (int64 indices) into 96 zero bins, 1-D
//     ScatterElementsUpdate-12 sum or mean, exact and not.
// Sparse_exact: 150,000 float32 terms (int64 indices, uniform) into a 1-D
//     output of 1,150,000, 600,000 or only the elements they target
//     (renumbered, about 140,000), exact sum or mean: the cost of the
//     untargeted elements.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace sk = scatterkit;
namespace sb = scatterkit::bench;
using sk::Reduction;

// In place cold: the caches are evicted before each call (sb::evict_caches).
enum class Placement { kOutOfPlace, kInPlace, kInPlaceCold };

// Flat data offset of every position of indices (C order): the element it targets.
std::vector<int64_t> element_targets(const sk::Shape& data, const sk::Shape& idx,
                                     const std::vector<int64_t>& values, size_t axis) {
  const size_t rank = data.size();
  sk::Shape strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) strides[d] = strides[d + 1] * data[d + 1];
  std::vector<int64_t> targets(values.size());
  sk::Shape pos(rank, 0);
  for (size_t p = 0; p < values.size(); ++p) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (d == axis ? values[p] : pos[d]) * strides[d];
    targets[p] = off;
    for (size_t d = rank; d-- > 0;) {  // next position of indices in C order
      if (++pos[d] < idx[d]) break;
      pos[d] = 0;
    }
  }
  return targets;
}

template <class T, class I>
struct ElementsCase {
  sk::Shape data_shape, index_shape;
  size_t axis = 0;
  std::vector<T> data, updates, out, work;  // work: the in-place target
  std::vector<I> indices;
  int64_t data_bytes = 0, index_bytes = 0, update_bytes = 0;
  int64_t distinct_bytes = 0;  // updates that survive reduction none

  ElementsCase(sk::Shape d, sk::Shape i, size_t ax, bool zero_data, uint64_t stream)
      : data_shape(std::move(d)), index_shape(std::move(i)), axis(ax) {
    const int64_t n = sb::count(index_shape);
    const std::vector<int64_t> values = sb::random_indices(n, data_shape[axis], stream + 1);
    indices = sb::cast_indices<I>(values);
    updates = sb::random_values<T>(n, stream + 2);
    data = zero_data ? std::vector<T>(size_t(sb::count(data_shape)))
                     : sb::random_values<T>(sb::count(data_shape), stream);
    out.assign(data.size(), T{});
    data_bytes = int64_t(data.size() * sizeof(T));
    index_bytes = n * int64_t(sizeof(I));
    update_bytes = n * int64_t(sizeof(T));
    const int64_t distinct = sb::count_distinct(
        element_targets(data_shape, index_shape, values, axis), sb::count(data_shape));
    distinct_bytes = distinct * int64_t(sizeof(T));
  }

  int64_t traffic(Reduction r, Placement p) const {
    const int64_t needed = r == Reduction::kNone ? distinct_bytes : update_bytes;
    return p != Placement::kOutOfPlace ? sb::traffic_in_place(index_bytes, needed)
                                       : sb::traffic_out_of_place(data_bytes, index_bytes, needed);
  }
};

// W2/W3 share their data: one case per (data type, index type).
template <class T, class I>
ElementsCase<T, I>& w2() {
  static ElementsCase<T, I> c({1000, 256, 7, 7}, {125, 20, 7, 6}, 0, false, 20);
  return c;
}

ElementsCase<float, int64_t>& w6() {
  static ElementsCase<float, int64_t> c({1'000'000}, {10'000'000}, 0, true, 60);
  return c;
}

template <class T, class I>
void run_elements(benchmark::State& state, ElementsCase<T, I>& c, Reduction reduction,
                  Placement placement, const sk::OpOptions& options = {}) {
  const bool in_place = placement != Placement::kOutOfPlace;
  // 'none' is idempotent, so every iteration in place sees the same work. The
  // buffer keeps its capacity between runs: no allocation after the first.
  if (in_place) c.work.assign(c.data.begin(), c.data.end());
  T* dst = in_place ? c.work.data() : c.out.data();
  const sk::TensorView<const T> data{in_place ? dst : c.data.data(), c.data_shape};
  const sk::TensorView<const I> indices{c.indices.data(), c.index_shape};
  const sk::TensorView<const T> updates{c.updates.data(), c.index_shape};
  const sk::TensorView<T> out{dst, c.data_shape};
  const int64_t axis = int64_t(c.axis);
  sb::run_op(
      state, c.traffic(reduction, placement), dst,
      [&] {
        sk::scatter_elements_update<T, I>(data, indices, updates, axis, out, reduction, true,
                                          options);
      },
      placement == Placement::kInPlaceCold);
}

void W2_f32_i64(benchmark::State& state, Placement placement) {
  run_elements(state, w2<float, int64_t>(), Reduction::kNone, placement);
}

void W2_f16_i32(benchmark::State& state, Placement placement) {
  run_elements(state, w2<sk::float16, int32_t>(), Reduction::kNone, placement);
}

void W3_f32_i64(benchmark::State& state, Reduction reduction) {
  run_elements(state, w2<float, int64_t>(), reduction, Placement::kOutOfPlace);
}

void W3_f16_i32(benchmark::State& state, Reduction reduction) {
  run_elements(state, w2<sk::float16, int32_t>(), reduction, Placement::kOutOfPlace);
}

// exact: OpOptions::exact, the real sum (or mean) rounded once, the same bits
// at every thread count.
void W6_f32_i64(benchmark::State& state, Reduction reduction, bool exact) {
  sk::OpOptions options;
  options.exact = exact;
  run_elements(state, w6(), reduction, Placement::kOutOfPlace, options);
}

// The Spark pipeline's shape (bench/spark, the demo's 96 buckets): rows of
// 1,000 updates into 96 zero bins, one ScatterElementsUpdate-12 per row,
// through the batched entry the executors call (run_batch: threads split the
// rows, each row runs on one thread).
struct BatchCase {
  static constexpr int64_t kRows = 10'000, kBins = 96, kUpdates = 1'000;
  std::vector<float> data, updates, out;
  std::vector<int64_t> indices;
  // Offsets of data rows, of index and update rows, shape offsets (one entry
  // per row: every row is 1-D) and the two shapes, one per row.
  std::vector<int64_t> data_offsets, update_offsets, shape_offsets, data_shapes, update_shapes;

  BatchCase()
      : data(size_t(kRows * kBins), 0.f),
        updates(sb::random_values<float>(kRows * kUpdates, 72)),
        out(data.size(), 0.f),
        indices(sb::random_indices(kRows * kUpdates, kBins, 71)),
        data_offsets(size_t(kRows + 1)),
        update_offsets(size_t(kRows + 1)),
        shape_offsets(size_t(kRows + 1)),
        data_shapes(size_t(kRows), kBins),
        update_shapes(size_t(kRows), kUpdates) {
    for (int64_t r = 0; r <= kRows; ++r) {
      data_offsets[size_t(r)] = r * kBins;
      update_offsets[size_t(r)] = r * kUpdates;
      shape_offsets[size_t(r)] = r;
    }
  }

  sk::RaggedRef ragged(const void* values, int64_t per_row, size_t itemsize,
                       const std::vector<int64_t>& offsets,
                       const std::vector<int64_t>& shapes) const {
    sk::RaggedRef r;
    r.values = values;
    r.size = kRows * per_row;
    r.itemsize = itemsize;
    r.offsets = offsets.data();
    r.shapes = shapes.data();
    r.shapes_size = kRows;
    r.shape_offsets = shape_offsets.data();
    return r;
  }

  // Per row, the out-of-place model of every W workload; each update reaches its bin.
  int64_t traffic() const {
    return kRows * sb::traffic_out_of_place(kBins * int64_t(sizeof(float)),
                                            kUpdates * int64_t(sizeof(int64_t)),
                                            kUpdates * int64_t(sizeof(float)));
  }
};

BatchCase& batch_spark() {
  static BatchCase c;
  return c;
}

void Batch_spark_f32_i64(benchmark::State& state, Reduction reduction, bool exact) {
  auto& c = batch_spark();
  sk::BatchOp op;
  op.kind = sk::BatchKind::kScatterElementsUpdate;
  op.dtype = sk::DType::kFloat32;
  op.index_type = sk::IndexType::kInt64;
  op.axis = 0;
  op.reduction = reduction;
  op.use_init_val = true;
  op.options.exact = exact;
  const sk::RaggedRef data =
      c.ragged(c.data.data(), c.kBins, sizeof(float), c.data_offsets, c.data_shapes);
  const sk::RaggedRef indices =
      c.ragged(c.indices.data(), c.kUpdates, sizeof(int64_t), c.update_offsets, c.update_shapes);
  const sk::RaggedRef updates =
      c.ragged(c.updates.data(), c.kUpdates, sizeof(float), c.update_offsets, c.update_shapes);
  bool failed = false;
  sb::run_op(state, c.traffic(), c.out.data(), [&] {
    const std::vector<std::string> errors =
        sk::run_batch(op, c.kRows, data, &indices, updates, c.out.data());
    failed |=
        std::any_of(errors.begin(), errors.end(), [](const std::string& e) { return !e.empty(); });
  });
  if (failed) state.SkipWithError("a row failed");
}

// 150,000 terms into 1-D outputs of several sizes: `large` and `mid` targets
// drawn uniformly, `compact` the same targets renumbered (in order) to the
// elements hit, so every output gets the same sums.
struct SparseCase {
  static constexpr int64_t kTerms = 150'000, kLarge = 1'150'000, kMid = 600'000;
  std::vector<float> updates;
  std::vector<int64_t> large_idx, mid_idx, compact_idx;
  int64_t compact_size = 0;
  std::vector<float> data, out;  // zeros, as large as the largest output

  SparseCase()
      : updates(sb::random_values<float>(kTerms, 91)),
        large_idx(sb::random_indices(kTerms, kLarge, 92)),
        mid_idx(sb::random_indices(kTerms, kMid, 93)),
        compact_idx(size_t(kTerms)),
        data(size_t(kLarge), 0.f),
        out(size_t(kLarge), 0.f) {
    std::vector<int64_t> rank(size_t(kLarge), -1);
    for (int64_t t : large_idx) rank[size_t(t)] = 0;
    for (int64_t& r : rank)
      if (r == 0) r = compact_size++;
    for (size_t p = 0; p < large_idx.size(); ++p) compact_idx[p] = rank[size_t(large_idx[p])];
  }
};

SparseCase& sparse() {
  static SparseCase c;
  return c;
}

enum class SparseOut { kLarge, kMid, kCompact };

// Exact sum or mean of the sparse terms into one of the outputs; in place
// (out = data, use_init_val false: the Spark aggregate's call, which gives the
// same out every time) or out of place with use_init_val true.
void Sparse_exact_f32_i64(benchmark::State& state, SparseOut which, Reduction reduction,
                          bool in_place) {
  auto& c = sparse();
  const std::vector<int64_t>& idx = which == SparseOut::kLarge ? c.large_idx
                                    : which == SparseOut::kMid ? c.mid_idx
                                                               : c.compact_idx;
  const int64_t size = which == SparseOut::kLarge ? c.kLarge
                       : which == SparseOut::kMid ? c.kMid
                                                  : c.compact_size;
  const sk::Shape data_shape{size}, index_shape{c.kTerms};
  float* dst = c.out.data();
  const sk::TensorView<const float> data{in_place ? dst : c.data.data(), data_shape};
  const sk::TensorView<const int64_t> indices{idx.data(), index_shape};
  const sk::TensorView<const float> updates{c.updates.data(), index_shape};
  const sk::TensorView<float> out{dst, data_shape};
  sk::OpOptions options;
  options.exact = true;
  const int64_t data_bytes = size * int64_t(sizeof(float));
  const int64_t index_bytes = c.kTerms * int64_t(sizeof(int64_t));
  const int64_t update_bytes = c.kTerms * int64_t(sizeof(float));
  const int64_t traffic = in_place
                              ? sb::traffic_in_place(index_bytes, update_bytes)
                              : sb::traffic_out_of_place(data_bytes, index_bytes, update_bytes);
  sb::run_op(state, traffic, dst, [&] {
    sk::scatter_elements_update<float, int64_t>(data, indices, updates, 0, out, reduction,
                                                !in_place, options);
  });
}

// The floor of the large output out of place: one copy of it.
void memcpy_floor_Sparse_large(benchmark::State& state) {
  auto& c = sparse();
  sb::run_memcpy_floor(state, c.out.data(), c.data.data(), c.kLarge * int64_t(sizeof(float)));
}

// Floors: one copy of each data tensor.
void memcpy_floor_W2_f32(benchmark::State& state) {
  auto& c = w2<float, int64_t>();
  sb::run_memcpy_floor(state, c.out.data(), c.data.data(), c.data_bytes);
}

void memcpy_floor_W2_f16(benchmark::State& state) {
  auto& c = w2<sk::float16, int32_t>();
  sb::run_memcpy_floor(state, c.out.data(), c.data.data(), c.data_bytes);
}

void memcpy_floor_W6(benchmark::State& state) {
  auto& c = w6();
  sb::run_memcpy_floor(state, c.out.data(), c.data.data(), c.data_bytes);
}

// Bounds: what any implementation of W6 and of W2 in place must spend, for
// the targets out of reach (bench/README.md, "Bounds").

// Streams W6's indices and updates once (120 MB), the threads splitting them:
// no W6 implementation reads its inputs faster.
void bound_W6_read_inputs(benchmark::State& state) {
  auto& c = w6();
  const int threads = sb::threads_arg(state);
  const int64_t n = int64_t(c.indices.size());
  const int64_t* idx = c.indices.data();
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(c.updates.data());
  (void)threads;  // without OpenMP the loop runs on one thread
  for (auto _ : state) {
    uint64_t sum = 0;  // integers: the loop vectorizes, a float sum would not
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) sum += uint64_t(idx[i]) + bits[i];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * (c.index_bytes + c.update_bytes));
}

// W6 sum as a bare loop on one thread, with no validation and no copy. Without
// a prefetch it is the loop PyTorch's scatter_add_ runs, less its index check;
// with each target fetched into L2 32 updates ahead (prefetch.hpp), as the
// library does, it is the fastest one-pass fold measured here (a float sum
// must fold each target's updates in order).
void bound_W6_plain_loop(benchmark::State& state, bool l2_prefetch) {
  auto& c = w6();
  const int64_t n = int64_t(c.indices.size());
  const int64_t* idx = c.indices.data();
  const float* upd = c.updates.data();
  float* bins = c.out.data();
  constexpr int64_t kAhead = sk::detail::kPrefetchDistance;
  for (auto _ : state) {
    if (l2_prefetch) {
      int64_t i = 0;
      for (; i + kAhead < n; ++i) {
        sk::detail::prefetch_l2(bins + idx[i + kAhead]);
        bins[idx[i]] += upd[i];
      }
      for (; i < n; ++i) bins[idx[i]] += upd[i];
    } else {
      for (int64_t i = 0; i < n; ++i) bins[idx[i]] += upd[i];
    }
    benchmark::DoNotOptimize(bins);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (c.index_bytes + c.update_bytes));
}

// W6's targets read and never written, each fetched into L2 32 updates ahead
// as in the plain loop: a floor for any one-pass fold that must look at each
// target, even a max that stores only when the update wins. The loads are
// summed as integers, so no float add chain sets the pace.
void bound_W6_read_targets(benchmark::State& state) {
  auto& c = w6();
  const int64_t n = int64_t(c.indices.size());
  const int64_t* idx = c.indices.data();
  const uint32_t* bins = reinterpret_cast<const uint32_t*>(c.out.data());
  constexpr int64_t kAhead = sk::detail::kPrefetchDistance;
  for (auto _ : state) {
    uint64_t sum = 0;
    int64_t i = 0;
    for (; i + kAhead < n; ++i) {
      sk::detail::prefetch_l2(bins + idx[i + kAhead]);
      sum += bins[idx[i]];
    }
    for (; i < n; ++i) sum += bins[idx[i]];
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * (c.index_bytes + c.update_bytes));
}

// W6 sum's loop with every target in cache: the updates folded into a table
// of `entries` bins (idx & (entries - 1)), 8 KB fits L1 and 256 KB L2. What
// 10M in-order read-modify-writes cost with no target ever missing: a floor
// for any fold that applies each update with a read-modify-write, however it
// first arranges the updates (by target range, say), before that cost.
void bound_W6_table_in_cache(benchmark::State& state, int64_t entries) {
  auto& c = w6();
  const int64_t n = int64_t(c.indices.size());
  const int64_t* idx = c.indices.data();
  const float* upd = c.updates.data();
  std::vector<float> bins(size_t(entries), 0.f);
  float* table = bins.data();
  const int64_t mask = entries - 1;
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) table[idx[i] & mask] += upd[i];
    benchmark::DoNotOptimize(table);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (c.index_bytes + c.update_bytes));
}

// The phases of W6 sum with exact=True, one thread, apart (the kernel is
// exact_elements_dense in exact/scatter_elements.hpp; with exact=True each
// part of the updates has a table of its own, one part per thread):
//   init:   what precedes the fold: data scanned for a NaN, the 8 MB table of
//           double slots filled with -0, data written into it;
//   fold:   every update added to its target's double slot, each addition
//           checked exact (TwoSum, detail::ExactSlots), the target fetched
//           into L2 32 updates ahead as in the kernel; no index validation;
//   fold_unchecked: the same adds into the same double table, unchecked: the
//           cost of the 8 MB table alone, next to bound_W6_plain_loop's 4 MB;
//   finish: every slot rounded to float once, into out (one table);
//   finish_2_tables: two tables merged (each sum checked exact) and rounded:
//           the final pass at 2 threads.
enum class ExactPhase { kInit, kFold, kFoldUnchecked, kFinish, kFinish2 };

void bound_W6_exact_phase(benchmark::State& state, ExactPhase phase) {
  auto& c = w6();
  const int64_t n = int64_t(c.indices.size()), count = int64_t(c.data.size());
  const int64_t* idx = c.indices.data();
  const float* upd = c.updates.data();
  const float* data = c.data.data();
  float* out = c.out.data();
  const int parts = phase == ExactPhase::kFinish2 ? 2 : 1;
  const std::unique_ptr<double[]> table(new double[size_t(parts * count)]);
  std::vector<sk::detail::ExactSlots<float>> slots(static_cast<size_t>(parts));
  std::vector<const double*> tables;
  for (int k = 0; k < parts; ++k) tables.push_back(table.get() + k * count);
  // Slots as the fold leaves them: W6 holds each target's sum in its slot.
  for (int k = 0; k < parts; ++k) {
    double* tab = table.get() + k * count;
    std::fill_n(tab, count, -0.0);
    for (int64_t i = k; i < n; i += parts) slots[size_t(k)].add(tab + idx[i], double(upd[i]));
  }
  double* tab = table.get();
  constexpr int64_t kAhead = sk::detail::kPrefetchDistance;
  for (auto _ : state) {
    switch (phase) {
      case ExactPhase::kInit: {
        bool nan = false;
        for (int64_t x = 0; x < count; ++x) nan |= data[x] != data[x];
        benchmark::DoNotOptimize(nan);
        std::fill_n(tab, count, -0.0);
        for (int64_t x = 0; x < count; ++x) {
          const double v = double(data[x]);
          if (std::isfinite(v))
            tab[x] = v;
          else
            slots[0].add(tab + x, v);
        }
        break;
      }
      case ExactPhase::kFold: {
        sk::detail::ExactSlots<float>& sl = slots[0];
        int64_t i = 0;
        for (; i + kAhead < n; ++i) {
          sk::detail::prefetch_l2(tab + idx[i + kAhead]);
          sl.add(tab + idx[i], double(upd[i]));
        }
        for (; i < n; ++i) sl.add(tab + idx[i], double(upd[i]));
        break;
      }
      case ExactPhase::kFoldUnchecked: {
        int64_t i = 0;
        for (; i + kAhead < n; ++i) {
          sk::detail::prefetch_l2(tab + idx[i + kAhead]);
          tab[idx[i]] += double(upd[i]);
        }
        for (; i < n; ++i) tab[idx[i]] += double(upd[i]);
        break;
      }
      case ExactPhase::kFinish:
      case ExactPhase::kFinish2:
        for (int64_t x = 0; x < count; ++x)
          out[x] = sk::detail::finish_parts<float>(slots.data(), tables.data(), parts, x, false, 1);
        break;
    }
    benchmark::DoNotOptimize(tab);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (c.index_bytes + c.update_bytes));
}

// Batch_spark's per-row fold apart from run_batch (no row checks, no
// allocation), one thread, every row in turn: its 96 bins zeroed, its 1,000
// updates folded in order, the bins rounded into out. What the exact fold
// costs where its table stays in L1:
//   float:             bins of float, `bin += u`: the loop of the inexact sum;
//   double_twosum:     bins of double, each addition checked exact
//                      (detail::ExactSlots, TwoSum), the loop of exact=True;
//   double_prechecked: a pass over the row's updates first (the largest and
//                      the smallest nonzero magnitude, on the bits), then
//                      unchecked double adds when that pass proves every sum
//                      exact (n * max < 2^53 * the smallest term's ulp: every
//                      partial sum is then a multiple of that ulp below 2^53
//                      of them), else the checked loop. A candidate for the
//                      kernel, not what it does.
enum class RowFold { kFloat, kDoubleTwoSum, kDoublePrechecked };

// Whether a double fold of these float32 terms into zero slots is exact,
// whatever their order: every partial sum a multiple of the smallest term's
// ulp and below 2^53 of them. False for an infinity or a NaN.
inline bool double_sums_exact(const float* u, int64_t n) {
  uint32_t hi = 0, lo = ~0u;  // largest magnitude, smallest nonzero magnitude minus one
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, u + i, sizeof b);
    b &= 0x7fffffffu;
    hi = std::max(hi, b);
    lo = std::min(lo, b - 1);  // a zero wraps to the top and never wins
  }
  if (hi >= 0x7f800000u) return false;  // an infinity or a NaN
  if (lo == ~0u) return true;           // every term zero
  float hf, lf;
  const uint32_t lb = lo + 1;
  std::memcpy(&hf, &hi, sizeof hf);
  std::memcpy(&lf, &lb, sizeof lf);
  // the smallest term's ulp is above lf * 2^-24 (2^-149 for a subnormal)
  const double ulp = std::max(double(lf) * 0x1p-24, 0x1p-149);
  return double(n) * double(hf) < 0x1p53 * ulp;
}

void bound_Batch_spark_fold(benchmark::State& state, RowFold fold) {
  auto& c = batch_spark();
  constexpr int64_t kBins = BatchCase::kBins, kUpdates = BatchCase::kUpdates;
  int64_t checked_rows = 0;
  for (auto _ : state) {
    checked_rows = 0;
    for (int64_t r = 0; r < BatchCase::kRows; ++r) {
      const int64_t* idx = c.indices.data() + r * kUpdates;
      const float* upd = c.updates.data() + r * kUpdates;
      float* out = c.out.data() + r * kBins;
      if (fold == RowFold::kFloat) {
        float bins[kBins] = {};
        for (int64_t i = 0; i < kUpdates; ++i) bins[idx[i]] += upd[i];
        std::memcpy(out, bins, sizeof bins);
        continue;
      }
      double bins[kBins];
      std::fill_n(bins, kBins, -0.0);
      sk::detail::ExactSlots<float> slots;
      if (fold == RowFold::kDoublePrechecked && double_sums_exact(upd, kUpdates)) {
        for (int64_t i = 0; i < kUpdates; ++i) bins[idx[i]] += double(upd[i]);
      } else {
        ++checked_rows;
        for (int64_t i = 0; i < kUpdates; ++i) slots.add(bins + idx[i], double(upd[i]));
      }
      const double* tables[1] = {bins};
      for (int64_t x = 0; x < kBins; ++x)
        out[x] = sk::detail::finish_parts<float>(&slots, tables, 1, x, false, 1);
    }
    benchmark::DoNotOptimize(c.out.data());
    benchmark::ClobberMemory();
  }
  state.counters["checked_rows"] = double(checked_rows);
  state.SetBytesProcessed(state.iterations() * c.traffic());
}

// W2 in place as a bare loop: each update stored to its precomputed target,
// in order. No index is read, checked or converted: the cost of the stores'
// cache misses alone (warm or cold, as the library's W2 in place beside it).
// With l2_prefetch each store's target is fetched into L2 256 stores ahead
// (128 to 512 measured alike): the fastest store loop measured here.
void bound_W2_in_place_stores(benchmark::State& state, Placement placement, bool l2_prefetch) {
  auto& c = w2<float, int64_t>();
  static const std::vector<int64_t> targets =
      element_targets(c.data_shape, c.index_shape,
                      std::vector<int64_t>(c.indices.begin(), c.indices.end()), c.axis);
  c.work.assign(c.data.begin(), c.data.end());
  const int64_t n = int64_t(targets.size());
  const float* upd = c.updates.data();
  float* work = c.work.data();
  for (auto _ : state) {
    if (placement == Placement::kInPlaceCold) sb::evict_caches_untimed(state);
    constexpr int64_t kAhead = 256;
    int64_t p = 0;
    if (l2_prefetch)
      for (; p + kAhead < n; ++p) {
        sk::detail::prefetch_l2(work + targets[size_t(p + kAhead)]);
        work[targets[size_t(p)]] = upd[p];
      }
    for (; p < n; ++p) work[targets[size_t(p)]] = upd[p];
    benchmark::DoNotOptimize(work);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * c.traffic(Reduction::kNone, Placement::kInPlace));
}

void one_thread(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads"})->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(memcpy_floor_W2_f32)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W2_f32_i64, none, Placement::kOutOfPlace)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W2_f32_i64, none_in_place, Placement::kInPlace)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W2_f32_i64, none_in_place_cold, Placement::kInPlaceCold)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(bound_W2_in_place_stores, warm, Placement::kInPlace, false)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W2_in_place_stores, cold, Placement::kInPlaceCold, false)
    ->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W2_in_place_stores, cold_l2_prefetch, Placement::kInPlaceCold, true)
    ->Apply(one_thread);
BENCHMARK_CAPTURE(W3_f32_i64, sum, Reduction::kSum)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W3_f32_i64, max, Reduction::kMax)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W3_f32_i64, mean, Reduction::kMean)->Apply(sb::thread_args);

BENCHMARK(memcpy_floor_W2_f16)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W2_f16_i32, none, Placement::kOutOfPlace)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W3_f16_i32, sum, Reduction::kSum)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W3_f16_i32, max, Reduction::kMax)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W3_f16_i32, mean, Reduction::kMean)->Apply(sb::thread_args);

BENCHMARK(memcpy_floor_W6)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, sum, Reduction::kSum, false)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, sum_exact, Reduction::kSum, true)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, mean, Reduction::kMean, false)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, mean_exact, Reduction::kMean, true)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, max, Reduction::kMax, false)->Apply(sb::thread_args);
BENCHMARK(bound_W6_read_inputs)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(bound_W6_plain_loop, no_prefetch, false)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_plain_loop, l2_prefetch, true)->Apply(one_thread);
BENCHMARK(bound_W6_read_targets)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_table_in_cache, l1_8KB, 2048)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_table_in_cache, l2_256KB, 65536)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_exact_phase, init, ExactPhase::kInit)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_exact_phase, fold, ExactPhase::kFold)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_exact_phase, fold_unchecked, ExactPhase::kFoldUnchecked)
    ->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_exact_phase, finish, ExactPhase::kFinish)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_exact_phase, finish_2_tables, ExactPhase::kFinish2)->Apply(one_thread);

BENCHMARK_CAPTURE(Batch_spark_f32_i64, sum, Reduction::kSum, false)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Batch_spark_f32_i64, sum_exact, Reduction::kSum, true)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Batch_spark_f32_i64, mean, Reduction::kMean, false)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Batch_spark_f32_i64, mean_exact, Reduction::kMean, true)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(bound_Batch_spark_fold, float, RowFold::kFloat)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_Batch_spark_fold, double_twosum, RowFold::kDoubleTwoSum)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_Batch_spark_fold, double_prechecked, RowFold::kDoublePrechecked)
    ->Apply(one_thread);

BENCHMARK(memcpy_floor_Sparse_large)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, sum_large, SparseOut::kLarge, Reduction::kSum, false)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, sum_mid, SparseOut::kMid, Reduction::kSum, false)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, sum_compact, SparseOut::kCompact, Reduction::kSum, false)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, mean_large, SparseOut::kLarge, Reduction::kMean, false)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, mean_compact, SparseOut::kCompact, Reduction::kMean, false)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, sum_large_in_place, SparseOut::kLarge, Reduction::kSum,
                  true)
    ->Apply(sb::thread_args);
BENCHMARK_CAPTURE(Sparse_exact_f32_i64, sum_compact_in_place, SparseOut::kCompact, Reduction::kSum,
                  true)
    ->Apply(sb::thread_args);
