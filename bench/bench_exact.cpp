// Exact sums (exact=True) beside the C-order inexact fold of the same call and the read floor,
// timed in the same rounds (issue 48): what bench/RESULTS.md's table "Exact sums against the
// inexact fold" reports.
//
// Rows: W6 (1,000,000 zero bins, 10M float32 updates, int64 indices) sum and mean; the histogram
// sweep's sizes (4K to 128M bins, uniform and skewed, int64 and int32 indices, 10M updates) sum;
// W3 (ScatterElementsUpdate along axis 0 of [1000, 256, 7, 7] with [125, 20, 7, 6] indices) sum
// and mean; and the Spark aggregation's exact states on bench_events' shapes: a task's flush of
// 2M events folded into one 384-cell state (exact_state_fold) beside the inexact fold of the same
// events into a 384-cell tensor, and the states of 64 such flushes merged (exact_state_merge)
// beside adding their 64 float tensors.
//
// Per row and thread count: the read floor (one pass over the indices and updates, summed as
// integers, split between the threads: what any fold that reads its inputs once pays), the
// inexact call (exact=False) and the exact call, each once per round into outputs allocated
// once, in an order that rotates every round; medians of wall time. Usage:
//
//   OMP_WAIT_POLICY=PASSIVE build/bench/bench/bench_exact [--rounds 15] [--threads 1,2]
//       [--rows W6,H,W3,S] [--bins 4096,65536] [--updates N]
//
// It prints a Markdown table and the processor it ran on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_rng.hpp"
#include "scatterkit/scatterkit.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace {

namespace sk = scatterkit;
using sk::Reduction;

// Arrays on transparent huge pages, as NumPy allocates large ones (its arrays are what the
// Python API gets): on 4 KB pages a table of a few MB misses the TLB on most updates, which
// would slow the inexact fold's table (the caller's out) and not the exact one's (scratch).
template <class T>
struct HugePages {
  using value_type = T;
  HugePages() = default;
  template <class U>
  HugePages(const HugePages<U>&) {}
  T* allocate(size_t n) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t bytes = std::max<size_t>((n * sizeof(T) + kHuge - 1) / kHuge * kHuge, kHuge);
    void* p = std::aligned_alloc(kHuge, bytes);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <class U>
  bool operator==(const HugePages<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const HugePages<U>&) const {
    return false;
  }
};

template <class T>
using Array = std::vector<T, HugePages<T>>;

using scatterkit::bench::kSeed;
using scatterkit::bench::Rng;

Array<float> values(int64_t n, uint64_t stream) {
  Rng rng(kSeed, stream);
  Array<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.unit();
  return v;
}

// n indices in [0, bins): uniform, or skewed (half uniform in the first 1% of the bins, half in
// all of them, shuffled), as compare.py's family H.
Array<int64_t> indices(int64_t n, int64_t bins, bool skewed, uint64_t stream) {
  Rng rng(kSeed, stream);
  Array<int64_t> v(static_cast<size_t>(n));
  const int64_t hot = std::max<int64_t>(1, bins / 100);
  for (int64_t p = 0; p < n; ++p) v[size_t(p)] = rng.below(skewed && p < n / 2 ? hot : bins);
  if (skewed)
    for (int64_t p = n - 1; p > 0; --p) std::swap(v[size_t(p)], v[size_t(rng.below(p + 1))]);
  return v;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

volatile uint64_t g_sink;

// One pass over indices and updates, summed as integers (the loop vectorizes, so memory sets
// its pace), the threads splitting it.
template <class I>
void read_floor(const I* idx, const float* upd, int64_t n, int threads) {
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(upd);
  uint64_t sum = 0;
  (void)threads;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
  for (int64_t i = 0; i < n; ++i) sum += uint64_t(idx[i]) + bits[i];
  g_sink = sum;
}

struct Row {
  std::string name;
  std::function<void()> floor, inexact, exact;
};

struct Result {
  std::string name;
  int threads;
  double floor, inexact, exact;
};

// Times each row at each thread count: every round calls the three in a rotated order.
std::vector<Result> measure(std::vector<Row>& rows, int threads, int rounds) {
  std::vector<Result> results;
  sk::set_num_threads(threads);
  for (Row& row : rows) {
    std::function<void()>* f[3] = {&row.floor, &row.inexact, &row.exact};
    std::vector<double> t[3];
    for (auto* g : f) (*g)();  // warm: pages, the thread pool, caches of freed memory
    for (int r = 0; r < rounds; ++r)
      for (int k0 = 0; k0 < 3; ++k0) {
        const int k = (k0 + r) % 3;
        const double start = now_ms();
        (*f[k])();
        t[k].push_back(now_ms() - start);
      }
    results.push_back({row.name, threads, median(t[0]), median(t[1]), median(t[2])});
    std::fprintf(stderr, "%-28s thr %d: floor %8.3f  inexact %8.3f  exact %8.3f  (x%.3f)\n",
                 row.name.c_str(), threads, results.back().floor, results.back().inexact,
                 results.back().exact, results.back().exact / results.back().inexact);
  }
  return results;
}

// A 1-D ScatterElementsUpdate (a histogram) into out, with use_init_val.
template <class I>
void histogram(const Array<float>& data, const Array<I>& idx, const Array<float>& upd,
               Array<float>& out, Reduction r, bool exact) {
  sk::OpOptions o;
  o.exact = exact;
  const int64_t bins = int64_t(data.size()), n = int64_t(idx.size());
  sk::scatter_elements_update<float, I>({data.data(), {bins}}, {idx.data(), {n}}, {upd.data(), {n}},
                                        0, {out.data(), {bins}}, r, true, o);
}

// The arrays of one histogram row; kept alive by the row's functions.
template <class I>
struct HistogramCase {
  Array<float> data, upd, out;
  Array<I> idx;
};

template <class I>
Row histogram_row(const std::string& name, int64_t bins, int64_t n, bool skewed, Reduction r,
                  int* threads) {
  auto c = std::make_shared<HistogramCase<I>>();
  c->data.assign(size_t(bins), 0.0f);
  c->out.assign(size_t(bins), 0.0f);
  c->upd = values(n, 62);
  const Array<int64_t> wide = indices(n, bins, skewed, 61);
  c->idx.assign(wide.begin(), wide.end());
  return Row{name, [c, n, threads] { read_floor(c->idx.data(), c->upd.data(), n, *threads); },
             [c, r] { histogram(c->data, c->idx, c->upd, c->out, r, false); },
             [c, r] { histogram(c->data, c->idx, c->upd, c->out, r, true); }};
}

// W3: data [1000, 256, 7, 7] (random), indices [125, 20, 7, 6] along axis 0.
struct W3Case {
  sk::Shape data_shape{1000, 256, 7, 7}, index_shape{125, 20, 7, 6};
  Array<float> data, upd, out;
  Array<int64_t> idx;
};

Row w3_row(const std::string& name, Reduction r, int* threads) {
  auto c = std::make_shared<W3Case>();
  const int64_t count = 1000 * 256 * 7 * 7, n = 125 * 20 * 7 * 6;
  c->data = values(count, 20);
  c->out.assign(size_t(count), 0.0f);
  c->upd = values(n, 22);
  c->idx = indices(n, 1000, false, 21);
  auto call = [c, r, n](bool exact) {
    sk::OpOptions o;
    o.exact = exact;
    sk::scatter_elements_update<float, int64_t>(
        {c->data.data(), c->data_shape}, {c->idx.data(), c->index_shape},
        {c->upd.data(), c->index_shape}, 0, {c->out.data(), c->data_shape}, r, true, o);
    (void)n;
  };
  return Row{name, [c, n, threads] { read_floor(c->idx.data(), c->upd.data(), n, *threads); },
             [call] { call(false); }, [call] { call(true); }};
}

// The Spark aggregation's states (bench_events: 24 x 16 = 384 cells, a task's flush of 2M
// events; amounts log-normal, as bench_events draws them).
constexpr int64_t kCells = 384, kFlushEvents = int64_t(1) << 21, kFlushes = 64;

struct StateCase {
  Array<int64_t> idx;  // [events, 1]
  Array<float> upd, out;
  Array<uint64_t> state;
  // kFlushes states and tensors of one flush each, and what they merge into
  Array<uint64_t> states, merged;
  Array<float> tensors, sum;
};

Array<float> log_normal(int64_t n, uint64_t stream) {
  Rng rng(kSeed, stream);
  Array<float> v(static_cast<size_t>(n));
  for (float& x : v) {  // exp of a normal draw (Box-Muller)
    const double u1 = (double(rng.next() >> 11) + 1) * 0x1p-53,
                 u2 = double(rng.next() >> 11) * 0x1p-53;
    x = float(std::exp(3.0 + std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2)));
  }
  return v;
}

std::shared_ptr<StateCase> state_case() {
  static std::shared_ptr<StateCase> c;
  if (c) return c;
  c = std::make_shared<StateCase>();
  c->idx = indices(kFlushEvents, kCells, false, 81);
  c->upd = log_normal(kFlushEvents, 82);
  c->out.assign(size_t(kCells), 0.0f);
  const int words = sk::exact_state_words(sk::DType::kFloat32);
  c->state.assign(size_t(kCells * words), 0);
  c->states.assign(size_t(kFlushes * kCells * words), 0);
  c->tensors.assign(size_t(kFlushes * kCells), 0.0f);
  for (int64_t f = 0; f < kFlushes; ++f) {  // each flush's state and tensor from a slice of events
    const int64_t n = kFlushEvents / kFlushes;
    sk::exact_state_fold(sk::DType::kFloat32, c->states.data() + f * kCells * words, {kCells},
                         {c->idx.data() + f * n, {n, 1}, sk::IndexType::kInt64},
                         {c->upd.data() + f * n, {n}, sk::DType::kFloat32, sizeof(float)});
    for (int64_t p = f * n; p < (f + 1) * n; ++p)
      c->tensors[size_t(f * kCells + c->idx[size_t(p)])] += c->upd[size_t(p)];
  }
  c->merged.assign(size_t(kCells * words), 0);
  c->sum.assign(size_t(kCells), 0.0f);
  return c;
}

std::vector<Row> state_rows(int* threads) {
  auto c = state_case();
  const int words = sk::exact_state_words(sk::DType::kFloat32);
  Array<float> zeros(size_t(kCells), 0.0f);
  Row fold{"S fold 2M into 384 cells",
           [c, threads] { read_floor(c->idx.data(), c->upd.data(), kFlushEvents, *threads); },
           [c, zeros] {
             sk::scatter_elements_update<float, int64_t>(
                 {zeros.data(), {kCells}}, {c->idx.data(), {kFlushEvents}},
                 {c->upd.data(), {kFlushEvents}}, 0, {c->out.data(), {kCells}}, Reduction::kSum);
           },
           [c] {
             std::fill(c->state.begin(), c->state.end(), 0);
             sk::exact_state_fold(
                 sk::DType::kFloat32, c->state.data(), {kCells},
                 {c->idx.data(), {kFlushEvents, 1}, sk::IndexType::kInt64},
                 {c->upd.data(), {kFlushEvents}, sk::DType::kFloat32, sizeof(float)});
           }};
  // merging the 64 flushes' states against adding their 64 float tensors; the floor reads the
  // states once
  Row merge{"S merge 64 x 384 cells",
            [c, threads] {
              const uint64_t* w = c->states.data();
              const int64_t n = int64_t(c->states.size());
              uint64_t sum = 0;
              (void)threads;
#pragma omp parallel for num_threads(*threads) reduction(+ : sum) schedule(static)
              for (int64_t i = 0; i < n; ++i) sum += w[i];
              g_sink = sum;
            },
            [c] {
              std::fill(c->sum.begin(), c->sum.end(), 0.0f);
              for (int64_t f = 0; f < kFlushes; ++f)
                for (int64_t x = 0; x < kCells; ++x)
                  c->sum[size_t(x)] += c->tensors[size_t(f * kCells + x)];
            },
            [c, words] {
              std::fill(c->merged.begin(), c->merged.end(), 0);
              for (int64_t f = 0; f < kFlushes; ++f)
                sk::exact_state_merge(sk::DType::kFloat32, c->merged.data(),
                                      c->states.data() + f * kCells * words, kCells);
            }};
  return {fold, merge};
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    const size_t b = s.find(',', a);
    out.push_back(s.substr(a, b == std::string::npos ? std::string::npos : b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return out;
}

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string bins_label(int64_t bins) {
  if (bins % (1 << 20) == 0) return std::to_string(bins >> 20) + "M";
  if (bins % (1 << 10) == 0) return std::to_string(bins >> 10) + "K";
  return std::to_string(bins);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  std::vector<std::string> thread_list = {"1", "2"}, row_list = {"W6", "H", "W3", "S"};
  std::vector<std::string> bin_list = {"4096", "65536", "1048576", "16777216", "134217728"};
  int64_t updates = 10'000'000;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string key = argv[a], value = argv[a + 1];
    if (key == "--rounds") rounds = std::atoi(value.c_str());
    if (key == "--threads") thread_list = split(value);
    if (key == "--rows") row_list = split(value);
    if (key == "--bins") bin_list = split(value);
    if (key == "--updates") updates = std::atoll(value.c_str());
  }
  auto wanted = [&](const char* r) {
    return std::find(row_list.begin(), row_list.end(), r) != row_list.end();
  };
  int threads = 1;  // what the read floor splits its pass by, set per measurement
  std::vector<Row> rows;
  if (wanted("W6")) {
    rows.push_back(
        histogram_row<int64_t>("W6 sum", 1'000'000, updates, false, Reduction::kSum, &threads));
    rows.push_back(
        histogram_row<int64_t>("W6 mean", 1'000'000, updates, false, Reduction::kMean, &threads));
  }
  if (wanted("W3")) {
    rows.push_back(w3_row("W3 sum", Reduction::kSum, &threads));
    rows.push_back(w3_row("W3 mean", Reduction::kMean, &threads));
  }
  if (wanted("S"))
    for (Row& r : state_rows(&threads)) rows.push_back(r);
  std::vector<Result> results;
  for (const std::string& t : thread_list) {
    threads = std::atoi(t.c_str());
    for (Result& r : measure(rows, threads, rounds)) results.push_back(r);
  }
  if (wanted("H")) {
    for (const std::string& b : bin_list) {  // table by table: 128M's arrays take 1.2 GB
      const int64_t bins = std::atoll(b.c_str());
      std::vector<Row> h;
      for (bool skewed : {false, true}) {
        const std::string dist = skewed ? " skewed" : " uniform";
        h.push_back(histogram_row<int64_t>("H " + bins_label(bins) + " sum i64" + dist, bins,
                                           updates, skewed, Reduction::kSum, &threads));
        h.push_back(histogram_row<int32_t>("H " + bins_label(bins) + " sum i32" + dist, bins,
                                           updates, skewed, Reduction::kSum, &threads));
      }
      for (const std::string& t : thread_list) {
        threads = std::atoi(t.c_str());
        for (Result& r : measure(h, threads, rounds)) results.push_back(r);
      }
    }
  }
  std::printf("CPU: %s; %d rounds, medians of wall time (ms)\n\n", cpu_name().c_str(), rounds);
  std::printf("| row | thr | read floor | inexact | exact | exact/inexact | exact/read floor |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Result& r : results)
    std::printf("| %s | %d | %.3g | %.3g | %.3g | %.3f | %.2f |\n", r.name.c_str(), r.threads,
                r.floor, r.inexact, r.exact, r.exact / r.inexact, r.exact / r.floor);
  return 0;
}
