// Histograms at every table size (issue 33).
//
// H: ScatterElementsUpdate-12, axis 0, use_init_val true, reduction sum or max:
//    10,000,000 float32 updates (kUpdates) into a 1-D float32 table of zeros
//    of 4,096, 65,536, 1,048,576, 16,777,216 or 134,217,728 bins (16 KB to
//    512 MB), int64 or int32 indices (the same values), 1 and 2 threads, out
//    of place into a preallocated output (Python's `out=`): each call copies
//    data into out and folds, as W6 does.
//    Indices uniform over the bins, or skewed: half of them uniform over the
//    first 1% of the bins (bins / 100, at least 1), half uniform over all of
//    them, shuffled.
// References, per table size:
//    H_memcpy:          the table copied once (data to out), 1 and 2 threads:
//                       the part of every out-of-place call that is a copy;
//    H_gather_targets:  each update's target read, never written, fetched into
//                       L2 32 updates ahead, the threads splitting the updates
//                       (uniform int64 indices; the loads summed as integers):
//                       what reaching 10M random targets costs, a floor for
//                       any one-pass fold;
//    H_bare_loop:       memcpy(out, data), then the plain serial loop
//                       `out[idx[i]] += upd[i]` (or `out[idx[i]] =
//                       max(out[idx[i]], upd[i])`), int64 indices, no
//                       validation: what a naive implementation costs;
//                       `sum_prefetch` fetches each target into L2 32 updates
//                       ahead, as the library does.
//    H_stream_fold/<m>: for the tables the library folds by streaming its inputs (up to
//                       8 MB, histogram.hpp), its loop without validation, 1 thread,
//                       uniform int64 indices, each step's inputs fetched ahead as the
//                       library does: `plain` folds (sum); `prefetch_l1` also fetches each
//                       target into L1 32 updates ahead (tried for tables past L1, not kept);
//                       `gather` reads each target, never writes it: what reaching the
//                       targets from where the table lives costs on top of the inputs.
//    H_range_pass/<pass>: for the tables the library folds by ranges (16 MB and more,
//                       ranges.hpp), each pass of fold_line_by_ranges alone, 1 thread,
//                       int64 indices, sum, through the library's own functions: `count`
//                       (the updates counted by range), `write_out` (written out to their
//                       ranges), `copy_through` (each range copied into the scratch and
//                       streamed to out, nothing folded) and `fold` (the same with each
//                       range's updates folded in): where a call's time goes, beside what
//                       memory allows (H_memcpy, H_read_inputs).
// And once: H_read_inputs_<index>, one pass over the indices and updates; `/ahead` fetches
// them ahead as the library's streaming fold does (histogram.hpp, prefetch_inputs_ahead): the
// floor of any fold that reads its inputs once.
//
// Names read H_<reduction>_f32_<index>/<distribution>/bins:<n>/threads:<t>.
// Benchmarks run table size by table size (the 128M-bin cases last); each
// size's arrays are built on first use and kept. For a smoke run, lower the
// update count with SCATTERKIT_HISTOGRAM_UPDATES (e.g. 100000) and/or filter
// on a size: --benchmark_filter='bins:4096/'.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_common.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace {

namespace sk = scatterkit;
namespace sb = scatterkit::bench;
using sk::Reduction;

// Updates per histogram (issue 33: 10M).
constexpr int64_t kUpdates = 10'000'000;

// kUpdates, or SCATTERKIT_HISTOGRAM_UPDATES when set (smoke runs).
int64_t update_count() {
  static const int64_t n = [] {
    const char* env = std::getenv("SCATTERKIT_HISTOGRAM_UPDATES");
    const int64_t v = env ? std::atoll(env) : 0;
    return v > 0 ? v : kUpdates;
  }();
  return n;
}

constexpr int64_t kBins[] = {int64_t(1) << 12, int64_t(1) << 16, int64_t(1) << 20, int64_t(1) << 24,
                             int64_t(1) << 27};

// How far ahead the references fetch a target into L2 (the library's distance).
constexpr int64_t kAhead = sk::detail::kPrefetchDistance;

enum class Dist { kUniform, kSkewed };

const char* dist_name(Dist d) { return d == Dist::kUniform ? "uniform" : "skewed"; }

int log2_of(int64_t bins) {
  int k = 0;
  while ((int64_t(1) << k) < bins) ++k;
  return k;
}

// n indices in [0, bins): uniform, or half uniform in the first 1% of the
// bins and half uniform in all of them, shuffled (Fisher-Yates).
std::vector<int64_t> histogram_indices(int64_t n, int64_t bins, Dist d, uint64_t stream) {
  if (d == Dist::kUniform) return sb::random_indices(n, bins, stream);
  sb::Rng rng(sb::kSeed, stream);
  const int64_t hot = std::max<int64_t>(1, bins / 100);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = rng.below(i < n / 2 ? hot : bins);
  for (int64_t i = n - 1; i > 0; --i) std::swap(v[size_t(i)], v[size_t(rng.below(i + 1))]);
  return v;
}

// A float array of n zeros. Arrays of 4 MB and more are aligned to 2 MB and
// advised to be backed by transparent huge pages, as NumPy's allocator does:
// with THP in "madvise" mode, a std::vector of a 512 MB table gets 4 KB pages
// and each random target then misses the TLB too, which the Python peers do
// not pay.
struct FloatArray {
  explicit FloatArray(int64_t n) : size(n) {
    const size_t bytes = size_t(n) * sizeof(float);
    constexpr size_t kHuge = size_t(2) << 20;
    if (bytes >= (size_t(4) << 20)) {
      ptr = static_cast<float*>(std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge));
#ifdef MADV_HUGEPAGE
      if (ptr) madvise(ptr, bytes, MADV_HUGEPAGE);
#endif
    } else {
      ptr = static_cast<float*>(std::malloc(std::max<size_t>(bytes, 1)));
    }
    if (!ptr) throw std::bad_alloc();
    std::memset(ptr, 0, bytes);  // faults every page in, untimed
  }
  ~FloatArray() { std::free(ptr); }
  FloatArray(const FloatArray&) = delete;
  FloatArray& operator=(const FloatArray&) = delete;
  float* data() const { return ptr; }
  float* ptr = nullptr;
  int64_t size = 0;
};

// One table size: data (zeros) and the preallocated output.
struct Table {
  FloatArray data, out;
  explicit Table(int64_t bins) : data(bins), out(bins) {}
  int64_t bytes() const { return data.size * int64_t(sizeof(float)); }
};

Table& table(int64_t bins) {
  static std::map<int64_t, std::unique_ptr<Table>> tables;
  std::unique_ptr<Table>& t = tables[bins];
  if (!t) t = std::make_unique<Table>(bins);
  return *t;
}

const std::vector<float>& updates() {
  static const std::vector<float> u = sb::random_values<float>(update_count(), 330);
  return u;
}

// The indices of one table size and distribution, in both index types.
struct Indices {
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
};

Indices& indices(int64_t bins, Dist d) {
  static std::map<std::pair<int64_t, int>, std::unique_ptr<Indices>> all;
  std::unique_ptr<Indices>& p = all[{bins, int(d)}];
  if (!p) {
    p = std::make_unique<Indices>();
    p->i64 = histogram_indices(update_count(), bins, d, 300 + 2 * uint64_t(log2_of(bins)) + int(d));
    p->i32 = sb::cast_indices<int32_t>(p->i64);
  }
  return *p;
}

template <class I>
const std::vector<I>& index_values(Indices& c) {
  if constexpr (std::is_same_v<I, int64_t>)
    return c.i64;
  else
    return c.i32;
}

template <class I>
const char* index_name() {
  return std::is_same_v<I, int64_t> ? "i64" : "i32";
}

// The op through the C++ API, out of place into the table's preallocated output.
template <class I>
void H_kernel(benchmark::State& state, int64_t bins, Reduction reduction, Dist d) {
  Table& t = table(bins);
  const std::vector<I>& idx = index_values<I>(indices(bins, d));
  const std::vector<float>& upd = updates();
  const int64_t n = int64_t(upd.size());
  const sk::TensorView<const float> data{t.data.data(), sk::Shape{bins}};
  const sk::TensorView<const I> index{idx.data(), sk::Shape{n}};
  const sk::TensorView<const float> update{upd.data(), sk::Shape{n}};
  const sk::TensorView<float> out{t.out.data(), sk::Shape{bins}};
  const int64_t traffic =
      sb::traffic_out_of_place(t.bytes(), n * int64_t(sizeof(I)), n * int64_t(sizeof(float)));
  sb::run_op(state, traffic, t.out.data(), [&] {
    sk::scatter_elements_update<float, I>(data, index, update, 0, out, reduction, true);
  });
}

void H_memcpy(benchmark::State& state, int64_t bins) {
  Table& t = table(bins);
  sb::run_memcpy_floor(state, t.out.data(), t.data.data(), t.bytes());
}

void H_gather_targets(benchmark::State& state, int64_t bins) {
  Table& t = table(bins);
  const std::vector<int64_t>& iv = indices(bins, Dist::kUniform).i64;
  const int64_t n = int64_t(iv.size());
  const int64_t* idx = iv.data();
  const uint32_t* tab = reinterpret_cast<const uint32_t*>(t.out.data());
  const int threads = sb::threads_arg(state);
  (void)threads;  // without OpenMP the loop runs on one thread
  for (auto _ : state) {
    uint64_t sum = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      if (i + kAhead < n) sk::detail::prefetch_l2(tab + idx[i + kAhead]);
      sum += tab[idx[i]];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * n * int64_t(sizeof(int64_t) + sizeof(float)));
}

enum class StreamMode { kPlain, kPrefetchL1, kGather };

const char* stream_mode_name(StreamMode m) {
  return m == StreamMode::kPlain        ? "plain"
         : m == StreamMode::kPrefetchL1 ? "prefetch_l1"
                                        : "gather";
}

void H_stream_fold(benchmark::State& state, int64_t bins, StreamMode mode) {
  Table& t = table(bins);
  const std::vector<int64_t>& iv = indices(bins, Dist::kUniform).i64;
  const std::vector<float>& uv = updates();
  const int64_t n = int64_t(iv.size());
  const int64_t* idx = iv.data();
  const float* upd = uv.data();
  float* out = t.out.data();
  constexpr int64_t kStep = sk::detail::kStreamStep;
  for (auto _ : state) {
    std::memcpy(out, t.data.data(), size_t(t.bytes()));
    uint32_t seen = 0;  // kGather: the targets' bits, xor-ed
    const uint32_t* bits = reinterpret_cast<const uint32_t*>(out);
    int64_t j = 0;
    for (; j + kStep <= n; j += kStep) {
      sk::detail::prefetch_inputs_ahead(j, n, idx, upd);
      if (mode == StreamMode::kGather) {
        for (int64_t i = j; i < j + kStep; ++i) seen ^= bits[idx[i]];
      } else if (mode == StreamMode::kPrefetchL1 && j + kAhead + kStep <= n) {
        for (int64_t i = j; i < j + kStep; ++i) {
          sk::detail::prefetch_l1(uintptr_t(out + idx[i + kAhead]));
          out[idx[i]] += upd[i];
        }
      } else {
        for (int64_t i = j; i < j + kStep; ++i) out[idx[i]] += upd[i];
      }
    }
    for (; j < n; ++j) out[idx[j]] += upd[j];
    benchmark::DoNotOptimize(seen);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * int64_t(sizeof(int64_t) + sizeof(float)));
}

enum class Loop { kSum, kMax, kSumPrefetch };

const char* loop_name(Loop l) {
  return l == Loop::kSum ? "sum" : l == Loop::kMax ? "max" : "sum_prefetch";
}

void H_bare_loop(benchmark::State& state, int64_t bins, Loop loop, Dist d) {
  Table& t = table(bins);
  const std::vector<int64_t>& iv = indices(bins, d).i64;
  const std::vector<float>& uv = updates();
  const int64_t n = int64_t(iv.size());
  const int64_t* idx = iv.data();
  const float* upd = uv.data();
  const float* data = t.data.data();
  float* out = t.out.data();
  const size_t bytes = size_t(t.bytes());
  for (auto _ : state) {
    std::memcpy(out, data, bytes);
    switch (loop) {
      case Loop::kSum:
        for (int64_t i = 0; i < n; ++i) out[idx[i]] += upd[i];
        break;
      case Loop::kMax:
        for (int64_t i = 0; i < n; ++i) out[idx[i]] = std::max(out[idx[i]], upd[i]);
        break;
      case Loop::kSumPrefetch: {
        int64_t i = 0;
        for (; i + kAhead < n; ++i) {
          sk::detail::prefetch_l2(out + idx[i + kAhead]);
          out[idx[i]] += upd[i];
        }
        for (; i < n; ++i) out[idx[i]] += upd[i];
        break;
      }
    }
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  const int64_t traffic =
      sb::traffic_out_of_place(t.bytes(), n * int64_t(sizeof(int64_t)), n * int64_t(sizeof(float)));
  state.SetBytesProcessed(state.iterations() * traffic);
  state.counters["MB_moved"] = double(traffic) / 1e6;
}

template <class I>
void H_read_inputs(benchmark::State& state, bool ahead) {
  const std::vector<I>& iv = index_values<I>(indices(kBins[0], Dist::kUniform));
  const int64_t n = int64_t(iv.size());
  const I* idx = iv.data();
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(updates().data());
  const int threads = sb::threads_arg(state);
  (void)threads;
  for (auto _ : state) {
    uint64_t sum = 0;  // integers: the loop vectorizes, a float sum would not
    if (!ahead) {
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
      for (int64_t i = 0; i < n; ++i) sum += uint64_t(idx[i]) + bits[i];
    } else {
      constexpr int64_t kStep = sk::detail::kStreamStep;
      const int64_t steps = n / kStep;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t i0 = s * kStep;
        sk::detail::prefetch_inputs_ahead(i0, n, idx, bits);
        for (int64_t i = i0; i < i0 + kStep; ++i) sum += uint64_t(idx[i]) + bits[i];
      }
      for (int64_t i = steps * kStep; i < n; ++i) sum += uint64_t(idx[i]) + bits[i];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * n * int64_t(sizeof(I) + sizeof(float)));
}

enum class RangePass { kCount, kWriteOut, kCopyThrough, kFold };

const char* range_pass_name(RangePass p) {
  switch (p) {
    case RangePass::kCount: return "count";
    case RangePass::kWriteOut: return "write_out";
    case RangePass::kCopyThrough: return "copy_through";
    case RangePass::kFold: return "fold";
  }
  return "?";
}

// One table size's and distribution's updates counted and written out by range, as
// fold_line_by_ranges does on one thread, for the passes that follow them.
struct RangesDone {
  using Entry = sk::detail::RangeEntry<float>;
  int shift = 0;
  int64_t ranges = 0;
  std::vector<int64_t> start;  // range r's entries: [start[r], start[r + 1])
  bool fetch = false;          // whether the write-out fetches its entries' lines ahead
  sk::detail::ScratchArray<Entry> entries;

  RangesDone(int64_t bins, const std::vector<int64_t>& idx, const float* upd)
      : entries(int64_t(idx.size())) {
    const int64_t n = int64_t(idx.size());
    shift = sk::detail::range_shift(bins, int64_t(sizeof(float)));
    ranges = ((bins - 1) >> shift) + 1;
    std::vector<int64_t> count(size_t(ranges), 0);
    sk::detail::count_part(idx.data(), 0, n, bins, {0, bins}, shift, count.data());
    start.assign(size_t(ranges + 1), 0);
    sk::detail::HotShare share(n, ranges);
    for (int64_t r = 0; r < ranges; ++r) {
      start[size_t(r + 1)] = start[size_t(r)] + count[size_t(r)];
      share.add_range(count[size_t(r)]);
    }
    fetch = share.above(sk::detail::kWriteOutFetchHotPercent);
    write_out(idx.data(), upd, n, bins);
  }

  void write_out(const int64_t* idx, const float* upd, int64_t n, int64_t bins) {
    std::vector<int64_t> at(start.begin(), start.end() - 1);
    if (fetch)
      sk::detail::write_out_part<true>(idx, upd, 0, n, bins, shift, at.data(), entries.get());
    else
      sk::detail::write_out_part<false>(idx, upd, 0, n, bins, shift, at.data(), entries.get());
  }
};

void H_range_pass(benchmark::State& state, int64_t bins, RangePass pass, Dist d) {
  Table& t = table(bins);
  const std::vector<int64_t>& idx = indices(bins, d).i64;
  const float* upd = updates().data();
  const int64_t n = int64_t(idx.size());
  static std::map<std::pair<int64_t, int>, std::unique_ptr<RangesDone>> done;
  std::unique_ptr<RangesDone>& r = done[{bins, int(d)}];
  if (!r) r = std::make_unique<RangesDone>(bins, idx, upd);
  // copy_through: the same pass with no entries to fold.
  const std::vector<int64_t> no_entries(size_t(r->ranges + 1), 0);
  const int64_t* start = pass == RangePass::kFold ? r->start.data() : no_entries.data();
  std::vector<int64_t> count(size_t(r->ranges));
  for (auto _ : state) {
    if (pass == RangePass::kCount) {
      std::fill(count.begin(), count.end(), 0);
      sk::detail::count_part(idx.data(), 0, n, bins, {0, bins}, r->shift, count.data());
      benchmark::DoNotOptimize(count.data());
    } else if (pass == RangePass::kWriteOut) {
      r->write_out(idx.data(), upd, n, bins);
    } else {
      sk::detail::fold_ranges<sk::detail::SumOp<float>>(t.data.data(), t.out.data(), bins, r->shift,
                                                        r->entries.get(), start, 0, r->ranges);
    }
    benchmark::ClobberMemory();
  }
}

void one_thread(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads"})->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
}

std::string bins_part(int64_t bins) { return "/bins:" + std::to_string(bins); }

template <class I>
void register_kernels(int64_t bins, Reduction r, const char* rname) {
  for (Dist d : {Dist::kUniform, Dist::kSkewed}) {
    const std::string name = std::string("H_") + rname + "_f32_" + index_name<I>() + "/" +
                             dist_name(d) + bins_part(bins);
    benchmark::RegisterBenchmark(name.c_str(), H_kernel<I>, bins, r, d)->Apply(sb::thread_args);
  }
}

bool register_all() {
  for (bool ahead : {false, true}) {
    const std::string suffix = ahead ? "/ahead" : "";
    benchmark::RegisterBenchmark(("H_read_inputs_i64" + suffix).c_str(), H_read_inputs<int64_t>,
                                 ahead)
        ->Apply(sb::thread_args);
    benchmark::RegisterBenchmark(("H_read_inputs_i32" + suffix).c_str(), H_read_inputs<int32_t>,
                                 ahead)
        ->Apply(sb::thread_args);
  }
  for (int64_t bins : kBins) {
    const std::string b = bins_part(bins);
    benchmark::RegisterBenchmark(("H_memcpy" + b).c_str(), H_memcpy, bins)->Apply(sb::thread_args);
    benchmark::RegisterBenchmark(("H_gather_targets" + b).c_str(), H_gather_targets, bins)
        ->Apply(sb::thread_args);
    for (Loop l : {Loop::kSum, Loop::kMax})
      for (Dist d : {Dist::kUniform, Dist::kSkewed}) {
        const std::string name =
            std::string("H_bare_loop/") + loop_name(l) + "/" + dist_name(d) + b;
        benchmark::RegisterBenchmark(name.c_str(), H_bare_loop, bins, l, d)->Apply(one_thread);
      }
    benchmark::RegisterBenchmark(("H_bare_loop/sum_prefetch/uniform" + b).c_str(), H_bare_loop,
                                 bins, Loop::kSumPrefetch, Dist::kUniform)
        ->Apply(one_thread);
    if (bins * int64_t(sizeof(float)) <= sk::detail::kStreamingFoldMaxBytes)
      for (StreamMode m : {StreamMode::kPlain, StreamMode::kPrefetchL1, StreamMode::kGather})
        benchmark::RegisterBenchmark(
            (std::string("H_stream_fold/") + stream_mode_name(m) + b).c_str(), H_stream_fold, bins,
            m)
            ->Apply(one_thread);
    if (bins * int64_t(sizeof(float)) >= sk::detail::kRangeFoldMinBytes)
      for (RangePass p :
           {RangePass::kCount, RangePass::kWriteOut, RangePass::kCopyThrough, RangePass::kFold})
        for (Dist d : {Dist::kUniform, Dist::kSkewed})
          benchmark::RegisterBenchmark(
              (std::string("H_range_pass/") + range_pass_name(p) + "/" + dist_name(d) + b).c_str(),
              H_range_pass, bins, p, d)
              ->Apply(one_thread);
    for (auto [r, rname] : {std::pair{Reduction::kSum, "sum"}, std::pair{Reduction::kMax, "max"}}) {
      register_kernels<int64_t>(bins, r, rname);
      register_kernels<int32_t>(bins, r, rname);
    }
  }
  return true;
}

const bool registered = register_all();

}  // namespace
