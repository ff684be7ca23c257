// ScatterElementsUpdate-3 / -12 through the typed API:
//   out[p with p[axis] = indices[p]] = reduce(out[...], updates[p]), C order of p.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_scatter_elements_update {
namespace {

using scatterkit::float16;
using scatterkit::OpOptions;
using scatterkit::Reduction;
using scatterkit::scatter_elements_update;
using scatterkit::to_float;
using scatterkit::to_float16;
using scatterkit::detail::format_shape;
using sktest::cview;
using sktest::mview;
using sktest::same_bits;
using sktest::Shape;

// ---- the spec's examples (ScatterElementsUpdate-12) --------------------------

TEST(ScatterElementsUpdateSpec, Example1SumWithNegativeIndices) {
  const std::vector<float> data = {2, 3, 4, 6};
  const std::vector<int64_t> indices = {1, 0, 0, -2, -1, 2};
  const std::vector<float> updates = {10, 20, 30, 40, 70, 60};
  std::vector<float> out(4);
  scatter_elements_update<float, int64_t>(cview(data, {4}), cview(indices, {6}),
                                          cview(updates, {6}), 0, mview(out, {4}), Reduction::kSum,
                                          true);
  EXPECT_EQ(out, (std::vector<float>{52, 13, 104, 76}));
}

TEST(ScatterElementsUpdateSpec, Example2SumWithoutInitialValue) {
  const std::vector<float> data = {2, 3, 4, 6};
  const std::vector<int64_t> indices = {1, 0, 0, 2, 3, 2};
  const std::vector<float> updates = {10, 20, 30, 40, 70, 60};
  std::vector<float> out(4);
  scatter_elements_update<float, int64_t>(cview(data, {4}), cview(indices, {6}),
                                          cview(updates, {6}), 0, mview(out, {4}), Reduction::kSum,
                                          false);
  EXPECT_EQ(out, (std::vector<float>{50, 10, 100, 70}));
}

TEST(ScatterElementsUpdateSpec, Example3NoneAxis1) {
  const std::vector<int32_t> data(12, 0);
  const std::vector<int32_t> indices = {1, 2, 0, 3};
  const std::vector<int32_t> updates = {11, 12, 13, 14};
  std::vector<int32_t> out(12);
  scatter_elements_update<int32_t, int32_t>(cview(data, {3, 4}), cview(indices, {2, 2}),
                                            cview(updates, {2, 2}), 1, mview(out, {3, 4}));
  EXPECT_EQ(out, (std::vector<int32_t>{0, 11, 12, 0, 13, 0, 0, 14, 0, 0, 0, 0}));
}

TEST(ScatterElementsUpdateSpec, Example4SumAxis1) {
  const std::vector<int32_t> data(12, 1);
  const std::vector<int32_t> indices = {1, 1, 0, 3};
  const std::vector<int32_t> updates = {11, 12, 13, 14};
  std::vector<int32_t> out(12);
  scatter_elements_update<int32_t, int32_t>(cview(data, {3, 4}), cview(indices, {2, 2}),
                                            cview(updates, {2, 2}), 1, mview(out, {3, 4}),
                                            Reduction::kSum, true);
  EXPECT_EQ(out, (std::vector<int32_t>{1, 24, 1, 1, 14, 1, 1, 15, 1, 1, 1, 1}));
}

TEST(ScatterElementsUpdateSpec, Example5ProdAxis1) {
  const std::vector<int32_t> data(12, 2);
  const std::vector<int32_t> indices = {1, 1, 0, 3};
  const std::vector<int32_t> updates = {11, 12, 13, 14};
  std::vector<int32_t> out(12);
  scatter_elements_update<int32_t, int32_t>(cview(data, {3, 4}), cview(indices, {2, 2}),
                                            cview(updates, {2, 2}), 1, mview(out, {3, 4}),
                                            Reduction::kProd, true);
  EXPECT_EQ(out, (std::vector<int32_t>{2, 264, 2, 2, 26, 2, 2, 28, 2, 2, 2, 2}));
}

TEST(ScatterElementsUpdateSpec, V3FormulaFor3dAxes) {
  // output[indices[i][j][k]][j][k] = updates[i][j][k] (axis 0), and so on.
  const Shape dshape = {2, 3, 4};
  const auto data = sktest::iota_vector<int32_t>(24);
  const std::vector<int64_t> idx = {1, 0, 1, 0, 1, 1};  // shape (1, 2, 3)
  const std::vector<int32_t> upd = {-1, -2, -3, -4, -5, -6};
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::vector<int32_t> out(24);
    scatter_elements_update<int32_t, int64_t>(cview(data, dshape), cview(idx, {1, 2, 3}),
                                              cview(upd, {1, 2, 3}), axis, mview(out, dshape),
                                              Reduction::kNone, true, OpOptions{false, nullptr});
    std::vector<int32_t> expected = data;
    for (int64_t i = 0; i < 1; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 3; ++k) {
          int64_t p[3] = {i, j, k};
          p[axis] = idx[size_t(j * 3 + k)];
          expected[size_t(p[0] * 12 + p[1] * 4 + p[2])] = upd[size_t(j * 3 + k)];
        }
    EXPECT_EQ(out, expected) << "axis " << axis;
  }
}

// ---- behaviour ---------------------------------------------------------------

TEST(ScatterElementsUpdate, DuplicatesLastWriteWins) {
  // indices.shape[axis] may exceed data.shape[axis].
  const std::vector<double> data = {0, 0};
  const std::vector<int32_t> indices = {1, 0, 1, 1, 0};
  const std::vector<double> updates = {1, 2, 3, 4, 5};
  std::vector<double> out(2);
  scatter_elements_update<double, int32_t>(cview(data, {2}), cview(indices, {5}),
                                           cview(updates, {5}), 0, mview(out, {2}));
  EXPECT_EQ(out, (std::vector<double>{5, 4}));
}

TEST(ScatterElementsUpdate, DuplicatesFoldInCOrder) {
  // Float addition is not associative, so the sums pin the order: in float32
  // 1e8 + 1 - 1e8 is 0 and 1e8 - 1e8 + 1 is 1 (reversed, both would be 0).
  const std::vector<float> data = {0, 0, 0};
  const std::vector<int64_t> indices = {2, 1, 2, 0, 1, 2, 1};
  const std::vector<float> updates = {1e8f, 1e8f, 1, 5, -1e8f, -1e8f, 1};
  std::vector<float> out(3);
  scatter_elements_update<float, int64_t>(cview(data, {3}), cview(indices, {7}),
                                          cview(updates, {7}), 0, mview(out, {3}), Reduction::kSum);
  EXPECT_EQ(out, (std::vector<float>{5, 1, 0}));
}

TEST(ScatterElementsUpdate, NegativeIndicesWrapOnce) {
  const std::vector<int8_t> data = {0, 0, 0, 0, 0};
  const std::vector<int64_t> indices = {-1, -5, 2};
  const std::vector<int8_t> updates = {1, 2, 3};
  std::vector<int8_t> out(5);
  scatter_elements_update<int8_t, int64_t>(cview(data, {5}), cview(indices, {3}),
                                           cview(updates, {3}), 0, mview(out, {5}));
  EXPECT_EQ(out, (std::vector<int8_t>{2, 0, 3, 0, 1}));
}

TEST(ScatterElementsUpdate, NegativeIndicesRejectedInV3) {
  const std::vector<int8_t> data = {0, 0, 0, 0, 0};
  const std::vector<int64_t> indices = {0, -1};
  const std::vector<int8_t> updates = {1, 2};
  std::vector<int8_t> out(5, 9);
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatter_elements_update<int8_t, int64_t>(
            cview(data, {5}), cview(indices, {2}), cview(updates, {2}), 0, mview(out, {5}),
            Reduction::kNone, true, OpOptions{false, "ScatterElementsUpdate-3"});
      },
      "ScatterElementsUpdate-3: index -1 is out of bounds for axis 0 with size 5"));
  EXPECT_EQ(out, std::vector<int8_t>(5, 9));
}

TEST(ScatterElementsUpdate, IndicesSmallerThanDataInOtherDims) {
  // indices (2, 2) in data (3, 4) along axis 0: the inner dim is not contiguous
  // in data, and row 2 / columns 2..3 are out of reach.
  const auto data = sktest::iota_vector<int32_t>(12);
  const std::vector<int32_t> indices = {2, 1, 0, 2};
  const std::vector<int32_t> updates = {-1, -2, -3, -4};
  std::vector<int32_t> out(12);
  scatter_elements_update<int32_t, int32_t>(cview(data, {3, 4}), cview(indices, {2, 2}),
                                            cview(updates, {2, 2}), 0, mview(out, {3, 4}));
  EXPECT_EQ(out, (std::vector<int32_t>{-3, 1, 2, 3, 4, -2, 6, 7, -1, -4, 10, 11}));
}

TEST(ScatterElementsUpdate, InPlaceNoneAndMean) {
  std::vector<int32_t> data = {10, 20, 30, 40};
  const std::vector<int64_t> indices = {3, 3, 0};
  const std::vector<int32_t> updates = {1, 2, 3};
  auto view = mview(data, {4});
  ASSERT_EQ(view.data, data.data());
  scatter_elements_update<int32_t, int64_t>(cview(data, {4}), cview(indices, {3}),
                                            cview(updates, {3}), 0, view);
  EXPECT_EQ(data, (std::vector<int32_t>{3, 20, 30, 2}));
  // mean folds through a side table, then writes back once.
  scatter_elements_update<int32_t, int64_t>(cview(data, {4}), cview(indices, {3}),
                                            cview(updates, {3}), 0, view, Reduction::kMean, true);
  EXPECT_EQ(data, (std::vector<int32_t>{3, 20, 30, 1}));  // (2+1+2)/3 = 1, (3+3)/2 = 3
}

TEST(ScatterElementsUpdate, EmptyIndicesCopyData) {
  const auto data = sktest::iota_vector<float>(6);
  const std::vector<int64_t> indices;
  const std::vector<float> updates;
  std::vector<float> out(6, -1);
  scatter_elements_update<float, int64_t>(cview(data, {2, 3}), cview(indices, {2, 0}),
                                          cview(updates, {2, 0}), 1, mview(out, {2, 3}),
                                          Reduction::kSum, false);
  EXPECT_EQ(out, data);
}

struct Rgb {
  unsigned char r, g, b;
};

TEST(ScatterElementsUpdate, OpaqueThreeByteElements) {
  const std::vector<Rgb> data = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
  const std::vector<int64_t> indices = {2, 0};
  const std::vector<Rgb> updates = {{7, 8, 9}, {4, 5, 6}};
  std::vector<Rgb> out(3);
  scatter_elements_update<Rgb, int64_t>(cview(data, {3}), cview(indices, {2}), cview(updates, {2}),
                                        0, mview(out, {3}));
  const std::vector<Rgb> expected = {{4, 5, 6}, {2, 2, 2}, {7, 8, 9}};
  EXPECT_TRUE(same_bits(out, expected));
}

// ---- random inputs against the plain-loop reference -----------------------------

int32_t reference_fold(Reduction r, int32_t a, int32_t u) {
  switch (r) {
    case Reduction::kSum: return int32_t(uint32_t(a) + uint32_t(u));
    case Reduction::kProd: return int32_t(uint32_t(a) * uint32_t(u));
    case Reduction::kMin: return std::min(a, u);
    case Reduction::kMax: return std::max(a, u);
    default: return u;
  }
}

int32_t reference_identity(Reduction r) {
  switch (r) {
    case Reduction::kProd: return 1;
    case Reduction::kMin: return std::numeric_limits<int32_t>::max();
    case Reduction::kMax: return std::numeric_limits<int32_t>::lowest();
    default: return 0;
  }
}

// ScatterElementsUpdate-12 on int32 by plain loops, every reduction.
std::vector<int32_t> reference(const std::vector<int32_t>& data, const Shape& dshape,
                               const std::vector<int64_t>& idx, const Shape& ishape,
                               const std::vector<int32_t>& upd, int64_t axis, Reduction r,
                               bool use_init_val) {
  std::vector<int32_t> out = data;
  std::vector<int64_t> sum(data.size()), count(data.size(), 0);
  sktest::ref_scatter_elements(out, dshape, idx, ishape, upd, axis, [&](int32_t& dst, int32_t u) {
    const size_t t = size_t(&dst - out.data());
    if (count[t]++ == 0) {
      sum[t] = use_init_val ? dst : 0;
      if (!use_init_val) dst = reference_identity(r);
    }
    sum[t] += u;
    dst = reference_fold(r, dst, u);
  });
  if (r == Reduction::kMean)
    for (size_t t = 0; t < out.size(); ++t) {
      if (count[t] == 0) continue;
      const int64_t n = count[t] + (use_init_val ? 1 : 0);
      int64_t q = sum[t] / n;
      if (q * n != sum[t] && sum[t] < 0) --q;
      out[t] = int32_t(q);
    }
  return out;
}

class ScatterElementsUpdateRandom
    : public ::testing::TestWithParam<std::tuple<int64_t, Reduction, bool>> {};

TEST_P(ScatterElementsUpdateRandom, MatchesReference) {
  const auto [axis, reduction, use_init_val] = GetParam();
  std::mt19937 rng(unsigned(100 + axis * 17 + int(reduction) * 3 + use_init_val));
  const Shape dshape = {3, 4, 5};
  for (int trial = 0; trial < 8; ++trial) {
    Shape ishape(3);
    for (size_t d = 0; d < 3; ++d)
      ishape[d] = int64_t(d) == axis ? 1 + int64_t(rng() % 7) : 1 + int64_t(rng() % dshape[d]);
    const int64_t n = sktest::count_of(ishape), size = dshape[size_t(axis)];
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (auto& i : idx) i = int64_t(rng() % uint64_t(2 * size)) - size;  // [-size, size)
    std::vector<int32_t> data(60), upd(static_cast<size_t>(n));
    for (auto& v : data) v = int32_t(rng() % 19) - 9;
    for (auto& v : upd) v = int32_t(rng() % 19) - 9;
    std::vector<int32_t> out(60);
    scatter_elements_update<int32_t, int64_t>(cview(data, dshape), cview(idx, ishape),
                                              cview(upd, ishape), axis, mview(out, dshape),
                                              reduction, use_init_val);
    ASSERT_EQ(out, reference(data, dshape, idx, ishape, upd, axis, reduction, use_init_val))
        << "trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(AxesAndReductions, ScatterElementsUpdateRandom,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values(Reduction::kNone, Reduction::kSum,
                                                              Reduction::kProd, Reduction::kMin,
                                                              Reduction::kMax, Reduction::kMean),
                                            ::testing::Bool()),
                         [](const auto& p) {
                           return "axis" + std::to_string(std::get<0>(p.param)) + "_" +
                                  scatterkit::reduction_name(std::get<1>(p.param)) +
                                  (std::get<2>(p.param) ? "_init" : "_noinit");
                         });

// Reductions folded in a table of (accumulator, count) slots keyed on (target,
// line) cover many lines per block only when a line's index count crosses
// dozens (an axis-0 scatter with 200 lines here; the tests above have at most
// 20): each line must keep its own slots, with few updates per target
// (started on the first update) or many (started in a sweep), and with the
// indices narrower than data across the axis.
TEST(ScatterElementsUpdate, TableFoldsOverBlocksOfManyLines) {
  struct Case {
    Shape dshape, ishape;
  };
  const Case cases[] = {{{40, 200}, {25, 200}},       // fewer updates than targets per line
                        {{40, 200}, {90, 200}},       // more
                        {{40, 8, 30}, {25, 8, 25}}};  // narrower than data
  std::mt19937 rng(23);
  for (const Case& c : cases) {
    const int64_t n = sktest::count_of(c.ishape), size = c.dshape[0];
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (auto& i : idx) i = int64_t(rng() % uint64_t(2 * size)) - size;
    std::vector<int32_t> data(static_cast<size_t>(sktest::count_of(c.dshape))),
        upd(static_cast<size_t>(n));
    for (auto& v : data) v = int32_t(rng() % 199) - 99;
    for (auto& v : upd) v = int32_t(rng() % 199) - 99;
    for (bool init : {true, false}) {
      std::vector<int32_t> out(data.size());
      scatter_elements_update<int32_t, int64_t>(cview(data, c.dshape), cview(idx, c.ishape),
                                                cview(upd, c.ishape), 0, mview(out, c.dshape),
                                                Reduction::kMean, init);
      EXPECT_EQ(out, reference(data, c.dshape, idx, c.ishape, upd, 0, Reduction::kMean, init))
          << format_shape(c.ishape) << ", init " << init;
      // float16 sums in a float32 accumulator, rounded once per target
      std::vector<float16> hdata(data.size()), hupd(upd.size()), hout(data.size());
      for (size_t k = 0; k < data.size(); ++k) hdata[k] = sktest::make<float16>(data[k] / 8.0);
      for (size_t k = 0; k < upd.size(); ++k) hupd[k] = sktest::make<float16>(upd[k] / 8.0);
      scatter_elements_update<float16, int64_t>(cview(hdata, c.dshape), cview(idx, c.ishape),
                                                cview(hupd, c.ishape), 0, mview(hout, c.dshape),
                                                Reduction::kSum, init);
      std::vector<float> acc(data.size());
      std::vector<bool> hit(data.size(), false);
      for (size_t k = 0; k < data.size(); ++k) acc[k] = to_float(hdata[k]);
      sktest::ref_scatter_elements(acc, c.dshape, idx, c.ishape, hupd, 0, [&](float& a, float16 u) {
        const size_t t = size_t(&a - acc.data());
        if (!hit[t] && !init) a = 0;
        hit[t] = true;
        a += to_float(u);
      });
      std::vector<float16> expected = hdata;
      for (size_t k = 0; k < data.size(); ++k)
        if (hit[k]) expected[k] = to_float16(acc[k]);
      EXPECT_TRUE(same_bits(hout, expected)) << format_shape(c.ishape) << ", init " << init;
    }
  }
}

// A 1-D histogram walks its one long line with a fast loop for indices in
// [0, size), which hands the rest of the line to a general loop after a few
// negative ones: every mix of signs must give the reference's result.
TEST(ScatterElementsUpdate, OneLongLineWithAnyMixOfSigns) {
  const int64_t size = 97, n = 5000;
  struct Mix {
    const char* name;
    int64_t first_negative;  // positions before this one are never negative
    int every;               // then every `every`-th index is negative (0: none)
  };
  const Mix mixes[] = {{"no negatives", n, 0},
                       {"a few negatives", 0, 400},
                       {"all negative", 0, 1},
                       {"negatives from the middle on", n / 2, 3},
                       {"half negative", 0, 2}};
  std::mt19937 rng(11);
  std::vector<int32_t> data(static_cast<size_t>(size)), upd(static_cast<size_t>(n));
  for (auto& v : data) v = int32_t(rng() % 19) - 9;
  for (auto& v : upd) v = int32_t(rng() % 19) - 9;
  for (const Mix& mix : mixes) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      idx[size_t(k)] = int64_t(rng() % uint64_t(size));
      if (k >= mix.first_negative && mix.every > 0 && k % mix.every == 0) idx[size_t(k)] -= size;
    }
    for (Reduction r : {Reduction::kNone, Reduction::kSum, Reduction::kMax, Reduction::kMean}) {
      std::vector<int32_t> out(data.size());
      scatter_elements_update<int32_t, int64_t>(cview(data, {size}), cview(idx, {n}),
                                                cview(upd, {n}), 0, mview(out, {size}), r);
      EXPECT_EQ(out, reference(data, {size}, idx, {n}, upd, 0, r, true))
          << mix.name << ", " << scatterkit::reduction_name(r);
    }
  }
}

TEST(ScatterElementsUpdate, FloatSumMatchesReferenceBitwise) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1e4f, 1e4f);
  const Shape dshape = {16, 33};
  std::vector<float> data(16 * 33), upd(40 * 30);
  std::vector<int64_t> idx(40 * 30);
  for (auto& v : data) v = value(rng);
  for (auto& v : upd) v = value(rng);
  for (auto& i : idx) i = int64_t(rng() % 16);
  std::vector<float> out(data.size()), expected = data;
  scatter_elements_update<float, int64_t>(cview(data, dshape), cview(idx, {40, 30}),
                                          cview(upd, {40, 30}), 0, mview(out, dshape),
                                          Reduction::kSum);
  sktest::ref_scatter_elements(expected, dshape, idx, {40, 30}, upd, 0,
                               [](float& d, float u) { d = d + u; });
  EXPECT_TRUE(same_bits(out, expected));
}

// A float mean over one line with more updates than targets (a 1-D
// histogram): in a table of slots while that fits in L2, else summed in place
// and counted in bytes that wrap. Targets hit 256 times and more, a line along
// a strided axis, and untouched targets (a NaN payload, -0) that must keep
// their exact bits, with and without data's value.
template <class T>
void check_histogram_mean(int64_t size, int64_t columns, int64_t n, bool use_init_val,
                          bool hot_target) {
  std::mt19937 rng(uint32_t(size * 31 + n));
  std::uniform_real_distribution<T> value(-100, 100);
  const Shape dshape = {size, columns};
  std::vector<T> data(static_cast<size_t>(size * columns)), upd(static_cast<size_t>(n));
  for (auto& v : data) v = value(rng);
  for (auto& v : upd) v = value(rng);
  const int64_t untouched = size - 1;
  data[size_t(untouched * columns)] = std::numeric_limits<T>::quiet_NaN();
  std::memset(&data[size_t(untouched * columns)], 0x7f, 2);  // a payload
  if (size > 2) data[size_t((size - 2) * columns)] = T(-0.0);
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    // with a hot target, a third of the updates into target 3 (its count wraps)
    idx[size_t(k)] = hot_target && k % 3 == 0 ? 3 : int64_t(rng() % uint64_t(size - 2));
    if (k % 7 == 0) idx[size_t(k)] -= size;  // negative ones wrap
  }
  std::vector<T> out(data.size()), expected = data;
  scatter_elements_update<T, int64_t>(cview(data, dshape), cview(idx, {n, 1}), cview(upd, {n, 1}),
                                      0, mview(out, dshape), Reduction::kMean, use_init_val);
  std::vector<T> sum(static_cast<size_t>(size));
  std::vector<int64_t> count(static_cast<size_t>(size), 0);
  for (int64_t a = 0; a < size; ++a)
    sum[size_t(a)] = use_init_val ? data[size_t(a * columns)] : T(0);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t a = (idx[size_t(k)] + size) % size;
    sum[size_t(a)] = sum[size_t(a)] + upd[size_t(k)];
    ++count[size_t(a)];
  }
  for (int64_t a = 0; a < size; ++a)
    if (count[size_t(a)] > 0)
      expected[size_t(a * columns)] = sum[size_t(a)] / T(count[size_t(a)] + (use_init_val ? 1 : 0));
  EXPECT_TRUE(same_bits(out, expected)) << "size " << size << ", columns " << columns << ", n " << n
                                        << ", init " << use_init_val << ", hot " << hot_target;
}

TEST(ScatterElementsUpdate, FloatHistogramMeanMatchesReferenceBitwise) {
  for (bool init : {true, false})
    for (int64_t columns : {1, 3})
      for (bool hot : {true, false}) {
        check_histogram_mean<float>(50, columns, 5000, init, hot);  // a table
        check_histogram_mean<float>(1000, columns, 1200, init, hot);
        check_histogram_mean<float>(70000, columns, 90000, init, hot);  // bytes; hot: wraps
        check_histogram_mean<double>(40000, columns, 45000, init, hot);
      }
}

// A 1-D histogram whose table stays in cache folds in fold_line_streaming (histogram.hpp):
// steps of 64 updates and a tail, the inputs fetched ahead, the rest of the line wrapping
// every index after a few negative ones, a float max's steps without a NaN update as bare
// selects, a table of 1 MB and more with each target fetched ahead too; with 2 threads a max
// splits the line in two parts.
// Float sum and max must match the C-order fold bitwise (max keeps the first of -0 and +0
// and the first NaN), and a bad index anywhere throws with out left as it was.
// nan_every: one update in about that many is a NaN (a rare one leaves most steps of 64
// without, which a float max folds as a bare select); a target of data is a NaN too.
template <class I>
void check_streaming_histogram(int64_t size, int64_t n, uint32_t seed, uint32_t nan_every) {
  std::mt19937 rng(seed);
  std::vector<float> data(static_cast<size_t>(size)), upd(static_cast<size_t>(n));
  for (auto& v : data) v = float(int(rng() % 7) - 3) * 0.5f;
  const uint32_t target_nan = 0x7fc00000u | 0x1234u;
  std::memcpy(&data[size_t(size / 2)], &target_nan, sizeof(float));
  for (int64_t k = 0; k < n; ++k) {
    float& u = upd[size_t(k)];
    if (rng() % nan_every == 0) {  // a NaN whose payload names the update
      const uint32_t bits = 0x7fc00000u | uint32_t(k & 0x3fffff);
      std::memcpy(&u, &bits, sizeof(u));
      continue;
    }
    switch (rng() % 10) {
      case 0: u = -0.0f; break;
      case 1: u = 0.0f; break;
      default: u = float(int(rng() % 2001) - 1000) * 0.25f;
    }
  }
  std::vector<I> idx(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    idx[size_t(k)] = I(rng() % uint64_t(size));
    if (k > n / 2 && k % 5 == 0) idx[size_t(k)] = I(idx[size_t(k)] - size);  // they wrap
  }
  const Shape dshape = {size}, ishape = {n};
  for (int threads : {1, 2}) {
    scatterkit::set_num_threads(threads);
    for (Reduction r : {Reduction::kSum, Reduction::kMax}) {
      std::vector<float> out(data.size()), expected = data;
      scatter_elements_update<float, I>(cview(data, dshape), cview(idx, ishape), cview(upd, ishape),
                                        0, mview(out, dshape), r);
      if (r == Reduction::kSum)
        sktest::ref_scatter_elements(expected, dshape, idx, ishape, upd, 0,
                                     [](float& d, float u) { d = d + u; });
      else
        sktest::ref_scatter_elements(expected, dshape, idx, ishape, upd, 0, [](float& d, float u) {
          if (u != u)
            d = d != d ? d : u;
          else if (u > d)
            d = u;
        });
      EXPECT_TRUE(same_bits(out, expected)) << "size " << size << ", n " << n << ", threads "
                                            << threads << ", " << scatterkit::reduction_name(r);
      for (int64_t at : {int64_t(0), int64_t(63), int64_t(64), n / 2, n - 300, n - 1}) {
        if (at < 0 || at >= n) continue;
        std::vector<I> bad = idx;
        bad[size_t(at)] = I(size);
        std::vector<float> kept(data.size(), 7.0f);
        auto call = [&] {
          scatter_elements_update<float, I>(cview(data, dshape), cview(bad, ishape),
                                            cview(upd, ishape), 0, mview(kept, dshape), r);
        };
        EXPECT_THROW(call(), std::out_of_range) << "bad index at " << at;
        EXPECT_EQ(kept, std::vector<float>(data.size(), 7.0f)) << "bad index at " << at;
      }
    }
  }
  scatterkit::set_num_threads(1);
}

TEST(ScatterElementsUpdate, StreamingHistogramMatchesReferenceBitwise) {
  const int before = scatterkit::get_num_threads();
  for (const auto& [size, n] :
       {std::pair<int64_t, int64_t>{1, 63},
        {1, 64},
        {1, 65},
        {97, 5000},
        {4096, 20011},
        {(int64_t(1) << 18) + 3, 1100000}}) {  // the last past kStreamFetchTargetsMinBytes
    for (uint32_t nan_every : {10u, 3000u}) {
      check_streaming_histogram<int32_t>(size, n, uint32_t(size + n), nan_every);
      check_streaming_histogram<int64_t>(size, n, uint32_t(size * n), nan_every);
    }
  }
  scatterkit::set_num_threads(before);
}

// fold_line_in_memory (histogram.hpp), the fold one thread runs in place on a table in memory
// when its updates crowd onto a few ranges: it fetches each target kMemoryFetchAhead updates
// ahead, so its steps stop that far before the end and a plain tail folds the rest. At every
// length around that point, and with negative indices, it must give the bits of the C-order
// fold, and report a bad index.
TEST(ScatterElementsUpdate, InMemoryFoldMatchesReferenceBitwise) {
  using scatterkit::detail::fold_line_in_memory;
  using scatterkit::detail::IndexRange;
  using scatterkit::detail::kMemoryFetchAhead;
  using scatterkit::detail::kStreamStep;
  const int64_t size = 1000, edge = kStreamStep + kMemoryFetchAhead;
  const IndexRange valid{-size, size};
  for (int64_t n :
       {int64_t(0), int64_t(1), edge - 1, edge, edge + 1, edge + kStreamStep + 1, int64_t(5000)}) {
    std::mt19937 rng(uint32_t(n) + 1);
    std::vector<float> data(static_cast<size_t>(size)), upd(static_cast<size_t>(n));
    for (auto& v : data) v = float(int(rng() % 7) - 3) * 0.5f;
    for (auto& u : upd) u = rng() % 9 == 0 ? -0.0f : float(int(rng() % 2001) - 1000) * 0.25f;
    if (n > 2) upd[size_t(n / 2)] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
      idx[size_t(k)] = int64_t(rng() % uint64_t(size)) - (k % 3 == 0 ? size : 0);
    std::vector<float> sum = data, max = data, sum_ref = data, max_ref = data;
    EXPECT_TRUE(fold_line_in_memory<scatterkit::detail::SumOp<float>>(idx.data(), upd.data(),
                                                                      sum.data(), n, size, valid));
    EXPECT_TRUE(fold_line_in_memory<scatterkit::detail::MaxOp<float>>(idx.data(), upd.data(),
                                                                      max.data(), n, size, valid));
    const Shape dshape = {size}, ishape = {n};
    sktest::ref_scatter_elements(sum_ref, dshape, idx, ishape, upd, 0,
                                 [](float& d, float u) { d = d + u; });
    sktest::ref_scatter_elements(max_ref, dshape, idx, ishape, upd, 0, [](float& d, float u) {
      if (u != u)
        d = d != d ? d : u;
      else if (u > d)
        d = u;
    });
    EXPECT_TRUE(same_bits(sum, sum_ref)) << "sum, n " << n;
    EXPECT_TRUE(same_bits(max, max_ref)) << "max, n " << n;
    if (n == 0) continue;
    idx[size_t(n - 1)] = size;  // bad, and the last: found by the tail
    std::vector<float> scratch = data;
    EXPECT_FALSE(fold_line_in_memory<scatterkit::detail::SumOp<float>>(
        idx.data(), upd.data(), scratch.data(), n, size, valid))
        << "n " << n;
  }
}

}  // namespace
}  // namespace test_scatter_elements_update
