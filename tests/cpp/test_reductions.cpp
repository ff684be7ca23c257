// Reduction semantics (docs/design.md section 2), mostly through
// scatter_elements_update on 1-D data and scatter_nd_update for `sub`:
// identities, wrapping integer arithmetic, exact integer mean, half-precision
// accumulation, NaN propagation and bool logic.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_reductions {
namespace {

using scatterkit::bfloat16;
using scatterkit::float16;
using scatterkit::Reduction;
using sktest::cview;
using sktest::make;
using sktest::make_vector;
using sktest::mview;
using sktest::same_bits;

// scatter_elements_update on 1-D data with int64 indices.
template <class T>
std::vector<T> elements(const std::vector<T>& data, const std::vector<int64_t>& indices,
                        const std::vector<T>& updates, Reduction r, bool use_init_val = true) {
  std::vector<T> out(data.size());
  const int64_t n = int64_t(data.size()), m = int64_t(indices.size());
  scatterkit::scatter_elements_update<T, int64_t>(cview(data, {n}), cview(indices, {m}),
                                                  cview(updates, {m}), 0, mview(out, {n}), r,
                                                  use_init_val);
  return out;
}

// scatter_nd_update on 1-D data with one coordinate per update.
template <class T>
std::vector<T> nd(const std::vector<T>& data, const std::vector<int64_t>& indices,
                  const std::vector<T>& updates, Reduction r) {
  std::vector<T> out(data.size());
  const int64_t n = int64_t(data.size()), m = int64_t(indices.size());
  scatterkit::scatter_nd_update<T, int64_t>(cview(data, {n}), cview(indices, {m, 1}),
                                            cview(updates, {m}), mview(out, {n}), r);
  return out;
}

// ---- identities (use_init_val = false) ---------------------------------------

template <class T>
class ReductionIdentity : public ::testing::Test {};
using IdentityTypes = ::testing::Types<int32_t, uint8_t, int64_t, float, double>;
TYPED_TEST_SUITE(ReductionIdentity, IdentityTypes);

TYPED_TEST(ReductionIdentity, TargetsStartAtTheIdentityOthersKeepData) {
  using T = TypeParam;
  // Position 0 and 3 are never targeted and keep 5; 1 gets one update (so the
  // result is identity (+) u = u) and 2 gets several.
  const auto data = make_vector<T>({5, 5, 5, 5});
  const std::vector<int64_t> idx = {1, 2, 2, 2};
  const auto upd = make_vector<T>({3, 4, 6, 2});
  const bool no_init = false;
  EXPECT_EQ(elements(data, idx, upd, Reduction::kSum, no_init), make_vector<T>({5, 3, 12, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kProd, no_init), make_vector<T>({5, 3, 48, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kMin, no_init), make_vector<T>({5, 3, 2, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kMax, no_init), make_vector<T>({5, 3, 6, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kMean, no_init), make_vector<T>({5, 3, 4, 5}));
  // With data as the initial value, for contrast.
  EXPECT_EQ(elements(data, idx, upd, Reduction::kMin, true), make_vector<T>({5, 3, 2, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kMax, true), make_vector<T>({5, 5, 6, 5}));
  EXPECT_EQ(elements(data, idx, upd, Reduction::kSum, true), make_vector<T>({5, 8, 17, 5}));
}

TYPED_TEST(ReductionIdentity, MinAndMaxIdentitiesAreTheExtremes) {
  using T = TypeParam;
  using L = std::numeric_limits<T>;
  // The identity of min is the largest value (+inf for floats), of max the
  // lowest: an update equal to it comes out unchanged.
  const T top = L::has_infinity ? L::infinity() : L::max();
  const T bottom = L::has_infinity ? -L::infinity() : L::lowest();
  const std::vector<T> data = {T(7)};
  const std::vector<int64_t> idx = {0};
  EXPECT_EQ(elements(data, idx, {top}, Reduction::kMin, false), std::vector<T>{top});
  EXPECT_EQ(elements(data, idx, {bottom}, Reduction::kMax, false), std::vector<T>{bottom});
}

TEST(BoolReductionIdentity, StartValues) {
  // sum/max start at false, prod/min at true; data is ignored for targets.
  const std::vector<int64_t> idx = {0};
  auto run = [&](bool data, bool update, Reduction r) {
    const std::array<bool, 2> d = {data, data};
    const std::array<bool, 1> u = {update};
    std::array<bool, 2> out{};
    scatterkit::scatter_elements_update<bool, int64_t>(cview(d, {2}), cview(idx, {1}),
                                                       cview(u, {1}), 0, mview(out, {2}), r, false);
    EXPECT_EQ(out[1], data) << "untargeted position changed";
    return out[0];
  };
  EXPECT_FALSE(run(true, false, Reduction::kSum));
  EXPECT_FALSE(run(true, false, Reduction::kMax));
  EXPECT_TRUE(run(false, true, Reduction::kProd));
  EXPECT_TRUE(run(false, true, Reduction::kMin));
}

// ---- wrapping integer arithmetic -------------------------------------------------

TEST(IntegerWrap, SumWraps) {
  EXPECT_EQ(elements<int8_t>({127}, {0}, {1}, Reduction::kSum), std::vector<int8_t>{-128});
  EXPECT_EQ(elements<int8_t>({-128}, {0}, {-1}, Reduction::kSum), std::vector<int8_t>{127});
  EXPECT_EQ(elements<uint8_t>({255}, {0}, {1}, Reduction::kSum), std::vector<uint8_t>{0});
  EXPECT_EQ(elements<uint16_t>({65535}, {0, 0}, {1, 1}, Reduction::kSum), std::vector<uint16_t>{1});
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(elements<int64_t>({kMax64}, {0}, {1}, Reduction::kSum), std::vector<int64_t>{kMin64});
  EXPECT_EQ(elements<uint64_t>({~uint64_t(0)}, {0}, {2}, Reduction::kSum),
            std::vector<uint64_t>{1});
  // Through scatter_nd_update as well.
  EXPECT_EQ(nd<int8_t>({127}, {0, 0}, {1, 1}, Reduction::kSum), std::vector<int8_t>{-127});
}

TEST(IntegerWrap, ProdWraps) {
  // 65535 * 65535 overflows int after integer promotion; the result is
  // computed modulo 2^16: (2^16 - 1)^2 = 1 (mod 2^16).
  EXPECT_EQ(elements<uint16_t>({65535}, {0}, {65535}, Reduction::kProd), std::vector<uint16_t>{1});
  EXPECT_EQ(elements<uint16_t>({300}, {0}, {300}, Reduction::kProd),
            std::vector<uint16_t>{24464});  // 90000 - 65536
  EXPECT_EQ(elements<int16_t>({200}, {0}, {200}, Reduction::kProd),
            std::vector<int16_t>{-25536});  // 40000 - 65536
  EXPECT_EQ(elements<int32_t>({65536}, {0}, {65536}, Reduction::kProd), std::vector<int32_t>{0});
  EXPECT_EQ(elements<int32_t>({std::numeric_limits<int32_t>::max()}, {0}, {2}, Reduction::kProd),
            std::vector<int32_t>{-2});
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(elements<int64_t>({kMin64}, {0}, {-1}, Reduction::kProd), std::vector<int64_t>{kMin64});
  EXPECT_EQ(nd<uint16_t>({65535}, {0}, {65535}, Reduction::kProd), std::vector<uint16_t>{1});
}

TEST(IntegerWrap, SubWraps) {
  EXPECT_EQ(nd<int8_t>({-128}, {0}, {1}, Reduction::kSub), std::vector<int8_t>{127});
  EXPECT_EQ(nd<uint8_t>({0}, {0}, {1}, Reduction::kSub), std::vector<uint8_t>{255});
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(nd<int64_t>({kMin64}, {0}, {1}, Reduction::kSub), std::vector<int64_t>{kMax64});
}

// ---- exact integer mean, floor toward -inf ----------------------------------------

TEST(IntegerMean, FloorsTowardMinusInfinity) {
  EXPECT_EQ(elements<int32_t>({0}, {0, 0}, {-3, -4}, Reduction::kMean, false),
            std::vector<int32_t>{-4});  // -7 / 2 = -3.5
  EXPECT_EQ(elements<int32_t>({-7}, {0}, {0}, Reduction::kMean, true),
            std::vector<int32_t>{-4});  // count includes the initial value
  EXPECT_EQ(elements<int32_t>({0}, {0, 0}, {3, 4}, Reduction::kMean, false),
            std::vector<int32_t>{3});
  EXPECT_EQ(elements<int32_t>({-6}, {0, 0}, {-1, 0}, Reduction::kMean, true),
            std::vector<int32_t>{-3});  // -7 / 3 = -2.33
  EXPECT_EQ(elements<int16_t>({-6}, {0, 0}, {3, 3}, Reduction::kMean, true),
            std::vector<int16_t>{0});  // exact
}

TEST(IntegerMean, NarrowTypesDoNotOverflow) {
  EXPECT_EQ(elements<int8_t>({100}, {0, 0}, {100, 100}, Reduction::kMean),
            std::vector<int8_t>{100});
  EXPECT_EQ(elements<int8_t>({-128}, {0, 0}, {-128, -127}, Reduction::kMean),
            std::vector<int8_t>{-128});  // -383 / 3 = -127.67
  EXPECT_EQ(elements<uint8_t>({255}, {0}, {254}, Reduction::kMean), std::vector<uint8_t>{254});
}

TEST(IntegerMean, Int64NearTwoToThe62) {
  const int64_t big = int64_t(1) << 62;  // three of them sum past 2^63
  EXPECT_EQ(elements<int64_t>({big + 1}, {0, 0}, {big + 3, big + 5}, Reduction::kMean),
            std::vector<int64_t>{big + 3});
  EXPECT_EQ(elements<int64_t>({-big - 1}, {0, 0}, {-big, -big}, Reduction::kMean),
            std::vector<int64_t>{-big - 1});  // floor(-2^62 - 1/3)
  const uint64_t top = ~uint64_t(0);
  EXPECT_EQ(elements<uint64_t>({0}, {0, 0}, {top, top - 2}, Reduction::kMean, false),
            std::vector<uint64_t>{top - 1});
  EXPECT_EQ(elements<uint64_t>({0}, {0, 0}, {top, top - 1}, Reduction::kMean, false),
            std::vector<uint64_t>{top - 1});  // floor(2^64 - 1.5)
}

TEST(FloatMean, DividesOnce) {
  EXPECT_EQ(elements<float>({3}, {0, 0}, {1, 2}, Reduction::kMean), std::vector<float>{2});
  EXPECT_EQ(elements<double>({0}, {0, 0}, {1, 2}, Reduction::kMean, false),
            std::vector<double>{1.5});
}

// ---- float16 / bfloat16: accumulate in float32, round once -------------------------

TEST(HalfAccumulation, Float16SumRoundsOnce) {
  // Spacing of float16 at 2048 is 2: 2048 + 1 rounds back to 2048 (ties to
  // even) at every step, but 2048 + 1 + 1 = 2050 is exact.
  const auto data = make_vector<float16>({2048});
  const auto two_ones = make_vector<float16>({1, 1});
  EXPECT_TRUE(
      same_bits(elements(data, {0, 0}, two_ones, Reduction::kSum), make_vector<float16>({2050})));
  EXPECT_TRUE(same_bits(elements(make_vector<float16>({0}), {0, 0, 0},
                                 make_vector<float16>({2048, 1, 1}), Reduction::kSum, false),
                        make_vector<float16>({2050})));
  EXPECT_TRUE(same_bits(nd(data, {0, 0}, two_ones, Reduction::kSum), make_vector<float16>({2050})));
  EXPECT_TRUE(same_bits(nd(data, {0, 0}, make_vector<float16>({-1, -1}), Reduction::kSub),
                        make_vector<float16>({2050})));
}

TEST(HalfAccumulation, BFloat16SumRoundsOnce) {
  // Spacing of bfloat16 at 256 is 2.
  const auto data = make_vector<bfloat16>({256});
  const auto two_ones = make_vector<bfloat16>({1, 1});
  EXPECT_TRUE(
      same_bits(elements(data, {0, 0}, two_ones, Reduction::kSum), make_vector<bfloat16>({258})));
  EXPECT_TRUE(same_bits(nd(data, {0, 0}, two_ones, Reduction::kSum), make_vector<bfloat16>({258})));
}

TEST(HalfAccumulation, MeanAndProdInFloat32) {
  // mean of 2048, 1, 2: 2051 / 3 = 683.67 -> float16 683.5 (spacing 0.5).
  EXPECT_TRUE(same_bits(elements(make_vector<float16>({2048}), {0, 0}, make_vector<float16>({1, 2}),
                                 Reduction::kMean),
                        make_vector<float16>({683.5})));
  // h = float16(1.3) = 1.2998046875; h^5 = 3.71014... in float32 rounds to
  // 3.7109375, while rounding to float16 after every product gives 3.708984375.
  EXPECT_TRUE(same_bits(elements(make_vector<float16>({1.3}), {0, 0, 0, 0},
                                 make_vector<float16>({1.3, 1.3, 1.3, 1.3}), Reduction::kProd),
                        make_vector<float16>({3.7109375})));
}

// Every reduction on random halves against a float32 accumulator rounded once.
template <class H>
void check_halves_against_float_reference(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-3, 3);
  const int64_t n = 7, m = 200;
  std::vector<H> data(n), upd(m);
  std::vector<int64_t> idx(m);
  for (auto& v : data) v = make<H>(value(rng));
  for (auto& v : upd) v = make<H>(value(rng));
  for (auto& i : idx) i = int64_t(rng() % 5);  // positions 5, 6 untouched
  for (Reduction r :
       {Reduction::kSum, Reduction::kProd, Reduction::kMin, Reduction::kMax, Reduction::kMean})
    for (bool init : {true, false}) {
      std::vector<float> acc(n);
      std::vector<int64_t> count(n, 0);
      for (int64_t j = 0; j < m; ++j) {
        const size_t t = size_t(idx[size_t(j)]);
        const float u = scatterkit::to_float(upd[size_t(j)]);
        if (count[t]++ == 0) {
          if (init)
            acc[t] = scatterkit::to_float(data[t]);
          else
            acc[t] = r == Reduction::kProd  ? 1.0f
                     : r == Reduction::kMin ? INFINITY
                     : r == Reduction::kMax ? -INFINITY
                                            : 0.0f;
        }
        switch (r) {
          case Reduction::kProd: acc[t] *= u; break;
          case Reduction::kMin: acc[t] = u < acc[t] ? u : acc[t]; break;
          case Reduction::kMax: acc[t] = acc[t] < u ? u : acc[t]; break;
          default: acc[t] += u; break;
        }
      }
      std::vector<H> expected = data;
      for (size_t t = 0; t < size_t(n); ++t) {
        if (count[t] == 0) continue;
        if (r == Reduction::kMean) acc[t] /= float(count[t] + (init ? 1 : 0));
        expected[t] = make<H>(acc[t]);
      }
      EXPECT_TRUE(same_bits(elements(data, idx, upd, r, init), expected))
          << scatterkit::reduction_name(r) << (init ? " with" : " without") << " init";
    }
}

TEST(HalfAccumulation, Float16RandomMatchesFloat32Reference) {
  check_halves_against_float_reference<float16>(11);
}

TEST(HalfAccumulation, BFloat16RandomMatchesFloat32Reference) {
  check_halves_against_float_reference<bfloat16>(12);
}

// ---- NaN in min / max propagates from either operand -------------------------------

template <class T>
class NanPropagation : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double, float16, bfloat16>;
TYPED_TEST_SUITE(NanPropagation, FloatTypes);

template <class T>
bool is_nan(T v) {
  if constexpr (sktest::is_half_v<T>)
    return std::isnan(scatterkit::to_float(v));
  else
    return std::isnan(v);
}

TYPED_TEST(NanPropagation, MinAndMaxFromEitherOperand) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // 0: NaN data, number update; 1: number data, NaN update; 2: NaN update
  // followed by numbers; 3: numbers only.
  const auto data = make_vector<T>({nan, 1, 1, 1});
  const std::vector<int64_t> idx = {0, 1, 2, 2, 2, 3};
  const auto upd = make_vector<T>({0, nan, nan, -5, 5, 2});
  for (Reduction r : {Reduction::kMin, Reduction::kMax}) {
    for (bool init : {true, false}) {
      const auto out = elements(data, idx, upd, r, init);
      EXPECT_EQ(is_nan(out[0]), init) << scatterkit::reduction_name(r);
      EXPECT_TRUE(is_nan(out[1])) << scatterkit::reduction_name(r);
      EXPECT_TRUE(is_nan(out[2])) << scatterkit::reduction_name(r);
      EXPECT_FALSE(is_nan(out[3])) << scatterkit::reduction_name(r);
    }
    const auto out = nd(data, idx, upd, r);
    EXPECT_TRUE(is_nan(out[0]) && is_nan(out[1]) && is_nan(out[2]) && !is_nan(out[3]))
        << "scatter_nd_update " << scatterkit::reduction_name(r);
  }
}

// ---- bool: sum = OR, prod = AND, min = AND, max = OR, sub = XOR ----------------------

TEST(BoolReductions, LogicalFolds) {
  // Target t gets updates ups[t] folded into data d[t] (use_init_val).
  const std::array<bool, 4> d = {false, false, true, true};
  const std::vector<int64_t> idx = {0, 0, 1, 1, 2, 2, 3, 3};
  const std::array<bool, 8> u = {false, false, false, true, false, true, true, true};
  auto run = [&](Reduction r, bool use_nd) {
    std::array<bool, 4> out{};
    if (use_nd)
      scatterkit::scatter_nd_update<bool, int64_t>(cview(d, {4}), cview(idx, {8, 1}), cview(u, {8}),
                                                   mview(out, {4}), r);
    else
      scatterkit::scatter_elements_update<bool, int64_t>(cview(d, {4}), cview(idx, {8}),
                                                         cview(u, {8}), 0, mview(out, {4}), r);
    return out;
  };
  using B = std::array<bool, 4>;
  for (bool use_nd : {false, true}) {
    EXPECT_EQ(run(Reduction::kSum, use_nd), (B{false, true, true, true}));
    EXPECT_EQ(run(Reduction::kMax, use_nd), (B{false, true, true, true}));
    EXPECT_EQ(run(Reduction::kProd, use_nd), (B{false, false, false, true}));
    EXPECT_EQ(run(Reduction::kMin, use_nd), (B{false, false, false, true}));
  }
  // XOR: f^f^f = f, f^f^t = t, t^f^t = f, t^t^t = t.
  EXPECT_EQ(run(Reduction::kSub, true), (B{false, true, false, true}));
}

TEST(BoolReductions, MeanIsATypeError) {
  const std::array<bool, 2> d = {true, false};
  const std::vector<int64_t> idx = {0};
  const std::array<bool, 1> u = {true};
  std::array<bool, 2> out = {false, true};
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      [&] {
        scatterkit::scatter_elements_update<bool, int64_t>(
            cview(d, {2}), cview(idx, {1}), cview(u, {1}), 0, mview(out, {2}), Reduction::kMean);
      },
      "reduction 'mean' is not supported for bool"));
  EXPECT_EQ(out, (std::array<bool, 2>{false, true}));
}

TEST(ReductionNames, RoundTrip) {
  for (Reduction r : {Reduction::kNone, Reduction::kSum, Reduction::kSub, Reduction::kProd,
                      Reduction::kMin, Reduction::kMax, Reduction::kMean})
    EXPECT_EQ(scatterkit::reduction_from_name(scatterkit::reduction_name(r)), r);
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [] { scatterkit::reduction_from_name("add"); }, "unknown reduction 'add'"));
}

}  // namespace
}  // namespace test_reductions
