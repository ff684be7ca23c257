// ScatterNDUpdate-3 / -15 through the typed API:
//   out[indices[p, 0], ..., indices[p, k-1], ...] = reduce(out[...], updates[p, ...])
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_scatter_nd_update {
namespace {

using scatterkit::float16;
using scatterkit::OpOptions;
using scatterkit::Reduction;
using scatterkit::scatter_nd_update;
using sktest::cview;
using sktest::mview;
using sktest::same_bits;
using sktest::Shape;

TEST(ScatterNdUpdateSpec, Example1FourSingleElements) {
  const std::vector<int32_t> data = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> indices = {4, 3, 1, 7};
  const std::vector<int32_t> updates = {9, 10, 11, 12};
  std::vector<int32_t> out(8);
  scatter_nd_update<int32_t, int64_t>(cview(data, {8}), cview(indices, {4, 1}), cview(updates, {4}),
                                      mview(out, {8}));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 11, 3, 10, 9, 6, 7, 12}));
}

TEST(ScatterNdUpdateSpec, Example2TwoSlices) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1};
  const std::vector<float> b = {8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> data;
  for (const auto* block : {&a, &a, &b, &b}) data.insert(data.end(), block->begin(), block->end());
  const std::vector<int32_t> indices = {0, 2};
  const std::vector<float> updates = {5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8,
                                      1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  std::vector<float> expected;
  expected.insert(expected.end(), updates.begin(), updates.begin() + 16);
  expected.insert(expected.end(), a.begin(), a.end());
  expected.insert(expected.end(), updates.begin() + 16, updates.end());
  expected.insert(expected.end(), b.begin(), b.end());
  std::vector<float> out(64);
  scatter_nd_update<float, int32_t>(cview(data, {4, 4, 4}), cview(indices, {2, 1}),
                                    cview(updates, {2, 4, 4}), mview(out, {4, 4, 4}));
  EXPECT_EQ(out, expected);
}

TEST(ScatterNdUpdate, FullTuplesAddressElements) {
  const std::vector<int16_t> data(9, 0);
  const std::vector<int64_t> indices = {0, 1, 2, 2, 1, 0};
  const std::vector<int16_t> updates = {5, 6, 7};
  std::vector<int16_t> out(9);
  scatter_nd_update<int16_t, int64_t>(cview(data, {3, 3}), cview(indices, {3, 2}),
                                      cview(updates, {3}), mview(out, {3, 3}));
  EXPECT_EQ(out, (std::vector<int16_t>{0, 5, 0, 7, 0, 0, 0, 0, 6}));
}

TEST(ScatterNdUpdate, BatchedIndicesOfRankThree) {
  // indices (2, 2, 1) into data (5, 2): updates (2, 2, 2).
  const auto data = sktest::iota_vector<int32_t>(10);
  const std::vector<int64_t> indices = {4, 0, 2, 1};
  const std::vector<int32_t> updates = {-1, -2, -3, -4, -5, -6, -7, -8};
  std::vector<int32_t> out(10);
  scatter_nd_update<int32_t, int64_t>(cview(data, {5, 2}), cview(indices, {2, 2, 1}),
                                      cview(updates, {2, 2, 2}), mview(out, {5, 2}));
  EXPECT_EQ(out, (std::vector<int32_t>{-3, -4, -7, -8, -5, -6, 6, 7, -1, -2}));
}

TEST(ScatterNdUpdate, EmptyTuplesAddressTheWholeTensor) {
  // k = 0: every tuple is the whole tensor; the last one wins, or they fold.
  const std::vector<int32_t> data = {1, 2, 3, 4};
  const std::vector<int64_t> indices;
  const std::vector<int32_t> updates = {10, 11, 12, 13, 20, 21, 22, 23};
  std::vector<int32_t> out(4);
  scatter_nd_update<int32_t, int64_t>(cview(data, {2, 2}), cview(indices, {2, 0}),
                                      cview(updates, {2, 2, 2}), mview(out, {2, 2}));
  EXPECT_EQ(out, (std::vector<int32_t>{20, 21, 22, 23}));
  scatter_nd_update<int32_t, int64_t>(cview(data, {2, 2}), cview(indices, {2, 0}),
                                      cview(updates, {2, 2, 2}), mview(out, {2, 2}),
                                      Reduction::kSum);
  EXPECT_EQ(out, (std::vector<int32_t>{31, 34, 37, 40}));
}

TEST(ScatterNdUpdate, ScalarUpdateMayBeAOneElementTensor) {
  // Expected updates shape is () here; (1,) is accepted too, (2,) is not.
  const std::vector<double> data = {0, 0, 0, 0, 0};
  const std::vector<int64_t> indices = {3};
  const std::vector<double> updates = {7, 8};
  std::vector<double> a(5), b(5);
  scatter_nd_update<double, int64_t>(cview(data, {5}), cview(indices, {1}), cview(updates, {}),
                                     mview(a, {5}));
  scatter_nd_update<double, int64_t>(cview(data, {5}), cview(indices, {1}), cview(updates, {1}),
                                     mview(b, {5}));
  EXPECT_EQ(a, (std::vector<double>{0, 0, 0, 7, 0}));
  EXPECT_EQ(a, b);
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [&] {
        scatter_nd_update<double, int64_t>(cview(data, {5}), cview(indices, {1}),
                                           cview(updates, {2}), mview(b, {5}));
      },
      "updates shape (2,) does not match the expected shape ()"));
}

TEST(ScatterNdUpdate, DuplicatesLastWriteWins) {
  const std::vector<int32_t> data(8, 0);  // 4 x 2
  const std::vector<uint64_t> indices = {3, 1, 3, 0, 1};
  const std::vector<int32_t> updates = {1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  std::vector<int32_t> out(8);
  scatter_nd_update<int32_t, uint64_t>(cview(data, {4, 2}), cview(indices, {5, 1}),
                                       cview(updates, {5, 2}), mview(out, {4, 2}));
  EXPECT_EQ(out, (std::vector<int32_t>{4, 4, 5, 5, 0, 0, 3, 3}));
}

TEST(ScatterNdUpdate, DuplicatesFoldInCOrder) {
  // In float32 1e8 + 1 - 1e8 is 0 and 1e8 - 1e8 + 1 is 1 (see the elements test).
  const std::vector<float> data = {0, 0, 0};
  const std::vector<int64_t> indices = {2, 1, 2, 0, 1, 2, 1};
  const std::vector<float> updates = {1e8f, 1e8f, 1, 5, -1e8f, -1e8f, 1};
  std::vector<float> out(3);
  scatter_nd_update<float, int64_t>(cview(data, {3}), cview(indices, {7, 1}), cview(updates, {7}),
                                    mview(out, {3}), Reduction::kSum);
  EXPECT_EQ(out, (std::vector<float>{5, 1, 0}));
}

TEST(ScatterNdUpdate, NegativeCoordinatesWrapEachOnItsAxis) {
  const std::vector<int32_t> data(10, 0);  // 2 x 5
  const std::vector<int64_t> indices = {-2, -5, -1, 4, 1, -3};
  const std::vector<int32_t> updates = {1, 2, 3};
  std::vector<int32_t> out(10);
  scatter_nd_update<int32_t, int64_t>(cview(data, {2, 5}), cview(indices, {3, 2}),
                                      cview(updates, {3}), mview(out, {2, 5}));
  EXPECT_EQ(out, (std::vector<int32_t>{1, 0, 0, 0, 0, 0, 0, 3, 0, 2}));
}

TEST(ScatterNdUpdate, NegativeCoordinatesRejectedInV3) {
  const std::vector<int32_t> data(10, 0);
  const std::vector<int64_t> indices = {1, 4, 0, -1};
  const std::vector<int32_t> updates = {1, 2};
  std::vector<int32_t> out(10, 7);
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatter_nd_update<int32_t, int64_t>(
            cview(data, {2, 5}), cview(indices, {2, 2}), cview(updates, {2}), mview(out, {2, 5}),
            Reduction::kNone, OpOptions{false, "ScatterNDUpdate-3"});
      },
      "ScatterNDUpdate-3: index -1 is out of bounds for axis 1 with size 5 (at indices[1, 1]"));
  EXPECT_EQ(out, std::vector<int32_t>(10, 7));
}

TEST(ScatterNdUpdate, SubFoldsInOrder) {
  const std::vector<int32_t> data = {10, 10};
  const std::vector<int32_t> indices = {0, 0, 1};
  const std::vector<int32_t> updates = {1, 2, 20};
  std::vector<int32_t> out(2);
  scatter_nd_update<int32_t, int32_t>(cview(data, {2}), cview(indices, {3, 1}), cview(updates, {3}),
                                      mview(out, {2}), Reduction::kSub);
  EXPECT_EQ(out, (std::vector<int32_t>{7, -10}));
  const std::vector<double> fdata = {0.5, 1};
  const std::vector<double> fupdates = {0.25, 0.125, 4};
  std::vector<double> fout(2);
  scatter_nd_update<double, int32_t>(cview(fdata, {2}), cview(indices, {3, 1}),
                                     cview(fupdates, {3}), mview(fout, {2}), Reduction::kSub);
  EXPECT_EQ(fout, (std::vector<double>{0.125, -3}));
}

TEST(ScatterNdUpdate, InPlace) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};  // 3 x 2
  const std::vector<int64_t> indices = {2, 0, 2};
  const std::vector<float> updates = {10, 10, 20, 20, 30, 30};
  auto view = mview(data, {3, 2});
  ASSERT_EQ(view.data, data.data());
  scatter_nd_update<float, int64_t>(cview(data, {3, 2}), cview(indices, {3, 1}),
                                    cview(updates, {3, 2}), view, Reduction::kMax);
  EXPECT_EQ(data, (std::vector<float>{20, 20, 3, 4, 30, 30}));
}

TEST(ScatterNdUpdate, LargeSlabsMoveAndFoldInChunks) {
  // Slabs of 20000 floats (80 kB) span several work chunks.
  const Shape dshape = {3, 20000};
  const auto data = sktest::iota_vector<float>(60000);
  const std::vector<int64_t> indices = {2, 0, 2};
  std::vector<float> updates(60000);
  for (size_t i = 0; i < updates.size(); ++i) updates[i] = float(i % 977) * 0.375f;
  for (Reduction r : {Reduction::kNone, Reduction::kSum}) {
    std::vector<float> out(60000), expected = data;
    scatter_nd_update<float, int64_t>(cview(data, dshape), cview(indices, {3, 1}),
                                      cview(updates, {3, 20000}), mview(out, dshape), r);
    sktest::ref_scatter_nd(expected, dshape, indices, 1, updates,
                           [r](float& d, float u) { d = r == Reduction::kNone ? u : d + u; });
    EXPECT_TRUE(same_bits(out, expected)) << scatterkit::reduction_name(r);
  }
}

TEST(ScatterNdUpdate, LargeHalfSlabsRoundOnce) {
  // float16 slabs of 5000 elements: accumulated in float32 chunk by chunk.
  const Shape dshape = {2, 5000};
  std::vector<float16> data(10000), updates(15000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = scatterkit::to_float16(float(i % 2048));
  for (size_t i = 0; i < updates.size(); ++i)
    updates[i] = scatterkit::to_float16(0.5f + float(i % 3));
  const std::vector<int32_t> indices = {1, 1, 1};
  std::vector<float16> out(10000);
  scatter_nd_update<float16, int32_t>(cview(data, dshape), cview(indices, {3, 1}),
                                      cview(updates, {3, 5000}), mview(out, dshape),
                                      Reduction::kSum);
  std::vector<float> acc(10000);
  for (size_t i = 0; i < acc.size(); ++i) acc[i] = scatterkit::to_float(data[i]);
  sktest::ref_scatter_nd(acc, dshape, indices, 1, updates,
                         [](float& d, float16 u) { d += scatterkit::to_float(u); });
  std::vector<float16> expected(10000);
  for (size_t i = 0; i < acc.size(); ++i) expected[i] = scatterkit::to_float16(acc[i]);
  EXPECT_TRUE(same_bits(out, expected));
}

// ---- random inputs against the plain-loop reference -----------------------------

int32_t fold(Reduction r, int32_t a, int32_t u) {
  switch (r) {
    case Reduction::kSum: return int32_t(uint32_t(a) + uint32_t(u));
    case Reduction::kSub: return int32_t(uint32_t(a) - uint32_t(u));
    case Reduction::kProd: return int32_t(uint32_t(a) * uint32_t(u));
    case Reduction::kMin: return std::min(a, u);
    case Reduction::kMax: return std::max(a, u);
    default: return u;
  }
}

class ScatterNdUpdateRandom : public ::testing::TestWithParam<Reduction> {};

TEST_P(ScatterNdUpdateRandom, MatchesReference) {
  const Reduction r = GetParam();
  std::mt19937 rng(unsigned(50 + int(r)));
  const Shape dshape = {4, 3, 5};
  const auto data = sktest::iota_vector<int32_t>(60, -30);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t k = int64_t(trial % 4);
    const Shape batch = {1 + int64_t(rng() % 4), 1 + int64_t(rng() % 3)};
    Shape ishape = batch, ushape = batch;
    ishape.push_back(k);
    ushape.insert(ushape.end(), dshape.begin() + k, dshape.end());
    std::vector<int64_t> idx(static_cast<size_t>(sktest::count_of(ishape)));
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t size = dshape[i % size_t(k)];
      idx[i] = int64_t(rng() % uint64_t(2 * size)) - size;
    }
    std::vector<int32_t> upd(static_cast<size_t>(sktest::count_of(ushape)));
    for (auto& v : upd) v = int32_t(rng() % 15) - 7;
    std::vector<int32_t> out(60), expected = data;
    scatter_nd_update<int32_t, int64_t>(cview(data, dshape), cview(idx, ishape), cview(upd, ushape),
                                        mview(out, dshape), r);
    sktest::ref_scatter_nd(expected, dshape, idx, k, upd,
                           [r](int32_t& d, int32_t u) { d = fold(r, d, u); });
    ASSERT_EQ(out, expected) << "trial " << trial << " k " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Reductions, ScatterNdUpdateRandom,
                         ::testing::Values(Reduction::kNone, Reduction::kSum, Reduction::kSub,
                                           Reduction::kProd, Reduction::kMin, Reduction::kMax),
                         [](const auto& p) {
                           return std::string(scatterkit::reduction_name(p.param));
                         });

}  // namespace
}  // namespace test_scatter_nd_update
