// ScatterUpdate-3 through the typed API:
//   out[a..., indices[j...], b...] = updates[a..., j..., b...]
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_scatter_update {
namespace {

using scatterkit::bfloat16;
using scatterkit::float16;
using scatterkit::OpOptions;
using scatterkit::scatter_update;
using sktest::cview;
using sktest::make_vector;
using sktest::mview;
using sktest::same_bits;

// Element types: data movement only depends on the width, so one per width
// plus the 16-bit float storage type.
template <class T>
class ScatterUpdateTyped : public ::testing::Test {};
using ElementTypes = ::testing::Types<int8_t, bfloat16, float, double>;
TYPED_TEST_SUITE(ScatterUpdateTyped, ElementTypes);

TYPED_TEST(ScatterUpdateTyped, Axis0RowsReplaced) {
  using T = TypeParam;
  const auto data = sktest::iota_vector<T>(12);  // 4 x 3
  const std::vector<int64_t> indices = {2, 0};
  const auto updates = make_vector<T>({100, 101, 102, 103, 104, 105});
  std::vector<T> out(12);
  scatter_update<T, int64_t>(cview(data, {4, 3}), cview(indices, {2}), cview(updates, {2, 3}), 0,
                             mview(out, {4, 3}));
  EXPECT_TRUE(same_bits(out, make_vector<T>({103, 104, 105, 3, 4, 5, 100, 101, 102, 9, 10, 11})));
}

TYPED_TEST(ScatterUpdateTyped, Axis1ColumnsReplaced) {
  using T = TypeParam;
  const auto data = sktest::iota_vector<T>(8);  // 2 x 4
  const std::vector<int32_t> indices = {3, 1};
  const auto updates = make_vector<T>({10, 11, 12, 13});  // 2 x 2
  std::vector<T> out(8);
  scatter_update<T, int32_t>(cview(data, {2, 4}), cview(indices, {2}), cview(updates, {2, 2}), 1,
                             mview(out, {2, 4}));
  EXPECT_TRUE(same_bits(out, make_vector<T>({0, 11, 2, 10, 4, 13, 6, 12})));
}

TEST(ScatterUpdate, ZeroDimIndicesReplaceOneSlab) {
  // Spec example 1: indices is 0-D, data[indices, ...] = updates[...].
  const std::vector<float> data = {0, 1, 2, 3, 4, 5};  // 3 x 2
  const std::vector<int64_t> index = {1};
  const std::vector<float> updates = {8, 9};
  std::vector<float> out(6);
  scatter_update<float, int64_t>(cview(data, {3, 2}), cview(index, {}), cview(updates, {2}), 0,
                                 mview(out, {3, 2}));
  EXPECT_EQ(out, (std::vector<float>{0, 1, 8, 9, 4, 5}));
}

TEST(ScatterUpdate, ZeroDimIndicesOnInnerAxis) {
  // axis 1 of a 2 x 3: updates has shape (2,), one value per row.
  const std::vector<int32_t> data = {0, 1, 2, 3, 4, 5};
  const std::vector<int64_t> index = {2};
  const std::vector<int32_t> updates = {-1, -2};
  std::vector<int32_t> out(6);
  scatter_update<int32_t, int64_t>(cview(data, {2, 3}), cview(index, {}), cview(updates, {2}), 1,
                                   mview(out, {2, 3}));
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, -1, 3, 4, -2}));
}

TEST(ScatterUpdate, NdIndicesMatchReference) {
  // Spec example 3 with a middle axis: indices (2, 3) with duplicates, data
  // (3, 5, 2, 4), updates (3, 2, 3, 2, 4).
  const sktest::Shape dshape = {3, 5, 2, 4};
  const std::vector<int64_t> indices = {4, 0, 2, 2, 4, 1};
  const auto data = sktest::iota_vector<float>(sktest::count_of(dshape));
  const auto updates = sktest::iota_vector<float>(3 * 6 * 8, 1000);
  std::vector<float> out(data.size()), expected = data;
  scatter_update<float, int64_t>(cview(data, dshape), cview(indices, {2, 3}),
                                 cview(updates, {3, 2, 3, 2, 4}), 1, mview(out, dshape));
  sktest::ref_scatter_update(expected, dshape, indices, updates, 1);
  EXPECT_TRUE(same_bits(out, expected));
}

TEST(ScatterUpdate, NegativeAxisCountsFromTheEnd) {
  const std::vector<double> data = {0, 1, 2, 3, 4, 5};  // 2 x 3
  const std::vector<int64_t> indices = {0};
  const std::vector<double> updates = {7, 8};
  std::vector<double> a(6), b(6);
  scatter_update<double, int64_t>(cview(data, {2, 3}), cview(indices, {1}), cview(updates, {2, 1}),
                                  -1, mview(a, {2, 3}));
  scatter_update<double, int64_t>(cview(data, {2, 3}), cview(indices, {1}), cview(updates, {2, 1}),
                                  1, mview(b, {2, 3}));
  EXPECT_EQ(a, (std::vector<double>{7, 1, 2, 8, 4, 5}));
  EXPECT_EQ(a, b);
}

TEST(ScatterUpdate, DuplicatesLastWriteWins) {
  const std::vector<int16_t> data = {0, 0, 0, 0, 0, 0};  // 3 x 2
  const std::vector<int64_t> indices = {1, 2, 1, 1};
  const std::vector<int16_t> updates = {1, 1, 2, 2, 3, 3, 4, 4};
  std::vector<int16_t> out(6);
  scatter_update<int16_t, int64_t>(cview(data, {3, 2}), cview(indices, {4}), cview(updates, {4, 2}),
                                   0, mview(out, {3, 2}));
  EXPECT_EQ(out, (std::vector<int16_t>{0, 0, 4, 4, 2, 2}));
}

TEST(ScatterUpdate, DuplicatesLastWriteWinsInPlace) {
  std::vector<int16_t> data = {0, 0, 0, 0, 0, 0};
  const std::vector<int64_t> indices = {1, 2, 1, 1};
  const std::vector<int16_t> updates = {1, 1, 2, 2, 3, 3, 4, 4};
  scatter_update<int16_t, int64_t>(cview(data, {3, 2}), cview(indices, {4}), cview(updates, {4, 2}),
                                   0, mview(data, {3, 2}));
  EXPECT_EQ(data, (std::vector<int16_t>{0, 0, 4, 4, 2, 2}));
}

TEST(ScatterUpdate, NegativeIndicesRejectedByDefault) {
  const std::vector<float> data = {0, 1, 2};
  const std::vector<int64_t> indices = {-1};
  const std::vector<float> updates = {9};
  std::vector<float> out = {5, 5, 5};
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatter_update<float, int64_t>(cview(data, {3}), cview(indices, {1}), cview(updates, {1}),
                                       0, mview(out, {3}));
      },
      "negative indices are not allowed"));
  EXPECT_EQ(out, (std::vector<float>{5, 5, 5}));
}

TEST(ScatterUpdate, NegativeIndicesWrapWhenAllowed) {
  const std::vector<float> data = {0, 1, 2};
  const std::vector<int64_t> indices = {-1, -3};
  const std::vector<float> updates = {9, 8};
  std::vector<float> out(3);
  scatter_update<float, int64_t>(cview(data, {3}), cview(indices, {2}), cview(updates, {2}), 0,
                                 mview(out, {3}), OpOptions{true, nullptr});
  EXPECT_EQ(out, (std::vector<float>{8, 1, 9}));
}

TEST(ScatterUpdate, InPlaceEqualsOutOfPlace) {
  const sktest::Shape dshape = {4, 6, 5};
  const std::vector<int32_t> indices = {5, 0, 3};
  auto data = sktest::iota_vector<int32_t>(120);
  const auto updates = sktest::iota_vector<int32_t>(4 * 3 * 5, -100);
  std::vector<int32_t> out(120);
  scatter_update<int32_t, int32_t>(cview(data, dshape), cview(indices, {3}),
                                   cview(updates, {4, 3, 5}), 1, mview(out, dshape));
  auto view = mview(data, dshape);
  ASSERT_EQ(view.data, data.data());
  scatter_update<int32_t, int32_t>(cview(data, dshape), cview(indices, {3}),
                                   cview(updates, {4, 3, 5}), 1, view);
  EXPECT_EQ(data, out);
}

TEST(ScatterUpdate, IndexTypesAgree) {
  const auto data = sktest::iota_vector<float>(10);
  const std::vector<float> updates = {-1, -2, -3};
  const std::vector<int32_t> i32 = {9, 0, 4};
  const std::vector<int64_t> i64 = {9, 0, 4};
  const std::vector<uint64_t> u64 = {9, 0, 4};
  std::vector<float> a(10), b(10), c(10);
  scatter_update<float, int32_t>(cview(data, {10}), cview(i32, {3}), cview(updates, {3}), 0,
                                 mview(a, {10}));
  scatter_update<float, int64_t>(cview(data, {10}), cview(i64, {3}), cview(updates, {3}), 0,
                                 mview(b, {10}));
  scatter_update<float, uint64_t>(cview(data, {10}), cview(u64, {3}), cview(updates, {3}), 0,
                                  mview(c, {10}));
  EXPECT_EQ(a, (std::vector<float>{-2, 1, 2, 3, -3, 5, 6, 7, 8, -1}));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

TEST(ScatterUpdate, EmptyIndicesCopyData) {
  const auto data = sktest::iota_vector<int64_t>(6);
  const std::vector<int64_t> indices;
  const std::vector<int64_t> updates;
  std::vector<int64_t> out(6, -1);
  scatter_update<int64_t, int64_t>(cview(data, {2, 3}), cview(indices, {0}), cview(updates, {2, 0}),
                                   1, mview(out, {2, 3}));
  EXPECT_EQ(out, data);
}

TEST(ScatterUpdate, EmptyDataIsANoOp) {
  // data (0, 3): indices along axis 1 are still validated, nothing is written.
  const std::vector<float> data(1), updates(1);
  const std::vector<int64_t> indices = {2, 0};
  std::vector<float> out = {42};
  scatter_update<float, int64_t>(cview(data, {0, 3}), cview(indices, {2}), cview(updates, {0, 2}),
                                 1, mview(out, {0, 3}));
  EXPECT_EQ(out[0], 42);
}

// Opaque element types move as bytes: a 16-byte one (fixed-width path) and a
// 3-byte one (run-time width).
struct Pair64 {
  int64_t a, b;
};
struct Rgb {
  unsigned char r, g, b;
};

TEST(ScatterUpdate, OpaqueSixteenByteElements) {
  const std::vector<Pair64> data = {{0, 0}, {1, -1}, {2, -2}, {3, -3}};
  const std::vector<int64_t> indices = {3, 1};
  const std::vector<Pair64> updates = {{7, 70}, {8, 80}};
  std::vector<Pair64> out(4);
  scatter_update<Pair64, int64_t>(cview(data, {4}), cview(indices, {2}), cview(updates, {2}), 0,
                                  mview(out, {4}));
  const std::vector<Pair64> expected = {{0, 0}, {8, 80}, {2, -2}, {7, 70}};
  EXPECT_TRUE(same_bits(out, expected));
}

TEST(ScatterUpdate, OpaqueThreeByteElements) {
  const std::vector<Rgb> data = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};  // 2 x 2
  const std::vector<int64_t> indices = {0};
  const std::vector<Rgb> updates = {{99, 98, 97}, {96, 95, 94}};  // 2 x 1
  std::vector<Rgb> out(4);
  scatter_update<Rgb, int64_t>(cview(data, {2, 2}), cview(indices, {1}), cview(updates, {2, 1}), 1,
                               mview(out, {2, 2}));
  const std::vector<Rgb> expected = {{99, 98, 97}, {4, 5, 6}, {96, 95, 94}, {10, 11, 12}};
  EXPECT_TRUE(same_bits(out, expected));
}

TEST(ScatterUpdate, BoolData) {
  const std::array<bool, 4> data = {false, false, true, true};
  const std::vector<int64_t> indices = {3, 0};
  const std::array<bool, 2> updates = {false, true};
  std::array<bool, 4> out{};
  scatter_update<bool, int64_t>(cview(data, {4}), cview(indices, {2}), cview(updates, {2}), 0,
                                mview(out, {4}));
  EXPECT_EQ(out, (std::array<bool, 4>{true, false, true, false}));
}

TEST(ScatterUpdate, RandomShapesMatchReference) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = 1 + int(rng() % 4);
    sktest::Shape dshape(static_cast<size_t>(rank));
    for (auto& d : dshape) d = 1 + int64_t(rng() % 4);
    const int64_t axis = int64_t(rng() % unsigned(rank));
    const sktest::Shape ishape = {int64_t(rng() % 3), 1 + int64_t(rng() % 3)};
    std::vector<int64_t> indices(static_cast<size_t>(sktest::count_of(ishape)));
    for (auto& i : indices) i = int64_t(rng() % uint64_t(dshape[size_t(axis)]));
    sktest::Shape ushape(dshape.begin(), dshape.begin() + axis);
    ushape.insert(ushape.end(), ishape.begin(), ishape.end());
    ushape.insert(ushape.end(), dshape.begin() + axis + 1, dshape.end());
    const auto data = sktest::iota_vector<int32_t>(sktest::count_of(dshape));
    const auto updates = sktest::iota_vector<int32_t>(sktest::count_of(ushape), 1000);
    std::vector<int32_t> out(data.size()), expected = data;
    scatter_update<int32_t, int64_t>(cview(data, dshape), cview(indices, ishape),
                                     cview(updates, ushape), axis, mview(out, dshape));
    sktest::ref_scatter_update(expected, dshape, indices, updates, axis);
    ASSERT_EQ(out, expected) << "trial " << trial << " axis " << axis;
  }
}

// Small slabs (along the last axis) are written over a copy of data a block
// of 64 KB at a time: winners in several blocks, a winner table and a sorted
// list of winners (a few indices into a long axis), out of place and in place.
template <class T>
void check_small_slabs(int64_t rows, int64_t targets, int64_t n) {
  std::mt19937 rng(uint32_t(targets + n));
  const sktest::Shape dshape = {rows, targets}, ishape = {n}, ushape = {rows, n};
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (auto& i : indices) i = int64_t(rng() % uint64_t(targets));
  indices.back() = targets - 1;      // the last slab of the last block
  indices.front() = indices.back();  // a duplicate: the later one wins
  const auto data = sktest::iota_vector<T>(rows * targets);
  const auto updates = sktest::iota_vector<T>(rows * n, 7);
  std::vector<T> expected = data;
  sktest::ref_scatter_update(expected, dshape, indices, updates, 1);
  std::vector<T> out(data.size());
  scatter_update<T, int64_t>(cview(data, dshape), cview(indices, ishape), cview(updates, ushape), 1,
                             mview(out, dshape));
  EXPECT_EQ(out, expected) << "out of place, " << targets << " targets, " << n << " indices";
  std::vector<T> in_place = data;
  scatter_update<T, int64_t>(cview(in_place, dshape), cview(indices, ishape),
                             cview(updates, ushape), 1, mview(in_place, dshape));
  EXPECT_EQ(in_place, expected) << "in place, " << targets << " targets, " << n << " indices";
}

TEST(ScatterUpdate, SmallSlabsOverBlocksMatchReference) {
  check_small_slabs<int32_t>(3, 40000, 5000);   // a table; 16384 targets per block
  check_small_slabs<int32_t>(2, 300000, 50);    // sorted winners
  check_small_slabs<int8_t>(2, 200000, 90000);  // 65536 per block
  check_small_slabs<int64_t>(5, 9000, 3000);
}

}  // namespace
}  // namespace test_scatter_update
