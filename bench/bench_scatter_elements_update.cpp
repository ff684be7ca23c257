// ScatterElementsUpdate-12 microbenchmarks.
//
// W2: data [1000, 256, 7, 7], indices and updates [125, 20, 7, 6], axis 0,
//     reduction none; out of place and in place (out = data).
// W3: the same with reduction sum, max and mean (use_init_val true).
// W2 and W3 also with float16 data and int32 indices (same index values).
// W6 (histogram): data float32 [1'000'000] zeros, 10'000'000 random indices,
//     axis 0, reduction sum and max.
#include <cstdint>
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
                  Placement placement) {
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
        sk::scatter_elements_update<T, I>(data, indices, updates, axis, out, reduction, true);
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

void W6_f32_i64(benchmark::State& state, Reduction reduction) {
  run_elements(state, w6(), reduction, Placement::kOutOfPlace);
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
BENCHMARK_CAPTURE(W6_f32_i64, sum, Reduction::kSum)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W6_f32_i64, max, Reduction::kMax)->Apply(sb::thread_args);
BENCHMARK(bound_W6_read_inputs)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(bound_W6_plain_loop, no_prefetch, false)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_plain_loop, l2_prefetch, true)->Apply(one_thread);
BENCHMARK(bound_W6_read_targets)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_table_in_cache, l1_8KB, 2048)->Apply(one_thread);
BENCHMARK_CAPTURE(bound_W6_table_in_cache, l2_256KB, 65536)->Apply(one_thread);
