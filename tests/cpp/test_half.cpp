// float16 / bfloat16 storage conversions: exhaustive over all 65536 bit
// patterns, round to nearest with ties to even, NaN stays NaN.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_half {
namespace {

using scatterkit::bfloat16;
using scatterkit::float16;
using scatterkit::Reduction;
using scatterkit::to_bfloat16;
using scatterkit::to_float;
using scatterkit::to_float16;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// binary16 decoded from its definition, independently of the library.
double decode_half(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double mag;
  if (exp == 0)
    mag = std::ldexp(double(man), -24);
  else if (exp == 31)
    mag = man == 0 ? std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::quiet_NaN();
  else
    mag = std::ldexp(double(1024 + man), exp - 25);
  return sign ? -mag : mag;
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

TEST(Float16, ToFloatDecodesEveryBitPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = to_float(float16{uint16_t(h)});
    const double expected = decode_half(uint16_t(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << h;
    } else {
      ASSERT_EQ(bits(f), bits(float(expected))) << std::hex << h;  // also -0 vs +0
    }
  }
}

TEST(Float16, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = to_float16(to_float(float16{uint16_t(h)})).bits;
    if (half_is_nan(uint16_t(h))) {
      // NaN stays NaN with its sign and payload (made quiet).
      ASSERT_TRUE(half_is_nan(back)) << std::hex << h << " -> " << back;
      ASSERT_EQ(back, h | 0x0200u) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Float16, TiesRoundToEvenEverywhere) {
  // The midpoint of two neighbouring finite halves is exact in float32 and
  // must round to the one with an even significand; its float32 neighbours
  // must round to the nearer half.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = to_float(float16{uint16_t(h | sign)});
      const float hi = to_float(float16{uint16_t((h + 1) | sign)});
      const float mid = (lo + hi) / 2;
      ASSERT_EQ(double(mid),
                (decode_half(uint16_t(h | sign)) + decode_half(uint16_t((h + 1) | sign))) / 2);
      const uint32_t even = (h % 2 == 0) ? h : h + 1;
      ASSERT_EQ(to_float16(mid).bits, even | sign) << std::hex << h;
      ASSERT_EQ(to_float16(std::nextafter(mid, lo)).bits, h | sign) << std::hex << h;
      ASSERT_EQ(to_float16(std::nextafter(mid, hi)).bits, (h + 1) | sign) << std::hex << h;
    }
  }
}

TEST(Float16, NamedRoundingCases) {
  EXPECT_EQ(to_float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);      // tie -> 1.0
  EXPECT_EQ(to_float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // tie -> even
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -25)).bits, 0x0000);  // half the smallest subnormal
  EXPECT_EQ(to_float16(std::ldexp(3.0f, -25)).bits, 0x0002);  // subnormal tie -> even
  EXPECT_EQ(to_float16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 0x0001);
  EXPECT_EQ(to_float16(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(to_float16(65504.0f).bits, 0x7bff);               // largest finite
  EXPECT_EQ(to_float16(std::nextafter(65520.0f, 0.0f)).bits, 0x7bff);
  EXPECT_EQ(to_float16(65520.0f).bits, 0x7c00);  // tie with 2^16 -> inf
  EXPECT_EQ(to_float16(1e10f).bits, 0x7c00);
  EXPECT_EQ(to_float16(-1e10f).bits, 0xfc00);
  EXPECT_EQ(to_float16(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(to_float16(-0.0f).bits, 0x8000);
  EXPECT_EQ(to_float16(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(to_float16(-std::numeric_limits<float>::denorm_min()).bits, 0x8000);
  // NaNs whose payload sits only in the low float32 bits must not become inf.
  EXPECT_TRUE(half_is_nan(to_float16(from_bits(0x7f800001u)).bits));
  EXPECT_TRUE(half_is_nan(to_float16(from_bits(0xffc00000u)).bits));
  EXPECT_EQ(to_float16(from_bits(0xffc00000u)).bits & 0x8000, 0x8000);
}

TEST(Float16, RandomFloatsRoundToTheNearestHalf) {
  std::mt19937 rng(2024);
  for (int i = 0; i < 200000; ++i) {
    // Magnitudes around the float16 range, both signs.
    const uint32_t u = (rng() & 0x80000000u) | (0x30000000u + rng() % 0x18000000u);
    const float x = from_bits(u);
    const uint16_t h = to_float16(x).bits;
    const double got = decode_half(h);
    if (std::isinf(got)) {
      ASSERT_GE(std::fabs(double(x)), 65520.0) << x;
      continue;
    }
    const double err = std::fabs(double(x) - got);
    // Neither neighbour of h is nearer.
    for (int step : {-1, 1}) {
      const uint16_t n = uint16_t(h + step);
      if ((h & 0x7fff) == 0 && step < 0) continue;
      if (half_is_nan(n) || (n & 0x7fff) == 0x7c00) continue;
      ASSERT_LE(err, std::fabs(double(x) - decode_half(n))) << x << " -> " << std::hex << h;
    }
  }
}

TEST(BFloat16, EveryBitPatternRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = to_float(bfloat16{uint16_t(h)});
    ASSERT_EQ(bits(f), h << 16);
    const uint16_t back = to_bfloat16(f).bits;
    const bool nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
    if (nan) {
      ASSERT_TRUE((back & 0x7f80) == 0x7f80 && (back & 0x7f) != 0) << std::hex << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000);
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(BFloat16, TiesRoundToEvenEverywhere) {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint32_t mid = ((h | sign) << 16) | 0x8000u;
      const uint32_t even = (h % 2 == 0) ? h : h + 1;  // 0x7f7f rounds up to inf
      ASSERT_EQ(to_bfloat16(from_bits(mid)).bits, even | sign) << std::hex << h;
      ASSERT_EQ(to_bfloat16(from_bits(mid - 1)).bits, h | sign) << std::hex << h;
      ASSERT_EQ(to_bfloat16(from_bits(mid + 1)).bits, (h + 1) | sign) << std::hex << h;
    }
  }
}

TEST(BFloat16, NamedCases) {
  EXPECT_EQ(to_bfloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(to_bfloat16(from_bits(0x3f808000u)).bits, 0x3f80);  // tie -> even
  EXPECT_EQ(to_bfloat16(from_bits(0x3f818000u)).bits, 0x3f82);  // tie -> even
  EXPECT_EQ(to_bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(to_bfloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  const uint16_t nan = to_bfloat16(from_bits(0x7f800001u)).bits;  // low payload only
  EXPECT_TRUE((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0) << std::hex << nan;
}

// min/max of 16-bit floats fold on the output, rounding after every update;
// that must give the bits of one rounding of a float accumulator at the end
// (signalling NaNs quieted once, the first of -0/+0 kept).
template <class H, class Op>
void expect_rounding_per_update_is_exact(uint16_t snan, uint16_t qnan) {
  std::vector<H> values;
  for (uint16_t bits : {snan, qnan, uint16_t(0x0000), uint16_t(0x8000)}) {
    H h;
    std::memcpy(&h, &bits, 2);
    values.push_back(h);
  }
  for (float f : {1.0f, -1.0f, 65504.0f, -std::numeric_limits<float>::infinity()})
    values.push_back(scatterkit::detail::from_compute<H>(f));
  const int64_t bins = 16, n = 4000;
  std::mt19937 rng(5);
  std::vector<H> data(bins), upd(n);
  std::vector<int64_t> idx(n);
  for (auto& d : data) d = values[rng() % values.size()];
  for (int64_t k = 0; k < n; ++k) {
    // Mostly zeros and ones, rarely a NaN: bins differ in which comes first.
    upd[size_t(k)] = values[rng() % 50 == 0 ? rng() % 2 : 2 + rng() % (values.size() - 2)];
    idx[size_t(k)] = int64_t(rng() % bins);
  }
  const Reduction r =
      std::is_same_v<Op, scatterkit::detail::MaxOp<H>> ? Reduction::kMax : Reduction::kMin;
  for (bool init : {true, false}) {
    std::vector<float> acc(bins);
    std::vector<bool> hit(bins, false);
    for (int64_t b = 0; b < bins; ++b)
      acc[size_t(b)] = init ? to_float(data[size_t(b)]) : Op::identity();
    for (int64_t k = 0; k < n; ++k) {
      const size_t b = size_t(idx[size_t(k)]);
      acc[b] = Op::combine(acc[b], upd[size_t(k)]);
      hit[b] = true;
    }
    std::vector<H> expected = data;
    for (size_t b = 0; b < size_t(bins); ++b)
      if (hit[b]) expected[b] = Op::store(acc[b], 1);
    std::vector<H> out(bins);
    scatterkit::scatter_elements_update<H, int64_t>(
        sktest::cview(data, {bins}), sktest::cview(idx, {n}), sktest::cview(upd, {n}), 0,
        sktest::mview(out, {bins}), r, init);
    EXPECT_TRUE(sktest::same_bits(out, expected))
        << scatterkit::reduction_name(r) << ", use_init_val " << init;
  }
}

TEST(HalfReductions, MinMaxRoundingPerUpdateIsExact) {
  using namespace scatterkit::detail;
  expect_rounding_per_update_is_exact<float16, MaxOp<float16>>(0x7c01, 0xfe00);
  expect_rounding_per_update_is_exact<float16, MinOp<float16>>(0x7c01, 0xfe00);
  expect_rounding_per_update_is_exact<bfloat16, MaxOp<bfloat16>>(0x7f81, 0xffc0);
  expect_rounding_per_update_is_exact<bfloat16, MinOp<bfloat16>>(0x7f81, 0xffc0);
}

// half_min_max works on the bits; it must equal converting both operands to
// float32, combining and rounding back. Every target bit pattern against the
// special patterns of both signs (zeros, subnormals, the largest normal,
// infinities, signalling and quiet NaNs) and random ones, in both roles.
template <class H, class Op>
void expect_min_max_on_bits_is_the_float32_fold(uint16_t inf, uint16_t quiet) {
  std::vector<uint16_t> others;
  for (uint16_t mag : {uint16_t(0), uint16_t(1), uint16_t(inf - 1), uint16_t(inf + 1),
                       uint16_t(0x0100), uint16_t(inf), uint16_t(inf | 1), uint16_t(inf | quiet),
                       uint16_t(0x7fff), uint16_t(inf >> 1)})
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) others.push_back(uint16_t(sign | mag));
  std::mt19937 rng(11);
  for (int k = 0; k < 300; ++k) others.push_back(uint16_t(rng()));
  int64_t mismatches = 0;
  for (uint32_t x = 0; x < 0x10000; ++x)
    for (uint16_t y : others)
      for (bool flip : {false, true}) {
        H a, u;
        a.bits = flip ? y : uint16_t(x);
        u.bits = flip ? uint16_t(x) : y;
        const H want = Op::store(Op::combine(Op::load(a), u), 1);
        const H got = scatterkit::detail::half_min_max<Op>(a, u);
        if (got.bits != want.bits && ++mismatches <= 5)
          ADD_FAILURE() << std::hex << "a " << a.bits << " u " << u.bits << ": " << got.bits
                        << " != " << want.bits;
      }
  EXPECT_EQ(mismatches, 0);
}

TEST(HalfReductions, MinMaxOnBitsIsTheFloat32Fold) {
  using namespace scatterkit::detail;
  expect_min_max_on_bits_is_the_float32_fold<float16, MaxOp<float16>>(0x7c00, 0x0200);
  expect_min_max_on_bits_is_the_float32_fold<float16, MinOp<float16>>(0x7c00, 0x0200);
  expect_min_max_on_bits_is_the_float32_fold<bfloat16, MaxOp<bfloat16>>(0x7f80, 0x0040);
  expect_min_max_on_bits_is_the_float32_fold<bfloat16, MinOp<bfloat16>>(0x7f80, 0x0040);
}

}  // namespace
}  // namespace test_half
