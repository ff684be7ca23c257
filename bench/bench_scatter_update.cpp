// ScatterUpdate-3 microbenchmarks.
//
// W1 (the spec's example shape): data float32 [1000, 256, 10, 15] (154 MB),
// indices int64 [125, 20] in [0, 256), updates [1000, 125, 20, 10, 15] (1.5 GB),
// axis 1. 2500 indices over 256 targets: every target is hit ~10 times, so
// only the last writer of each slab matters.
#include <cstdint>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace sk = scatterkit;
namespace sb = scatterkit::bench;

struct W1 {
  sk::Shape data_shape{1000, 256, 10, 15};
  sk::Shape index_shape{125, 20};
  sk::Shape updates_shape{1000, 125, 20, 10, 15};
  std::vector<float> data, updates, out;
  std::vector<int64_t> indices;
  int64_t data_bytes = 0;
  int64_t traffic = 0;
};

W1& w1() {
  static W1 w = [] {
    W1 x;
    const int64_t targets = x.data_shape[1];
    x.data = sb::random_values<float>(sb::count(x.data_shape), 11);
    x.indices = sb::random_indices(sb::count(x.index_shape), targets, 12);
    x.updates = sb::random_values<float>(sb::count(x.updates_shape), 13);
    x.out.assign(x.data.size(), 0.0f);
    x.data_bytes = sb::count(x.data_shape) * int64_t(sizeof(float));
    // Each distinct target receives one slab (of data's slab size) per outer position.
    const int64_t needed = x.data_bytes / targets * sb::count_distinct(x.indices, targets);
    x.traffic = sb::traffic_out_of_place(x.data_bytes, int64_t(x.indices.size() * 8), needed);
    return x;
  }();
  return w;
}

void W1_scatter_update(benchmark::State& state) {
  W1& w = w1();
  const sk::TensorView<const float> data{w.data.data(), w.data_shape};
  const sk::TensorView<const int64_t> indices{w.indices.data(), w.index_shape};
  const sk::TensorView<const float> updates{w.updates.data(), w.updates_shape};
  const sk::TensorView<float> out{w.out.data(), w.data_shape};
  sb::run_op(state, w.traffic, w.out.data(),
             [&] { sk::scatter_update<float, int64_t>(data, indices, updates, 1, out); });
}

// The floor: one copy of W1's data.
void W1_memcpy_floor(benchmark::State& state) {
  W1& w = w1();
  sb::run_memcpy_floor(state, w.out.data(), w.data.data(), w.data_bytes);
}

}  // namespace

BENCHMARK(W1_memcpy_floor)->Apply(sb::thread_args);
BENCHMARK(W1_scatter_update)->Apply(sb::thread_args);
