// ScatterElementsUpdate's strategy choice (ops/elements/strategy.hpp): which strategy each
// kind of call takes, and that every strategy gives the plain loop's result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace test_elements_strategy {
namespace {

using scatterkit::DType;
using scatterkit::IndexType;
using scatterkit::Reduction;
using scatterkit::Shape;
using scatterkit::detail::ElementsStrategy;
using S = ElementsStrategy;
using sktest::count_of;

struct Case {
  std::string name;
  Shape data, indices;
  int64_t axis;
  Reduction reduction;
  bool use_init_val, exact;
  int threads;
  S expected;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// Sets the kernels' thread count for one test.
struct Threads {
  explicit Threads(int n) : before(scatterkit::get_num_threads()) {
    scatterkit::set_num_threads(n);
  }
  ~Threads() { scatterkit::set_num_threads(before); }
  int before;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"none", {64, 16}, {64, 16}, 0, Reduction::kNone, true, false, 2, S::kMove},
      {"sum_rows", {512, 64}, {256, 64}, 0, Reduction::kSum, true, false, 2, S::kFoldInPlace},
      {"float_sum_histogram", {1000}, {100000}, 0, Reduction::kSum, true, false, 2, S::kFusedFold},
      {"max_histogram_two_threads",
       {1000},
       {100000},
       0,
       Reduction::kMax,
       true,
       false,
       2,
       S::kFusedFoldInParts},
      {"max_histogram_one_thread",
       {1000},
       {100000},
       0,
       Reduction::kMax,
       true,
       false,
       1,
       S::kFusedFold},
      {"max_histogram_no_init",
       {1000},
       {100000},
       0,
       Reduction::kMax,
       false,
       false,
       2,
       S::kFusedFold},
      {"exact_max_histogram", {1000}, {100000}, 0, Reduction::kMax, true, true, 2, S::kFusedFold},
      {"sum_histogram_past_the_cache",
       {int64_t(1) << 22},
       {int64_t(1) << 16},
       0,
       Reduction::kSum,
       true,
       false,
       2,
       S::kFoldByRanges},
      {"max_histogram_past_the_cache",
       {(int64_t(1) << 22) + 3},
       {int64_t(1) << 17},
       0,
       Reduction::kMax,
       true,
       false,
       2,
       S::kFoldByRanges},
      {"sum_histogram_past_the_cache_one_thread",
       {int64_t(1) << 22},
       {int64_t(1) << 17},
       0,
       Reduction::kSum,
       true,
       false,
       1,
       S::kFoldByRanges},
      {"sum_histogram_past_the_cache_no_init",
       {int64_t(1) << 22},
       {int64_t(1) << 16},
       0,
       Reduction::kSum,
       false,
       false,
       2,
       S::kFoldInPlace},
      {"sum_few_updates_past_the_cache",
       {int64_t(1) << 22},
       {(int64_t(1) << 16) - 1},
       0,
       Reduction::kSum,
       true,
       false,
       2,
       S::kFoldInPlace},
      {"sum_histogram_below_the_cache",
       {(int64_t(1) << 22) - 1},
       {int64_t(1) << 20},
       0,
       Reduction::kSum,
       true,
       false,
       2,
       S::kFoldInPlace},
      {"mean_rows", {512, 64}, {256, 64}, 0, Reduction::kMean, true, false, 2, S::kFoldInTable},
      {"mean_long_line",
       {int64_t(1) << 17},
       {int64_t(1) << 18},
       0,
       Reduction::kMean,
       true,
       false,
       2,
       S::kFoldLineMean},
      {"mean_few_on_long_axis",
       {int64_t(1) << 20},
       {16},
       0,
       Reduction::kMean,
       true,
       false,
       2,
       S::kFoldSorted},
      {"exact_sum_dense", {100}, {1000}, 0, Reduction::kSum, true, true, 2, S::kExactTable},
      {"exact_mean_sparse",
       {int64_t(1) << 20},
       {10},
       0,
       Reduction::kMean,
       false,
       true,
       2,
       S::kExactCompact},
  };
  return all;
}

class ElementsStrategyCase : public ::testing::TestWithParam<Case> {};

TEST_P(ElementsStrategyCase, TakesItsStrategy) {
  const Case& c = GetParam();
  const Threads threads(c.threads);
  const auto plan = scatterkit::detail::elements_strategy(c.data, c.indices, c.axis,
                                                          DType::kFloat32, IndexType::kInt64,
                                                          c.reduction, c.use_init_val, c.exact);
  EXPECT_STREQ(strategy_name(plan.strategy), strategy_name(c.expected));
}

// Small integers: every sum is exact whatever the order, so the plain loop's result is the
// only right one for each strategy.
TEST_P(ElementsStrategyCase, GivesThePlainLoopsResult) {
  const Case& c = GetParam();
  const Threads threads(c.threads);
  std::mt19937_64 rng(7);
  const int64_t size = c.data[size_t(c.axis)];
  std::vector<float> data(size_t(count_of(c.data))), upd(size_t(count_of(c.indices)));
  std::vector<int64_t> idx(upd.size());
  for (float& v : data) v = float(rng() % 9) - 4;
  for (float& v : upd) v = float(rng() % 9) - 4;
  for (int64_t& i : idx) i = int64_t(rng() % uint64_t(size));
  std::vector<float> expected = data, sums(data.size()), counts(data.size());
  std::vector<bool> hit(data.size());
  sktest::ref_scatter_elements(sums, c.data, idx, c.indices, upd, c.axis,
                               [](float& a, float u) { a += u; });
  const std::vector<float> ones(upd.size(), 1.0f);
  sktest::ref_scatter_elements(counts, c.data, idx, c.indices, ones, c.axis,
                               [](float& a, float u) { a += u; });
  std::vector<float> maxima(data.size(), -1e9f);
  sktest::ref_scatter_elements(maxima, c.data, idx, c.indices, upd, c.axis,
                               [](float& a, float u) { a = std::max(a, u); });
  std::vector<float> last = data;
  sktest::ref_scatter_elements(last, c.data, idx, c.indices, upd, c.axis,
                               [](float& a, float u) { a = u; });
  for (size_t x = 0; x < data.size(); ++x) {
    if (counts[x] == 0) continue;
    const float init = c.use_init_val ? 1.0f : 0.0f;
    switch (c.reduction) {
      case Reduction::kNone: expected[x] = last[x]; break;
      case Reduction::kSum: expected[x] = init * data[x] + sums[x]; break;
      case Reduction::kMean: expected[x] = (init * data[x] + sums[x]) / (counts[x] + init); break;
      default: expected[x] = c.use_init_val ? std::max(data[x], maxima[x]) : maxima[x];
    }
  }
  std::vector<float> out(data.size());
  scatterkit::OpOptions options;
  options.exact = c.exact;
  scatterkit::scatter_elements_update(
      scatterkit::TensorRef{data.data(), c.data, DType::kFloat32, 4},
      scatterkit::IndexRef{idx.data(), c.indices, IndexType::kInt64},
      scatterkit::TensorRef{upd.data(), c.indices, DType::kFloat32, 4}, c.axis, out.data(),
      c.reduction, c.use_init_val, options);
  EXPECT_TRUE(sktest::same_bits(out, expected));
}

std::string case_name(const ::testing::TestParamInfo<Case>& test) { return test.param.name; }

INSTANTIATE_TEST_SUITE_P(Calls, ElementsStrategyCase, ::testing::ValuesIn(cases()), case_name);

// Pieces: out filled from data piece by piece for many small pieces, never in place.
TEST(ElementsStrategy, CopiesInPiecesOnlyOutOfPlace) {
  using scatterkit::detail::elements_strategy;
  const Shape data = {100000, 16}, indices = {100000, 4};
  EXPECT_TRUE(
      elements_strategy(data, indices, 1, DType::kFloat32, IndexType::kInt32).copy_in_pieces);
  EXPECT_FALSE(elements_strategy(data, indices, 1, DType::kFloat32, IndexType::kInt32,
                                 Reduction::kNone, true, false, /*in_place=*/true)
                   .copy_in_pieces);
}

// The fold by ranges splits its ranges between threads by cost, so that a range holding most
// of the updates is a thread's whole share, and every range goes to exactly one thread.
TEST(ElementsStrategy, SplitsRangesToFoldByCost) {
  using scatterkit::detail::first_range_of;
  const std::vector<int64_t> heavy_first{0, 100, 110, 120, 130};
  EXPECT_EQ(first_range_of(heavy_first, 0, 2), 0);
  EXPECT_EQ(first_range_of(heavy_first, 1, 2), 1);  // the heavy range alone
  EXPECT_EQ(first_range_of(heavy_first, 2, 2), 4);
  const std::vector<int64_t> even{0, 10, 20, 30, 40};
  EXPECT_EQ(first_range_of(even, 1, 2), 2);
  // More threads than the costs divide into: some get nothing, none a range twice.
  for (int64_t threads = 1; threads <= 6; ++threads)
    for (int64_t k = 0; k < threads; ++k)
      EXPECT_LE(first_range_of(heavy_first, k, threads),
                first_range_of(heavy_first, k + 1, threads));
  EXPECT_EQ(first_range_of(heavy_first, 6, 6), 4);
}

// A range's scratch sits at out's offset in its page, inside the block it is carved from,
// whatever the offsets of the two (4K aliasing, ranges.hpp).
TEST(ElementsStrategy, PlacesTheRangeScratchAtOutsPageOffset) {
  using scatterkit::detail::at_page_offset_of;
  using scatterkit::detail::kPageBytes;
  std::vector<char> block(kPageBytes + 64 + 256);
  std::vector<float> out(kPageBytes);
  for (size_t block_shift : {size_t(0), size_t(4), size_t(16), size_t(63)})
    for (size_t out_shift : {size_t(0), size_t(1), size_t(4), size_t(1000)}) {
      char* b = block.data() + block_shift;
      const float* like = out.data() + out_shift;
      const float* s = at_page_offset_of(b, like);
      EXPECT_EQ(uintptr_t(s) % kPageBytes, uintptr_t(like) % kPageBytes);
      EXPECT_GE(reinterpret_cast<const char*>(s), b);
      EXPECT_LT(reinterpret_cast<const char*>(s), b + kPageBytes);
    }
}

// One thread folds updates in place only when ranges hot enough hold a good share of them (30%):
// a fifth of the updates on 1% or 10% of the bins, the rest spread, still go by ranges (faster
// there), and so do updates spread over half of the table; half of them there fold in place.
TEST(ElementsStrategy, FoldsInPlaceOnlyUpdatesMostlyOnHotRanges) {
  using scatterkit::detail::HotShare;
  using scatterkit::detail::sample_share;
  const int64_t bins = int64_t(1) << 24, n = 100000;
  const int shift = scatterkit::detail::range_shift(bins, 4);
  const int64_t ranges = bins >> shift;
  const scatterkit::detail::IndexRange valid{0, bins};
  std::mt19937_64 rng(7);
  auto concentrated = [&](double hot_share, int64_t hot_bins) {
    std::vector<int64_t> idx(static_cast<size_t>(n));
    std::uniform_real_distribution<double> u;
    for (auto& v : idx) v = int64_t(rng() % uint64_t(u(rng) < hot_share ? hot_bins : bins));
    return sample_share(idx.data(), n, bins, valid, shift, ranges).concentrated();
  };
  for (int64_t hot_bins : {bins / 100, bins / 10}) {
    for (double hot_share : {0.0, 0.2})
      EXPECT_FALSE(concentrated(hot_share, hot_bins)) << hot_share << " on " << hot_bins;
    for (double hot_share : {0.5, 0.7, 1.0})
      EXPECT_TRUE(concentrated(hot_share, hot_bins)) << hot_share << " on " << hot_bins;
  }
  EXPECT_FALSE(concentrated(1.0, bins / 2));
  // The count's own check, on every update.
  HotShare all_on_one(n, ranges);
  all_on_one.add_range(n);
  EXPECT_TRUE(all_on_one.concentrated());
  HotShare spread(n, ranges);
  for (int64_t r = 0; r < ranges; ++r) spread.add_range(n / ranges);
  EXPECT_FALSE(spread.concentrated());
}

// float16 sums accumulate in float32 (a table); their min/max pick an operand (in place).
TEST(ElementsStrategy, HalfSumsInATableHalfMaxInPlace) {
  using scatterkit::detail::elements_strategy;
  const Shape data = {512, 64}, indices = {256, 64};
  EXPECT_EQ(elements_strategy(data, indices, 0, DType::kFloat16, IndexType::kInt32, Reduction::kSum)
                .strategy,
            S::kFoldInTable);
  EXPECT_EQ(elements_strategy(data, indices, 0, DType::kFloat16, IndexType::kInt32, Reduction::kMax)
                .strategy,
            S::kFoldInPlace);
}

// Histograms fuse validation into the fold for 32- and 64-bit numbers only (the types the
// fused folds are compiled for); narrow types validate first and fold in place.
TEST(ElementsStrategy, FusesHistogramsOfWideNumbersOnly) {
  using scatterkit::detail::elements_strategy;
  const Threads threads(1);  // two would split each line between them
  const Shape data = {1000}, indices = {100000};
  for (DType wide : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kUInt64})
    EXPECT_EQ(
        elements_strategy(data, indices, 0, wide, IndexType::kInt32, Reduction::kMin, true, false)
            .strategy,
        S::kFusedFold)
        << scatterkit::dtype_name(wide);
  for (DType narrow :
       {DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kUInt16, DType::kBool})
    EXPECT_EQ(
        elements_strategy(data, indices, 0, narrow, IndexType::kInt32, Reduction::kMin, true, false)
            .strategy,
        S::kFoldInPlace)
        << scatterkit::dtype_name(narrow);
}

// float16, float32 and float64 run in the index type's kernel units, at full optimization;
// every other element type in the units of their own (CMakeLists.txt).
TEST(ElementsStrategy, MeasuredTypesAreTheBenchmarkedFloats) {
  using scatterkit::detail::is_measured_type;
  for (DType t : {DType::kFloat16, DType::kFloat32, DType::kFloat64})
    EXPECT_TRUE(is_measured_type("test", t)) << scatterkit::dtype_name(t);
  for (DType t : {DType::kBool, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                  DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64, DType::kBFloat16})
    EXPECT_FALSE(is_measured_type("test", t)) << scatterkit::dtype_name(t);
}

TEST(ElementsStrategy, ChecksTheCallLikeTheOp) {
  using scatterkit::detail::elements_strategy;
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [] { elements_strategy({4}, {4}, 0, DType::kFloat32, IndexType::kInt64, Reduction::kSub); },
      "reduction 'sub' is not supported"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [] { elements_strategy({4, 2}, {4}, 0, DType::kFloat32, IndexType::kInt64); },
      "does not match data rank"));
}

}  // namespace
}  // namespace test_elements_strategy
