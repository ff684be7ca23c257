// SliceScatter-15 microbenchmarks.
//
// W5: data float32 [1000, 256, 10, 15] (154 MB), axis 1, start 0, stop 256,
// step 2: updates [1000, 128, 10, 15] replace every other slab of 150 floats.
#include <cstdint>
#include <vector>

#include "bench_common.hpp"

namespace {

namespace sk = scatterkit;
namespace sb = scatterkit::bench;

struct W5 {
  sk::Shape data_shape{1000, 256, 10, 15};
  sk::Shape updates_shape{1000, 128, 10, 15};
  std::vector<float> data, updates, out;
  int64_t data_bytes = 0, traffic = 0;
};

W5& w5() {
  static W5 w = [] {
    W5 x;
    x.data = sb::random_values<float>(sb::count(x.data_shape), 50);
    x.updates = sb::random_values<float>(sb::count(x.updates_shape), 51);
    x.out.assign(x.data.size(), 0.0f);
    x.data_bytes = sb::count(x.data_shape) * int64_t(sizeof(float));
    // Slice positions are distinct: every update reaches the output.
    x.traffic = sb::traffic_out_of_place(x.data_bytes, 0,
                                         sb::count(x.updates_shape) * int64_t(sizeof(float)));
    return x;
  }();
  return w;
}

void W5_slice_scatter(benchmark::State& state) {
  W5& w = w5();
  const sk::TensorView<const float> data{w.data.data(), w.data_shape};
  const sk::TensorView<const float> updates{w.updates.data(), w.updates_shape};
  const sk::TensorView<float> out{w.out.data(), w.data_shape};
  sb::run_op(state, w.traffic, w.out.data(),
             [&] { sk::slice_scatter<float>(data, updates, 0, 256, 2, 1, out); });
}

void W5_memcpy_floor(benchmark::State& state) {
  W5& w = w5();
  sb::run_memcpy_floor(state, w.out.data(), w.data.data(), w.data_bytes);
}

}  // namespace

BENCHMARK(W5_memcpy_floor)->Apply(sb::thread_args);
BENCHMARK(W5_slice_scatter)->Apply(sb::thread_args);
