// Shared pieces of the scatterkit microbenchmarks (one binary per op):
// fixed-seed data, the traffic model behind bytes_processed, the thread-count
// arguments, and the memcpy floor each op is measured against.
//
// Workloads are the canonical ones of issue 3 (bench/README.md lists them).
// Each is built on first use and kept for the life of the process, so a
// benchmark's repetitions and iteration-count probes never allocate or fill
// gigabytes again; outputs are written once before timing so that no page
// fault is timed.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_rng.hpp"
#include "scatterkit/scatterkit.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace scatterkit {
namespace bench {

inline int64_t count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

template <class T>
T from_float(float f) {
  if constexpr (std::is_same_v<T, float16>)
    return to_float16(f);
  else
    return T(f);
}

// n values uniform in [0, 1), stored as T.
template <class T>
std::vector<T> random_values(int64_t n, uint64_t stream) {
  Rng rng(kSeed, stream);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = from_float<T>(rng.unit());
  return v;
}

// n indices uniform in [0, bound).
inline std::vector<int64_t> random_indices(int64_t n, int64_t bound, uint64_t stream) {
  Rng rng(kSeed, stream);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t& x : v) x = rng.below(bound);
  return v;
}

// The same index values in another integer type (they must fit).
template <class I>
std::vector<I> cast_indices(const std::vector<int64_t>& v) {
  return std::vector<I>(v.begin(), v.end());
}

// Number of distinct keys in [0, bound).
inline int64_t count_distinct(const std::vector<int64_t>& keys, int64_t bound) {
  std::vector<bool> seen(size_t(bound), false);
  int64_t distinct = 0;
  for (int64_t k : keys)
    if (!seen[size_t(k)]) {
      seen[size_t(k)] = true;
      ++distinct;
    }
  return distinct;
}

// Bytes an op must move at least (docs/design.md section 5), the numerator of
// bytes_per_second. `needed_updates` is the part of updates that reaches the
// output: one update per distinct target for reduction none (duplicates lose),
// all of them for a reduction.
//   out of place: read data + write out + indices + needed updates
//   in place:     indices + read needed updates + write their targets
// The memcpy floor moves 2 * data bytes, so equal GB/s means "at the floor".
inline int64_t traffic_out_of_place(int64_t data_bytes, int64_t index_bytes,
                                    int64_t needed_update_bytes) {
  return 2 * data_bytes + index_bytes + needed_update_bytes;
}

inline int64_t traffic_in_place(int64_t index_bytes, int64_t needed_update_bytes) {
  return index_bytes + 2 * needed_update_bytes;
}

// The benchmark's only argument: the thread count given to scatterkit.
inline void thread_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads"})->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
}

inline int threads_arg(const benchmark::State& state) { return int(state.range(0)); }

// Evicts the caches by touching every line of a buffer twice the size of
// the L3 here (32 MB): an in-place op then starts as it does after other work
// (compare.py's interleaved runs), with its targets in DRAM. One byte per
// line, read and written, so that no memset turns it into non-temporal stores.
inline void evict_caches() {
  static std::vector<char> sweep(size_t(64) << 20, 0);
  for (size_t i = 0; i < sweep.size(); i += 64) sweep[i] = char(sweep[i] + 1);
  benchmark::ClobberMemory();
}

// evict_caches between two timed calls, outside the timing.
inline void evict_caches_untimed(benchmark::State& state) {
  state.PauseTiming();
  evict_caches();
  state.ResumeTiming();
}

// Times `op` (one call per iteration) at the thread count of the benchmark's
// argument; `out` is the buffer the op writes. With `cold`, the caches are
// evicted before each call, untimed.
template <class Op>
void run_op(benchmark::State& state, int64_t traffic_bytes, void* out, Op&& op, bool cold = false) {
  set_num_threads(threads_arg(state));
  op();  // warm: faults in pages, starts the OpenMP pool
  for (auto _ : state) {
    if (cold) evict_caches_untimed(state);
    op();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * traffic_bytes);
  state.counters["MB_moved"] = double(traffic_bytes) / 1e6;
}

// The floor of every out-of-place op: one copy of data. Contiguous blocks,
// one per thread, as a parallel memcpy would do it.
inline void copy_blocks(void* dst, const void* src, int64_t bytes, int threads) {
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = bytes * t / nt, end = bytes * (t + 1) / nt;
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                size_t(end - begin));
  }
#else
  (void)threads;
  std::memcpy(dst, src, size_t(bytes));
#endif
}

// memcpy of `bytes` from src to dst at the benchmark's thread count.
inline void run_memcpy_floor(benchmark::State& state, void* dst, const void* src, int64_t bytes) {
  const int threads = threads_arg(state);
  copy_blocks(dst, src, bytes, threads);
  for (auto _ : state) {
    copy_blocks(dst, src, bytes, threads);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
  state.counters["MB_moved"] = double(2 * bytes) / 1e6;
}

}  // namespace bench
}  // namespace scatterkit
