// ScatterNDUpdate-15 microbenchmarks.
//
// W4: data float32 [1000, 256, 10, 15] (154 MB), indices int64 [25, 125, 3]
// (each coordinate uniform in its axis's range), updates [25, 125, 15]:
// 3125 slabs of 15 elements, reduction none; out of place and in place.
#include <cstdint>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace sk = scatterkit;
namespace sb = scatterkit::bench;

enum class Placement { kOutOfPlace, kInPlace };

struct W4 {
  sk::Shape data_shape{1000, 256, 10, 15};
  sk::Shape index_shape{25, 125, 3};
  sk::Shape updates_shape{25, 125, 15};
  std::vector<float> data, updates, out, work;  // work: the in-place target
  std::vector<int64_t> indices;
  int64_t data_bytes = 0, index_bytes = 0, distinct_bytes = 0;
};

W4& w4() {
  static W4 w = [] {
    W4 x;
    const int64_t tuples = x.index_shape[0] * x.index_shape[1];
    const int64_t k = x.index_shape[2];
    const int64_t slab = x.data_shape[3];
    x.data = sb::random_values<float>(sb::count(x.data_shape), 40);
    x.updates = sb::random_values<float>(sb::count(x.updates_shape), 41);
    x.out.assign(x.data.size(), 0.0f);
    x.indices.resize(size_t(tuples * k));
    std::vector<int64_t> slab_ids(size_t(tuples), 0);
    for (int64_t axis = 0; axis < k; ++axis) {
      const std::vector<int64_t> coords = sb::random_indices(tuples, x.data_shape[axis], 42 + axis);
      for (int64_t t = 0; t < tuples; ++t) {
        x.indices[size_t(t * k + axis)] = coords[size_t(t)];
        slab_ids[size_t(t)] = slab_ids[size_t(t)] * x.data_shape[axis] + coords[size_t(t)];
      }
    }
    x.data_bytes = sb::count(x.data_shape) * int64_t(sizeof(float));
    x.index_bytes = tuples * k * int64_t(sizeof(int64_t));
    const int64_t slabs = sb::count(x.data_shape) / slab;
    x.distinct_bytes = sb::count_distinct(slab_ids, slabs) * slab * int64_t(sizeof(float));
    return x;
  }();
  return w;
}

void W4_f32_i64(benchmark::State& state, Placement placement) {
  W4& w = w4();
  const bool in_place = placement == Placement::kInPlace;
  // 'none' is idempotent, so every iteration in place sees the same work.
  if (in_place) w.work.assign(w.data.begin(), w.data.end());
  float* dst = in_place ? w.work.data() : w.out.data();
  const sk::TensorView<const float> data{in_place ? dst : w.data.data(), w.data_shape};
  const sk::TensorView<const int64_t> indices{w.indices.data(), w.index_shape};
  const sk::TensorView<const float> updates{w.updates.data(), w.updates_shape};
  const sk::TensorView<float> out{dst, w.data_shape};
  const int64_t traffic =
      in_place ? sb::traffic_in_place(w.index_bytes, w.distinct_bytes)
               : sb::traffic_out_of_place(w.data_bytes, w.index_bytes, w.distinct_bytes);
  sb::run_op(state, traffic, dst,
             [&] { sk::scatter_nd_update<float, int64_t>(data, indices, updates, out); });
}

void W4_memcpy_floor(benchmark::State& state) {
  W4& w = w4();
  sb::run_memcpy_floor(state, w.out.data(), w.data.data(), w.data_bytes);
}

}  // namespace

BENCHMARK(W4_memcpy_floor)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W4_f32_i64, none, Placement::kOutOfPlace)->Apply(sb::thread_args);
BENCHMARK_CAPTURE(W4_f32_i64, none_in_place, Placement::kInPlace)->Apply(sb::thread_args);
