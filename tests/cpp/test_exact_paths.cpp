// The fast paths of the exact sums (exact=True), bit for bit against a reference that adds
// every term to a superaccumulator of its own (exact/superaccumulator.hpp) and rounds it once:
// one contiguous line folded a step at a time, unchecked while a bound proves the double sums
// exact (exact/line_fold.hpp), its parts' tables summed unchecked when their bounds hold
// together (exact/part_tables.hpp). Each case is built so that the bound holds, breaks at a
// chosen update, or never holds, and runs on 1, 2 and 3 threads.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "exact_reference.hpp"
#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_exact_paths {
namespace {

using scatterkit::bfloat16;
using scatterkit::float16;
using scatterkit::OpOptions;
using scatterkit::Reduction;
using sktest::cview;
using sktest::make;
using sktest::mview;
using sktest::same_bits;

// ScatterElementsUpdate-12 along a 1-D line with exact=True, every element's terms added to a
// superaccumulator one by one and rounded once: the semantics of docs/design.md section 2.5
// without any double slot.
template <class T>
std::vector<T> reference(const std::vector<T>& data, const std::vector<int64_t>& idx,
                         const std::vector<T>& upd, bool mean, bool use_init_val) {
  namespace sd = scatterkit::detail;
  using L = scatterkit::ExactLayout<T>;
  const int64_t size = int64_t(data.size());
  std::unordered_map<int64_t, std::vector<uint64_t>> states;  // the targeted elements only
  auto term = [](std::vector<uint64_t>& s, T v) {
    sd::add_value<T>(s.data(), sd::exact_double(v));
    ++s[L::kCount];
  };
  for (size_t p = 0; p < idx.size(); ++p) {
    const int64_t x = idx[p] < 0 ? idx[p] + size : idx[p];
    auto [it, fresh] = states.try_emplace(x, size_t(L::kWords), uint64_t(0));
    if (fresh && use_init_val) term(it->second, data[size_t(x)]);
    term(it->second, upd[p]);
  }
  std::vector<T> out = data;
  for (const auto& [x, s] : states)
    out[size_t(x)] = sd::finish_state<T>(s.data(), mean, s[L::kCount]);
  return out;
}

template <class T, class I = int64_t>
std::vector<T> exact_call(const std::vector<T>& data, const std::vector<int64_t>& idx,
                          const std::vector<T>& upd, Reduction r, bool use_init_val, int threads) {
  scatterkit::set_num_threads(threads);
  std::vector<T> out(data.size());
  OpOptions o;
  o.exact = true;
  const int64_t n = int64_t(data.size()), m = int64_t(idx.size());
  const std::vector<I> narrow(idx.begin(), idx.end());
  scatterkit::scatter_elements_update<T, I>(cview(data, {n}), cview(narrow, {m}), cview(upd, {m}),
                                            0, mview(out, {n}), r, use_init_val, o);
  scatterkit::set_num_threads(2);
  return out;
}

// Sum and mean, with and without the initial values, on 1, 2 and 3 threads, against the
// reference.
template <class T, class I = int64_t>
void expect_reference_bits(const std::vector<T>& data, const std::vector<int64_t>& idx,
                           const std::vector<T>& upd, const std::string& what,
                           std::vector<int> thread_counts = {1, 2, 3}) {
  for (Reduction r : {Reduction::kSum, Reduction::kMean})
    for (bool init : {true, false}) {
      const auto want = reference(data, idx, upd, r == Reduction::kMean, init);
      for (int threads : thread_counts)
        EXPECT_TRUE(same_bits(exact_call<T, I>(data, idx, upd, r, init, threads), want))
            << what << ": " << scatterkit::reduction_name(r) << ", init " << init << ", threads "
            << threads;
    }
}

// n indices uniform in [-size, size) (a negative one wraps) and n terms that are multiples of
// 2^-24 in [0, 1): the benchmarks' values, on which the bound holds throughout.
struct Line {
  std::vector<int64_t> idx;
  std::vector<float> upd;
};

Line fixed_point_line(int64_t n, int64_t size, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> pick(-size, size - 1);
  std::uniform_int_distribution<int32_t> k(0, (1 << 24) - 1);
  Line line;
  for (int64_t p = 0; p < n; ++p) {
    line.idx.push_back(pick(gen));
    line.upd.push_back(std::ldexp(float(k(gen)), -24));
  }
  return line;
}

template <class T>
std::vector<T> converted(const std::vector<float>& v) {
  std::vector<T> out;
  for (float x : v) out.push_back(make<T>(x));
  return out;
}

// Tables that stay in L2 (no targets fetched ahead) and one past it; lengths around a step
// (64 updates) and the targets fetched ahead; data zero and not.
TEST(ExactLinePaths, BoundHoldingEqualsTheReference) {
  for (int64_t size : {int64_t(1), int64_t(96), int64_t(4096), int64_t(200000)})
    for (int64_t n :
         {int64_t(0), int64_t(1), int64_t(63), int64_t(64), int64_t(200), int64_t(100003)}) {
      const Line line = fixed_point_line(n, size, uint64_t(size * 7 + n));
      const Line init = fixed_point_line(size, size, uint64_t(n + 1));
      const std::string what = "size " + std::to_string(size) + ", n " + std::to_string(n);
      expect_reference_bits(std::vector<float>(size_t(size), 0.0f), line.idx, line.upd,
                            what + ", zeros");
      expect_reference_bits(init.upd, line.idx, line.upd, what + ", data");
    }
}

// The same for the other float types: halves take the bound through float32, doubles never.
TEST(ExactLinePaths, OtherTypesEqualTheReference) {
  const int64_t size = 5000, n = 20000;
  const Line line = fixed_point_line(n, size, 5);
  const Line init = fixed_point_line(size, size, 6);
  expect_reference_bits(converted<double>(init.upd), line.idx, converted<double>(line.upd),
                        "double");
  expect_reference_bits(converted<float16>(init.upd), line.idx, converted<float16>(line.upd),
                        "float16");
  expect_reference_bits(converted<bfloat16>(init.upd), line.idx, converted<bfloat16>(line.upd),
                        "bfloat16");
}

// Terms that break the bound at a chosen update: a finer lowest bit (the limit falls below the
// sums already folded), a large term (the total passes the limit), an infinity or a NaN; at the
// first update, inside a step, at a step's start and in the tail. The sums past it are inexact
// in a double for some slots, which then spill; every bit still equals the reference.
TEST(ExactLinePaths, BoundBrokenAnywhereEqualsTheReference) {
  const int64_t size = 3000, n = 50000;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> breakers = {std::ldexp(1.0f, -60),
                                       std::ldexp(1.0f, 40),
                                       std::ldexp(3.0f, -149),  // a subnormal
                                       1e30f,
                                       -inf,
                                       std::numeric_limits<float>::quiet_NaN()};
  for (int64_t at : {int64_t(0), int64_t(37), int64_t(6400), int64_t(25031), n - 5})
    for (float breaker : breakers) {
      Line line = fixed_point_line(n, size, uint64_t(at + 11));
      line.upd[size_t(at)] = breaker;
      // the same slot meets ones and tiny terms again later: sums past 53 bits there
      for (int64_t p = at + 1; p < n; p += 997) {
        line.idx[size_t(p)] = line.idx[size_t(at)];
        line.upd[size_t(p)] = p % 2 ? 1.0f : std::ldexp(1.0f, -70);
      }
      expect_reference_bits(std::vector<float>(size_t(size), 0.0f), line.idx, line.upd,
                            "at " + std::to_string(at) + ", breaker " + std::to_string(breaker));
    }
}

// Sums that only the bits a double would lose decide: an element holding 1 + 2^-24, halfway
// between two floats, then meets terms after which its exact sum lies just above halfway (a tiny
// term; or a huge one, its negation and the tiny one). Any addition let through inexact rounds
// the element down instead of up; it must not matter where the terms fall (steps, threads).
TEST(ExactLinePaths, SumsThatOnlyLostBitsDecideEqualTheReference) {
  const int64_t size = 100, n = 40000;
  const float tiny = std::ldexp(1.0f, -70), huge = std::ldexp(1.0f, 40);
  for (int variant : {0, 1})
    for (int64_t at : {int64_t(3), int64_t(700), int64_t(20000)}) {
      Line line = fixed_point_line(n, size, uint64_t(at));
      for (auto& i : line.idx)
        if (i == 7 || i == 7 - size) i = 8;  // element 7 gets only the terms below
      auto put = [&](int64_t p, float v) {
        line.idx[size_t(p)] = 7;
        line.upd[size_t(p)] = v;
      };
      put(0, 1.0f);
      put(1, std::ldexp(1.0f, -24));
      if (variant == 0) {
        put(at, tiny);
      } else {
        put(at, huge);
        put(at + 5, -huge);
        put(n - 2, tiny);
      }
      const auto want =
          reference(std::vector<float>(size_t(size), 0.0f), line.idx, line.upd, false, true);
      EXPECT_EQ(want[7], 1.0f + std::ldexp(1.0f, -23));  // the case is what it claims
      expect_reference_bits(std::vector<float>(size_t(size), 0.0f), line.idx, line.upd,
                            "variant " + std::to_string(variant) + ", at " + std::to_string(at));
    }
}

// Data alone can break the bound: a tiny or a non-finite initial value, and a NaN in data that
// no update reaches keeps its bits.
TEST(ExactLinePaths, InitialValuesBreakingTheBoundEqualTheReference) {
  const int64_t size = 2000, n = 30000;
  const Line line = fixed_point_line(n, size, 21);
  for (float first : {std::ldexp(1.0f, -100), std::numeric_limits<float>::infinity(),
                      sktest::make<float>(std::nan(""))}) {
    std::vector<float> data(size_t(size), 1.0f);
    data[7] = first;
    const uint32_t payload = 0x7fc00123u;
    std::vector<int64_t> idx = line.idx;
    for (auto& i : idx)
      if (i == 1 || i == 1 - size) i = 2;  // element 1 untargeted
    std::memcpy(&data[1], &payload, 4);
    expect_reference_bits(data, idx, line.upd, "data " + std::to_string(first));
  }
}

// Values of every magnitude, as a real table holds them (log-normal sums over a wide range): the
// bound rarely holds, sums spill, and two threads' tables merge through their exact states.
TEST(ExactLinePaths, WideRangesEqualTheReference) {
  for (int64_t size : {int64_t(50), int64_t(150000)}) {
    const int64_t n = 120000;
    std::mt19937_64 gen{uint64_t(size)};
    std::uniform_int_distribution<int64_t> pick(0, size - 1);
    std::uniform_int_distribution<int> expo(-40, 40);
    std::normal_distribution<float> val(0.0f, 1.0f);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::vector<float> upd(static_cast<size_t>(n)), data(static_cast<size_t>(size));
    for (int64_t p = 0; p < n; ++p) {
      idx[size_t(p)] = pick(gen);
      upd[size_t(p)] = std::ldexp(val(gen), expo(gen));
    }
    for (auto& d : data) d = std::ldexp(val(gen), expo(gen));
    expect_reference_bits(data, idx, upd, "size " + std::to_string(size));
  }
}

// A 1-D histogram whose table (16 MB of T and more) goes by ranges of bins: uniform and skewed
// updates, values on which the bound holds and values of every magnitude, data with infinities,
// a targeted NaN and an untargeted NaN with a payload; every float type.
template <class T>
void check_ranges(int64_t size, int64_t n) {
  std::mt19937_64 gen{uint64_t(size + n)};
  std::uniform_int_distribution<int64_t> pick(-size, size - 1), hot(0, size / 100);
  std::uniform_int_distribution<int> expo(-40, 40), coin(0, 1);
  std::normal_distribution<float> val(0.0f, 1.0f);
  for (bool wide : {false, true})
    for (bool skewed : {false, true}) {
      std::vector<int64_t> idx(static_cast<size_t>(n));
      std::vector<float> upd(static_cast<size_t>(n));
      for (int64_t p = 0; p < n; ++p) {
        idx[size_t(p)] = skewed && coin(gen) ? hot(gen) : pick(gen);
        upd[size_t(p)] =
            wide ? std::ldexp(val(gen), expo(gen)) : std::ldexp(float(int32_t(gen() >> 40)), -24);
      }
      std::vector<float> init(static_cast<size_t>(size));
      for (auto& d : init) d = wide ? std::ldexp(val(gen), expo(gen)) : 0.25f;
      init[3] = std::numeric_limits<float>::infinity();
      init[size_t(idx[0] < 0 ? idx[0] + size : idx[0])] = std::nanf("");  // targeted
      std::vector<T> data = converted<T>(init);
      const uint32_t payload = 0x7fc00321u;  // an untargeted NaN (no index reaches size - 2)
      for (auto& i : idx)
        if (i == size - 2 || i == -2) i = 5;
      if constexpr (std::is_same_v<T, float>) std::memcpy(&data[size_t(size - 2)], &payload, 4);
      expect_reference_bits(data, idx, converted<T>(upd),
                            std::string(wide ? "wide" : "fixed point") +
                                (skewed ? ", skewed" : ", uniform") + ", size " +
                                std::to_string(size),
                            {1, 2});
    }
}

TEST(ExactLinePaths, TablesPastTheCacheGoByRangesAndEqualTheReference) {
  check_ranges<float>(int64_t(1) << 22, 300000);
  check_ranges<double>(int64_t(1) << 21, 100000);
  check_ranges<float16>(int64_t(1) << 23, 200000);
  check_ranges<bfloat16>(int64_t(1) << 23, 200000);
}

// int32 indices take the same paths: one table in cache, one past L2 (targets fetched ahead),
// and one by ranges.
TEST(ExactLinePaths, Int32IndicesEqualTheReference) {
  for (int64_t size : {int64_t(4096), int64_t(300000), int64_t(1) << 22}) {
    const int64_t n = 70000;
    const Line line = fixed_point_line(n, size, uint64_t(size + 3));
    const Line init = fixed_point_line(size, size, 4);
    expect_reference_bits<float, int32_t>(init.upd, line.idx, line.upd,
                                          "int32, size " + std::to_string(size), {1, 2});
  }
}

// Signed zeros where the bound holds and the adds go unchecked: elements that only -0 reaches
// (their sum -0), -0 and +0 (+0), x and -x (+0), and data of either sign; in one table and by
// ranges.
TEST(ExactLinePaths, SignedZerosEqualTheReference) {
  for (int64_t size : {int64_t(1000), int64_t(1) << 22}) {
    const int64_t n = 70000;
    Line line = fixed_point_line(n, size, 9);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t x = line.idx[size_t(p)] < 0 ? line.idx[size_t(p)] + size : line.idx[size_t(p)];
      float& u = line.upd[size_t(p)];
      if (x % 4 == 0) u = -0.0f;
      if (x % 4 == 1) u = p % 2 ? -0.0f : 0.0f;
      if (x % 4 == 2) u = p % 2 ? u : -u;
    }
    for (int64_t p = 0; p + 1 < n; p += 2)  // element 2 meets 0.5 and -0.5 only
      if (line.idx[size_t(p)] == 2) {
        line.upd[size_t(p)] = 0.5f;
        line.upd[size_t(p + 1)] = -0.5f;
        line.idx[size_t(p + 1)] = 2;
      }
    std::vector<float> data(static_cast<size_t>(size));
    for (int64_t x = 0; x < size; ++x)
      data[size_t(x)] = x % 3 == 0 ? -0.0f : x % 3 == 1 ? 0.0f : 0.75f;
    expect_reference_bits(data, line.idx, line.upd, "size " + std::to_string(size), {1, 2, 3});
  }
}

// Float means that land on a halfway point between two floats: the mean itself when the division
// was exact (to even), else just off it, which only the exact division tells.
TEST(ExactLinePaths, MeansAtHalfwayPointsRoundOnce) {
  const float u = std::ldexp(1.0f, -24);
  struct Case {
    std::vector<float> terms;
    float want;
  };
  const std::vector<Case> cases = {
      {{3.0f, 3 * u, 0.0f}, 1.0f},                           // 1 + 2^-24: to even
      {{-3.0f, -3 * u, -0.0f}, -1.0f},                       // the same, negative
      {{3.0f, 9 * u, 0.0f}, 1.0f + 4 * u},                   // 1 + 3 * 2^-24: to even
      {{3.0f, 3 * u, std::ldexp(1.0f, -60)}, 1.0f + 2 * u},  // just above halfway
      {{3.0f, 3 * u, -std::ldexp(1.0f, -60)}, 1.0f},         // just below
      {{1.0f, 1.0f, 1.0f + 2 * u, 1.0f, 1.0f}, 1.0f},        // 0.4 of an ulp above 1
  };
  for (const Case& c : cases) {
    const std::vector<int64_t> idx(c.terms.size(), 0);
    const std::vector<float> data = {5.0f};
    const auto want = reference(data, idx, c.terms, true, false);
    EXPECT_EQ(want[0], c.want) << c.terms[1];  // the case is what it claims
    for (int threads : {1, 2})
      EXPECT_TRUE(same_bits(exact_call(data, idx, c.terms, Reduction::kMean, false, threads), want))
          << c.terms[1] << ", threads " << threads;
  }
}

// A bad index leaves out untouched wherever it is: in the first step, in a step that adds
// unchecked, in the tail; out of place and in place.
TEST(ExactLinePaths, BadIndexLeavesOutUntouched) {
  for (int64_t size : {int64_t(300000), int64_t(1) << 22}) {  // in one table, by ranges
    const int64_t n = 70000;
    for (int64_t at : {int64_t(0), int64_t(5000), n - 3})
      for (int64_t bad : {size, -size - 1}) {
        Line line = fixed_point_line(n, size, 31);
        line.idx[size_t(at)] = bad;
        for (bool in_place : {false, true})
          for (int threads : {1, 2}) {
            scatterkit::set_num_threads(threads);
            std::vector<float> data(size_t(size), 0.5f), out(size_t(size), 3.0f);
            const std::vector<float> before = out;
            OpOptions o;
            o.exact = true;
            const float* src = in_place ? out.data() : data.data();
            EXPECT_THROW(
                (scatterkit::scatter_elements_update<float, int64_t>(
                    scatterkit::TensorView<const float>{src, {size}}, cview(line.idx, {n}),
                    cview(line.upd, {n}), 0, mview(out, {size}), Reduction::kSum, true, o)),
                scatterkit::IndexError);
            EXPECT_TRUE(same_bits(out, before))
                << "size " << size << ", at " << at << ", in place " << in_place;
          }
      }
  }
  scatterkit::set_num_threads(2);
}

// The scan behind the bound (double_slots.hpp): the largest magnitude and the lowest set bit of
// each term, against the lowest bit found by scaling: every exponent with fractions of no, one
// and many bits, every subnormal's lowest bit, zeros, and random patterns.
TEST(ExactBoundScan, LowestBitOfEveryKindOfTerm) {
  namespace sd = scatterkit::detail;
  auto want_code = [](float x) -> uint32_t {
    const double v = std::fabs(double(x));
    if (v == 0) return 0xffffffffu;
    int k = 127;  // the largest k with v a multiple of 2^k
    while (std::ldexp(v, -k) != std::floor(std::ldexp(v, -k))) --k;
    return uint32_t(k + sd::TermRange::kLowBias);
  };
  std::vector<uint32_t> patterns;
  for (uint32_t e = 0; e < 255; ++e)
    for (uint32_t f : {0u, 1u, 2u, 0x400000u, 0x7fffffu, 0x123400u, 0x000100u})
      for (uint32_t sign : {0u, 0x80000000u}) patterns.push_back(sign | e << 23 | f);
  for (int b = 0; b < 23; ++b) patterns.push_back(uint32_t(1) << b);  // subnormals
  std::mt19937_64 gen(77);
  for (int k = 0; k < 200000; ++k) {
    const uint32_t p = uint32_t(gen());
    if ((p & 0x7f800000u) != 0x7f800000u) patterns.push_back(p);  // finite
  }
  for (uint32_t p : patterns) {
    float x;
    std::memcpy(&x, &p, 4);
    uint32_t top = 0, low = 0xffffffffu;
    sd::scan_term(p, top, low);
    ASSERT_EQ(top, p & 0x7fffffffu) << std::hex << p;
    ASSERT_EQ(low, want_code(x)) << std::hex << p;
  }
  // the vector scan agrees with the scalar one over the lot
  sd::TermRange r, s;
  sd::scan_terms_dispatch(patterns.data(), int64_t(patterns.size()), r);
  for (uint32_t p : patterns) sd::scan_term(p, s.top, s.low);
  EXPECT_EQ(r.top, s.top);
  EXPECT_EQ(r.low, s.low);
}

// ---- states --------------------------------------------------------------------------

// Terms of one kind: multiples of 2^-24 in [0, 1) (the bound holds), of every magnitude, or
// specials among them (zeros of both signs, infinities, NaNs, subnormals).
std::vector<float> state_terms(int64_t n, int kind, std::mt19937_64& gen) {
  std::uniform_int_distribution<int> expo(-60, 60), pick(0, 9);
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            std::ldexp(1.0f, -149),
                            -std::ldexp(3.0f, -140)};
  for (auto& x : v) {
    if (kind == 0)
      x = std::ldexp(float(int32_t(gen() >> 40)), -24);
    else if (kind == 1 || pick(gen) != 0)
      x = std::ldexp(val(gen), expo(gen));
    else
      x = specials[gen() % 7];
  }
  return v;
}

// Through a table of slots (at least as many terms as elements): the words of the fold term by
// term, into empty states and into states holding terms, with one coordinate a tuple (negative
// ones too) and with two; a bad index leaves the states as they were.
template <class T>
void check_state_fold_through_slots() {
  constexpr auto dt = scatterkit::dtype_of<T>();
  using L = scatterkit::ExactLayout<T>;
  std::mt19937_64 gen(41);
  for (int64_t cells : {int64_t(1), int64_t(384), int64_t(3000)})
    for (int64_t n : {cells, 5 * cells + 7, int64_t(200000)})
      for (int kind : {0, 1, 2}) {
        const std::vector<T> upd = converted<T>(state_terms(n, kind, gen));
        std::uniform_int_distribution<int64_t> pick(-cells, cells - 1);
        std::vector<int64_t> idx(static_cast<size_t>(n)), flat(idx.size());
        for (size_t p = 0; p < idx.size(); ++p) {
          idx[p] = pick(gen);
          flat[p] = idx[p] < 0 ? idx[p] + cells : idx[p];
        }
        std::vector<uint64_t> start(size_t(cells * L::kWords), 0);
        const std::vector<T> init = converted<T>(state_terms(cells, kind, gen));
        for (bool empty : {true, false}) {
          if (!empty) scatterkit::exact_state_init(dt, init.data(), cells, start.data());
          std::vector<uint64_t> want = start;
          sktest::fold_term_by_term(want, flat, upd);
          for (int threads : {1, 2, 3}) {  // the terms split between tables, one per thread
            scatterkit::set_num_threads(threads);
            std::vector<uint64_t> got = start;
            scatterkit::exact_state_fold(
                dt, got.data(), {cells},
                scatterkit::IndexRef{idx.data(), {n, 1}, scatterkit::IndexType::kInt64},
                scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)});
            EXPECT_EQ(got, want) << "cells " << cells << ", n " << n << ", kind " << kind
                                 << ", empty " << empty << ", threads " << threads;
          }
          scatterkit::set_num_threads(2);
        }
        // two coordinates a tuple: a [cells / 12 + 1, 12] tensor
        const int64_t rows = cells / 12 + 1;
        std::vector<int64_t> pairs(static_cast<size_t>(2 * n)), flat2(idx.size());
        std::uniform_int_distribution<int64_t> row(-rows, rows - 1), col(0, 11);
        for (size_t p = 0; p < idx.size(); ++p) {
          pairs[2 * p] = row(gen);
          pairs[2 * p + 1] = col(gen);
          flat2[p] =
              (pairs[2 * p] < 0 ? pairs[2 * p] + rows : pairs[2 * p]) * 12 + pairs[2 * p + 1];
        }
        std::vector<uint64_t> want(size_t(rows * 12 * L::kWords), 0), got = want;
        sktest::fold_term_by_term(want, flat2, upd);
        scatterkit::exact_state_fold(
            dt, got.data(), {rows, 12},
            scatterkit::IndexRef{pairs.data(), {n, 2}, scatterkit::IndexType::kInt64},
            scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)});
        EXPECT_EQ(got, want) << "2-D, cells " << cells << ", n " << n << ", kind " << kind;
        // int32 indices
        const std::vector<int32_t> idx32(idx.begin(), idx.end());
        std::vector<uint64_t> want32(size_t(cells * L::kWords), 0), got32 = want32;
        sktest::fold_term_by_term(want32, flat, upd);
        scatterkit::exact_state_fold(
            dt, got32.data(), {cells},
            scatterkit::IndexRef{idx32.data(), {n, 1}, scatterkit::IndexType::kInt32},
            scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)});
        EXPECT_EQ(got32, want32) << "int32, cells " << cells << ", n " << n << ", kind " << kind;
        // a bad index, last: the states stay as they were
        std::vector<int64_t> bad = idx;
        bad.back() = cells;
        std::vector<uint64_t> kept = start;
        EXPECT_THROW(scatterkit::exact_state_fold(
                         dt, kept.data(), {cells},
                         scatterkit::IndexRef{bad.data(), {n, 1}, scatterkit::IndexType::kInt64},
                         scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)}),
                     scatterkit::IndexError);
        EXPECT_EQ(kept, start);
      }
}

// No elements: a term has nowhere to go (IndexError), and no terms change nothing.
TEST(ExactStatePaths, NoElements) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd = {1.0f};
  std::vector<uint64_t> none(8, 0);
  EXPECT_THROW(scatterkit::exact_state_fold(
                   scatterkit::DType::kFloat32, none.data(), {0},
                   scatterkit::IndexRef{idx.data(), {1, 1}, scatterkit::IndexType::kInt64},
                   scatterkit::TensorRef{upd.data(), {1}, scatterkit::DType::kFloat32, 4}),
               scatterkit::IndexError);
  scatterkit::exact_state_fold(
      scatterkit::DType::kFloat32, none.data(), {0},
      scatterkit::IndexRef{idx.data(), {0, 1}, scatterkit::IndexType::kInt64},
      scatterkit::TensorRef{upd.data(), {0}, scatterkit::DType::kFloat32, 4});
  EXPECT_EQ(none, std::vector<uint64_t>(8, 0));
}

TEST(ExactStatePaths, FoldThroughSlotsEqualsTermByTerm) {
  check_state_fold_through_slots<float>();
  check_state_fold_through_slots<double>();
  check_state_fold_through_slots<float16>();
  check_state_fold_through_slots<bfloat16>();
}

// ---- few updates into many elements -------------------------------------------------------

// The table over the targeted elements only (exact_elements_compact): targets on the first and
// last elements and on both sides of a bitmap word's edge, several in one word, repeated; terms
// and data of every magnitude with the specials; an output past the streamed stores' threshold;
// every float type, int32 indices, in place and not.
template <class T, class I = int64_t>
void check_compact(int64_t size, int64_t n, uint64_t seed, std::vector<int> threads = {1, 2, 3}) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> idx = {0, size - 1, -1, -size, 63, 64, 127, 128, 4095, 4096};
  for (int64_t x = 100; x < 120; ++x) idx.push_back(x);
  std::uniform_int_distribution<int64_t> pick(-size, size - 1);
  while (int64_t(idx.size()) < n) idx.push_back(pick(gen));
  std::shuffle(idx.begin(), idx.end(), gen);
  const std::vector<T> upd = converted<T>(state_terms(n, 2, gen));
  const std::vector<T> data = converted<T>(state_terms(size, 2, gen));
  const std::string what = "compact, size " + std::to_string(size);
  expect_reference_bits<T, I>(data, idx, upd, what, threads);
  const std::vector<I> narrow(idx.begin(), idx.end());
  for (Reduction r : {Reduction::kSum, Reduction::kMean})
    for (bool init : {true, false}) {
      const auto want = reference(data, idx, upd, r == Reduction::kMean, init);
      std::vector<T> out = data;  // in place
      OpOptions o;
      o.exact = true;
      scatterkit::scatter_elements_update<T, I>(cview(out, {size}), cview(narrow, {n}),
                                                cview(upd, {n}), 0, mview(out, {size}), r, init, o);
      EXPECT_TRUE(same_bits(out, want))
          << what << ", in place, " << scatterkit::reduction_name(r) << ", init " << init;
    }
}

TEST(ExactCompactPaths, EqualTheReference) {
  const int64_t size = 50000 + 37;  // past 3 elements per update: compact
  check_compact<float>(size, 4000, 81);
  check_compact<float, int32_t>(size, 4000, 82);
  check_compact<double>(size, 4000, 83);
  check_compact<float16>(size, 4000, 84);
  check_compact<bfloat16>(size, 4000, 85);
  check_compact<float>(int64_t(5) << 19, 60000, 86, {1, 2});  // 10 MB out: streamed
}

// The bitmap's numbering: each word's count of the bits before it, the targets in order, and each
// target's rank with the popcnt instruction where the processor has it and without, against
// counting bit by bit; words empty, full and random, several bitmaps merged.
TEST(ExactCompactPaths, BitmapRanksCountEveryBit) {
  namespace sd = scatterkit::detail;
  std::mt19937_64 gen(87);
  const int64_t words = 1000;
  for (int64_t maps : {int64_t(1), int64_t(3)}) {
    std::vector<uint64_t> map(size_t(maps * words));
    for (auto& w : map) w = gen() % 5 == 0 ? 0 : gen() % 5 == 1 ? ~uint64_t(0) : gen() & gen();
    std::vector<uint64_t> merged(size_t(words), 0);
    for (int64_t k = 0; k < maps; ++k)
      for (int64_t w = 0; w < words; ++w) merged[size_t(w)] |= map[size_t(k * words + w)];
    std::vector<int64_t> want_before(size_t(words + 1), 0);
    for (int64_t w = 0; w < words; ++w) {
      int64_t bits = 0;
      for (int b = 0; b < 64; ++b) bits += int64_t((merged[size_t(w)] >> b) & 1);
      want_before[size_t(w + 1)] = want_before[size_t(w)] + bits;
    }
    std::vector<int64_t> targets;
    for (int64_t x = 0; x < words * 64; ++x)
      if ((merged[size_t(x >> 6)] >> (x & 63)) & 1) targets.push_back(x);
    std::vector<uint64_t> m = map;
    std::vector<int64_t> before(size_t(words + 1)), element(targets.size());
    const int64_t hit = sd::number_words(m.data(), words, maps, before.data(), element.data());
    EXPECT_EQ(hit, want_before.back());
    EXPECT_EQ(before, want_before) << "maps " << maps;
    EXPECT_EQ(element, targets) << "maps " << maps;
    EXPECT_TRUE(std::equal(merged.begin(), merged.end(), m.begin()));
    std::shuffle(targets.begin(), targets.end(), gen);
    for (bool hard : {false, true}) {
      std::vector<int64_t> slot = targets;
      const int64_t n = int64_t(slot.size());
      if (hard)
        sd::rank_targets(slot.data(), 0, n, m.data(), before.data());
      else
        sd::rank_targets_body(slot.data(), 0, n, m.data(), before.data(), sd::SoftBitCount{});
      bool ranked = true;
      for (int64_t p = 0; p < n; ++p) {
        const int64_t x = targets[size_t(p)];
        int64_t below = want_before[size_t(x >> 6)];
        for (int b = 0; b < (x & 63); ++b) below += int64_t((merged[size_t(x >> 6)] >> b) & 1);
        ranked &= slot[size_t(p)] == below;
      }
      EXPECT_TRUE(ranked) << "maps " << maps << ", popcnt " << hard;
    }
  }
}
}  // namespace
}  // namespace test_exact_paths
