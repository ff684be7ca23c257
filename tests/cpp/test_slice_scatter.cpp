// SliceScatter-15 through the typed API:
//   out[..., start + i * step, ...] = updates[..., i, ...] on each sliced axis,
// start/stop clamped by the Slice-8 rule (docs/design.md section 2.4).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_slice_scatter {
namespace {

using scatterkit::bfloat16;
using scatterkit::slice_scatter;
using sktest::cview;
using sktest::mview;
using sktest::same_bits;
using sktest::Shape;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(SliceScatterSpec, Example1FillSliceOverAxis0) {
  const auto data = sktest::iota_vector<float>(10);  // 2 x 5
  const std::vector<float> updates = {10, 20, 30, 40, 50};
  std::vector<float> out(10);
  slice_scatter<float>(cview(data, {2, 5}), cview(updates, {1, 5}), 0, 1, 1, 0, mview(out, {2, 5}));
  EXPECT_EQ(out, (std::vector<float>{10, 20, 30, 40, 50, 5, 6, 7, 8, 9}));
}

TEST(SliceScatterSpec, Example2EverySecondValueWithClamping) {
  const auto data = sktest::iota_vector<float>(10);
  const std::vector<float> updates = {10, 20, 30, 40, 50, 60};
  std::vector<float> out(10);
  slice_scatter<float>(cview(data, {2, 5}), cview(updates, {2, 3}), -25, 25, 2, 1,
                       mview(out, {2, 5}));
  EXPECT_EQ(out, (std::vector<float>{10, 1, 20, 3, 30, 40, 6, 50, 8, 60}));
}

// One axis of 10 elements: which positions does (start, stop, step) write?
std::vector<int32_t> slice_positions(int64_t start, int64_t stop, int64_t step, int64_t count) {
  std::vector<int32_t> data(10, -1), updates(static_cast<size_t>(count)), out(10);
  for (int64_t i = 0; i < count; ++i) updates[size_t(i)] = int32_t(i);
  slice_scatter<int32_t>(cview(data, {10}), cview(updates, {count}), start, stop, step, 0,
                         mview(out, {10}));
  return out;
}

TEST(SliceScatter, NegativeStepWalksBackwards) {
  EXPECT_EQ(slice_positions(8, 1, -3, 3),
            (std::vector<int32_t>{-1, -1, 2, -1, -1, 1, -1, -1, 0, -1}));
}

TEST(SliceScatter, NegativeStartCountsFromTheEnd) {
  EXPECT_EQ(slice_positions(-3, kMax, 1, 3),
            (std::vector<int32_t>{-1, -1, -1, -1, -1, -1, -1, 0, 1, 2}));
}

TEST(SliceScatter, IntMaxAndIntMinReverseTheWholeAxis) {
  EXPECT_EQ(slice_positions(kMax, kMin, -1, 10),
            (std::vector<int32_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
}

TEST(SliceScatter, ExtremeStepsOnALeadingAxisTakeOneRow) {
  // data (10, 2): step INT64_MIN / INT64_MAX select one row.
  const std::vector<int32_t> data(20, -1);
  const std::vector<int32_t> updates = {7, 8};
  std::vector<int32_t> out(20);
  slice_scatter<int32_t>(cview(data, {10, 2}), cview(updates, {1, 2}), 5, kMin, kMin, 0,
                         mview(out, {10, 2}));
  std::vector<int32_t> expected(20, -1);
  expected[10] = 7;
  expected[11] = 8;
  EXPECT_EQ(out, expected);
  slice_scatter<int32_t>(cview(data, {10, 2}), cview(updates, {1, 2}), kMin, kMax, kMax, 0,
                         mview(out, {10, 2}));
  expected.assign(20, -1);
  expected[0] = 7;
  expected[1] = 8;
  EXPECT_EQ(out, expected);
}

// Steps of INT64_MIN/INT64_MAX on the last axis take one element, without overflow.
TEST(SliceScatter, ExtremeStepsOnTheLastAxisTakeOneElement) {
  EXPECT_EQ(slice_positions(5, kMin, kMin, 1),
            (std::vector<int32_t>{-1, -1, -1, -1, -1, 0, -1, -1, -1, -1}));
  EXPECT_EQ(slice_positions(kMin, kMax, kMax, 1),
            (std::vector<int32_t>{0, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
}

TEST(SliceScatter, StartClampsIntoTheAxisForNegativeSteps) {
  // Slice-8: with step < 0 a start before the axis clamps to 0, so one
  // element is written (Python's slicing would give an empty range here).
  EXPECT_EQ(slice_positions(-20, kMin, -1, 1),
            (std::vector<int32_t>{0, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(slice_positions(25, 7, -1, 2),
            (std::vector<int32_t>{-1, -1, -1, -1, -1, -1, -1, -1, 1, 0}));
}

TEST(SliceScatter, EmptySlicesLeaveDataAlone) {
  const std::vector<int32_t> untouched(10, -1);
  EXPECT_EQ(slice_positions(5, 2, 1, 0), untouched);
  EXPECT_EQ(slice_positions(9, -1, -1, 0), untouched);  // stop -1 means 9
  EXPECT_EQ(slice_positions(2, 5, -1, 0), untouched);
  EXPECT_EQ(slice_positions(10, kMax, 1, 0), untouched);
}

TEST(SliceScatter, SeveralAxesAtOnce) {
  const auto data = sktest::iota_vector<int32_t>(20);  // 4 x 5
  const std::vector<int32_t> updates = {-1, -2, -3, -4, -5, -6};
  std::vector<int32_t> out(20);
  slice_scatter<int32_t>(cview(data, {4, 5}), cview(updates, {2, 3}), {1, 0}, {3, 5}, {1, 2},
                         {0, 1}, mview(out, {4, 5}));
  EXPECT_EQ(out, (std::vector<int32_t>{0,  1,  2,  3,  4,  -1, 6,  -2, 8,  -3,
                                       -4, 11, -5, 13, -6, 15, 16, 17, 18, 19}));
}

TEST(SliceScatter, SeveralAxesNegativeAxesAndSteps) {
  // axis -1: columns 4, 2, 0; axis 0: rows 3, 1.
  const std::vector<int32_t> data(20, 0);
  const std::vector<int32_t> updates = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> out(20);
  slice_scatter<int32_t>(cview(data, {4, 5}), cview(updates, {2, 3}), {-1, 3}, {kMin, 0}, {-2, -2},
                         {-1, 0}, mview(out, {4, 5}));
  EXPECT_EQ(out,
            (std::vector<int32_t>{0, 0, 0, 0, 0, 6, 0, 5, 0, 4, 0, 0, 0, 0, 0, 3, 0, 2, 0, 1}));
}

TEST(SliceScatter, MiddleAxisOf3d) {
  const Shape dshape = {2, 5, 3};
  const auto data = sktest::iota_vector<double>(30);
  const auto updates = sktest::iota_vector<double>(18, 100);  // 2 x 3 x 3
  std::vector<double> out(30);
  slice_scatter<double>(cview(data, dshape), cview(updates, {2, 3, 3}), 0, 5, 2, 1,
                        mview(out, dshape));
  std::vector<double> expected = data;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t c = 0; c < 3; ++c)
        expected[size_t(a * 15 + (2 * i) * 3 + c)] = updates[size_t(a * 9 + i * 3 + c)];
  EXPECT_EQ(out, expected);
}

TEST(SliceScatter, ZeroExtentsAreNoOps) {
  const std::vector<float> data(1, 3), updates(1, 4);
  std::vector<float> out = {42};
  // data (0, 3) sliced on either axis; data (3, 0) sliced on its empty axis.
  slice_scatter<float>(cview(data, {0, 3}), cview(updates, {0, 3}), 0, 5, 1, 0, mview(out, {0, 3}));
  slice_scatter<float>(cview(data, {0, 3}), cview(updates, {0, 2}), 1, 3, 1, 1, mview(out, {0, 3}));
  slice_scatter<float>(cview(data, {3, 0}), cview(updates, {3, 0}), 0, 5, 1, 1, mview(out, {3, 0}));
  EXPECT_EQ(out[0], 42);
}

TEST(SliceScatter, InPlace) {
  std::vector<int64_t> data = {0, 1, 2, 3, 4, 5};
  const std::vector<int64_t> updates = {-1, -2};
  auto view = mview(data, {6});
  ASSERT_EQ(view.data, data.data());
  slice_scatter<int64_t>(cview(data, {6}), cview(updates, {2}), 5, 0, -4, 0, view);
  EXPECT_EQ(data, (std::vector<int64_t>{0, -2, 2, 3, 4, -1}));
}

struct Pair64 {
  int64_t a, b;
};
struct Rgb {
  unsigned char r, g, b;
};

TEST(SliceScatter, ElementWidthsOnAStridedLastAxis) {
  const std::vector<Pair64> data = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  const std::vector<Pair64> updates = {{9, -9}, {8, -8}};
  std::vector<Pair64> out(4);
  slice_scatter<Pair64>(cview(data, {4}), cview(updates, {2}), 3, kMin, -2, 0, mview(out, {4}));
  EXPECT_TRUE(same_bits(out, std::vector<Pair64>{{0, 0}, {8, -8}, {2, 2}, {9, -9}}));

  const std::vector<Rgb> rgb = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
  const std::vector<Rgb> rgb_updates = {{7, 7, 7}, {8, 8, 8}};
  std::vector<Rgb> rgb_out(3);
  slice_scatter<Rgb>(cview(rgb, {3}), cview(rgb_updates, {2}), 0, 3, 2, 0, mview(rgb_out, {3}));
  EXPECT_TRUE(same_bits(rgb_out, std::vector<Rgb>{{7, 7, 7}, {2, 2, 2}, {8, 8, 8}}));

  const auto halves = sktest::make_vector<bfloat16>({1, 2, 3, 4});
  const auto half_updates = sktest::make_vector<bfloat16>({-1, -2});
  std::vector<bfloat16> half_out(4);
  slice_scatter<bfloat16>(cview(halves, {2, 2}), cview(half_updates, {2, 1}), -1, 2, 1, 1,
                          mview(half_out, {2, 2}));
  EXPECT_TRUE(same_bits(half_out, sktest::make_vector<bfloat16>({1, -1, 3, -2})));
}

// ---- random slices against the clamping rule, written out by hand ----------------

// Positions of one axis of extent dim, straight from docs/design.md section 2.4.
std::vector<int64_t> rule_positions(int64_t start, int64_t stop, int64_t step, int64_t dim) {
  std::vector<int64_t> pos;
  if (dim == 0) return pos;
  if (start < 0) start += dim;
  if (stop < 0) stop += dim;
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), dim);
    stop = std::min(std::max<int64_t>(stop, 0), dim);
    for (int64_t i = start; i < stop; i += step) pos.push_back(i);
  } else {
    start = std::min(std::max<int64_t>(start, 0), dim - 1);
    stop = std::min(std::max<int64_t>(stop, -1), dim);
    for (int64_t i = start; i > stop; i += step) pos.push_back(i);
  }
  return pos;
}

TEST(SliceScatter, RandomSlicesMatchTheRule) {
  // Narrow last axes (row-by-row path) and wide ones (>= 64-byte blocks after
  // the last sliced axis: the fused single pass), out of place and in place.
  std::mt19937 rng(99);
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  for (int trial = 0; trial < 400; ++trial) {
    const bool wide = trial % 2 == 1, in_place = trial % 4 >= 2;
    const Shape dshape = {pick(0, 4), pick(1, 6), wide ? pick(16, 40) : pick(0, 5)};
    const int64_t m = pick(1, 3);
    std::vector<int64_t> axes = {0, 1, 2};
    std::shuffle(axes.begin(), axes.end(), rng);
    axes.resize(size_t(m));
    std::vector<int64_t> starts, stops, steps;
    std::vector<std::vector<int64_t>> pos(3);
    for (int64_t d = 0; d < 3; ++d)
      for (int64_t i = 0; i < dshape[size_t(d)]; ++i) pos[size_t(d)].push_back(i);
    for (size_t a = 0; a < axes.size(); ++a) {
      int64_t step = pick(-3, 3);
      if (step == 0) step = 1;
      starts.push_back(pick(-9, 9));
      stops.push_back(pick(-9, 9));
      steps.push_back(step);
      pos[size_t(axes[a])] =
          rule_positions(starts.back(), stops.back(), step, dshape[size_t(axes[a])]);
      if (rng() % 2) axes[a] -= 3;  // the same axis, counted from the end
    }
    const Shape ushape = {int64_t(pos[0].size()), int64_t(pos[1].size()), int64_t(pos[2].size())};
    const auto data = sktest::iota_vector<int32_t>(sktest::count_of(dshape));
    const auto updates = sktest::iota_vector<int32_t>(sktest::count_of(ushape), 1000);
    std::vector<int32_t> out(data.size() + 1, 0), expected = data;
    if (in_place) std::copy(data.begin(), data.end(), out.begin());
    for (size_t i = 0; i < pos[0].size(); ++i)
      for (size_t j = 0; j < pos[1].size(); ++j)
        for (size_t k = 0; k < pos[2].size(); ++k)
          expected[size_t((pos[0][i] * dshape[1] + pos[1][j]) * dshape[2] + pos[2][k])] =
              updates[(i * pos[1].size() + j) * pos[2].size() + k];
    expected.push_back(0);  // a guard element past the end stays untouched
    if (in_place)
      slice_scatter<int32_t>({out.data(), dshape}, cview(updates, ushape), starts, stops, steps,
                             axes, mview(out, dshape));
    else
      slice_scatter<int32_t>(cview(data, dshape), cview(updates, ushape), starts, stops, steps,
                             axes, mview(out, dshape));
    ASSERT_EQ(out, expected) << "trial " << trial << (in_place ? " in place" : "");
  }
}

}  // namespace
}  // namespace test_slice_scatter
