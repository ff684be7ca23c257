// run_batch: one op over many ragged rows (the Spark executors' entry point).
// Each row gives the same result as a direct call; a bad row reports its
// error and keeps its data; only a malformed batch throws.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_batch {
namespace {

using scatterkit::BatchKind;
using scatterkit::BatchOp;
using scatterkit::DType;
using scatterkit::IndexType;
using scatterkit::RaggedRef;
using scatterkit::Reduction;
using sktest::Ragged;
using sktest::Shape;

BatchOp nd_op(Reduction r = Reduction::kNone) {
  BatchOp op;
  op.kind = BatchKind::kScatterNDUpdate;
  op.dtype = DType::kInt32;
  op.index_type = IndexType::kInt64;
  op.reduction = r;
  return op;
}

TEST(Batch, RowsOfDifferentShapesMatchDirectCalls) {
  Ragged<int32_t> data, updates;
  Ragged<int64_t> indices;
  data.add({1, 2, 3, 4, 5, 6, 7, 8}, {8}).add({0, 0, 0, 0, 0, 0}, {3, 2}).add({}, {0, 4});
  indices.add({4, 3, 1, 7}, {4, 1}).add({2, 0, 2}, {3, 1}).add({}, {0, 1});
  updates.add({9, 10, 11, 12}, {4}).add({1, 2, 3, 4, 5, 6}, {3, 2}).add({}, {0, 4});
  std::vector<int32_t> out(data.values.size(), -1);
  const RaggedRef idx = indices.ref();
  const auto errors =
      scatterkit::run_batch(nd_op(Reduction::kSum), 3, data.ref(), &idx, updates.ref(), out.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(data.row(out, 0), (std::vector<int32_t>{1, 13, 3, 14, 14, 6, 7, 20}));
  EXPECT_EQ(data.row(out, 1), (std::vector<int32_t>{3, 4, 0, 0, 6, 8}));
}

TEST(Batch, BadRowsKeepTheirDataAndReportTheError) {
  Ragged<int32_t> data, updates;
  Ragged<int64_t> indices;
  data.add({1, 2, 3}, {3}).add({4, 5, 6}, {3}).add({7, 8, 9}, {3}).add({1, 1, 1}, {4});
  indices.add({0}, {1, 1}).add({5}, {1, 1}).add({-1}, {1, 1}).add({0}, {1, 1});
  updates.add({10}, {1}).add({20}, {1}).add({30}, {1}).add({40}, {1});
  std::vector<int32_t> out(data.values.size(), -1);
  BatchOp op = nd_op();
  op.options = {false, "ScatterNDUpdate-3"};
  const RaggedRef idx = indices.ref();
  const auto errors = scatterkit::run_batch(op, 4, data.ref(), &idx, updates.ref(), out.data());
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1].rfind("IndexError: ScatterNDUpdate-3: index 5 is out of bounds for axis 0 "
                            "with size 3",
                            0),
            0u)
      << errors[1];
  EXPECT_NE(errors[2].find("negative indices are not allowed"), std::string::npos) << errors[2];
  EXPECT_EQ(errors[3],
            "ValueError: ScatterNDUpdate-3: data shape (4,) does not match its 3 values");
  EXPECT_EQ(out, (std::vector<int32_t>{10, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1}));
}

TEST(Batch, MissingShapesAreAValueErrorNotACrash) {
  const std::vector<int32_t> values = {1, 2, 3, 4};
  const std::vector<int64_t> offsets = {0, 4}, shape_offsets = {0, 1};
  scatterkit::RaggedRef data{values.data(), 4, 4, offsets.data(), nullptr, 1, shape_offsets.data()};
  scatterkit::BatchOp op;
  op.kind = scatterkit::BatchKind::kSliceScatter;
  op.dtype = scatterkit::DType::kInt32;
  op.starts = {0}, op.stops = {1}, op.steps = {1}, op.axes = {0};
  std::vector<int32_t> out(4);
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [&] { scatterkit::run_batch(op, 1, data, nullptr, data, out.data()); },
      "data shapes are missing"));
}

TEST(Batch, TypeErrorsAreLabelled) {
  Ragged<int32_t> data, updates;
  Ragged<int64_t> indices;
  data.add({1, 2}, {2});
  indices.add({0}, {1});
  updates.add({5}, {1});
  BatchOp op;
  op.kind = BatchKind::kScatterElementsUpdate;
  op.dtype = DType::kOpaque;
  op.reduction = Reduction::kSum;
  std::vector<int32_t> out(2);
  const RaggedRef idx = indices.ref();
  const auto errors = scatterkit::run_batch(op, 1, data.ref(), &idx, updates.ref(), out.data());
  EXPECT_EQ(errors[0].rfind("TypeError: scatter_elements_update: reduction 'sum' needs", 0), 0u)
      << errors[0];
  EXPECT_EQ(out, (std::vector<int32_t>{1, 2}));
}

TEST(Batch, SliceScatterInPlaceNeedsNoIndices) {
  Ragged<float> data, updates;
  data.add({0, 1, 2, 3, 4}, {5}).add({0, 1, 2, 3, 4, 5}, {2, 3});
  updates.add({-1, -2}, {2}).add({-3, -4}, {2, 1});
  BatchOp op;
  op.kind = BatchKind::kSliceScatter;
  op.dtype = DType::kFloat32;
  op.starts = {-1};
  op.stops = {0};
  op.steps = {-3};
  op.axes = {-1};
  const auto errors =
      scatterkit::run_batch(op, 2, data.ref(), nullptr, updates.ref(), data.values.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(data.values, (std::vector<float>{0, -2, 2, 3, -1, 0, 1, -3, 3, 4, -4}));
}

TEST(Batch, InputsInsideAnotherRowsOutputAreReadAsTheyWere) {
  // Row 1's updates lie where row 0 writes: they must be read as they were before the call
  // (NumPy's rule), not after row 0 ran. The batch is small, so its rows run in order.
  Ragged<int32_t> data;
  Ragged<int64_t> indices;
  data.add({1, 2, 3, 4}, {4}).add({5, 6, 7, 8}, {4});
  indices.add({0, 1}, {2, 1}).add({2, 3}, {2, 1});
  std::vector<int32_t> out = {10, 20, 30, 40, 0, 0, 0, 0};
  const std::vector<int64_t> update_offsets = {0, 2, 4}, update_shapes = {2, 2},
                             update_shape_offsets = {0, 1, 2};
  const RaggedRef updates{out.data(),
                          4,
                          sizeof(int32_t),
                          update_offsets.data(),
                          update_shapes.data(),
                          2,
                          update_shape_offsets.data()};
  const RaggedRef idx = indices.ref();
  const auto errors = scatterkit::run_batch(nd_op(), 2, data.ref(), &idx, updates, out.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(out, (std::vector<int32_t>{10, 20, 3, 4, 5, 6, 30, 40}));
}

TEST(Batch, InPlaceRowsStayInPlace) {
  Ragged<int32_t> data, updates;
  Ragged<int64_t> indices;
  data.add({1, 2, 3}, {3}).add({4, 5, 6}, {3});
  indices.add({2}, {1, 1}).add({0}, {1, 1});
  updates.add({-1}, {1}).add({-2}, {1});
  const RaggedRef idx = indices.ref();
  const auto errors =
      scatterkit::run_batch(nd_op(), 2, data.ref(), &idx, updates.ref(), data.values.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(data.values, (std::vector<int32_t>{1, 2, -1, -2, 5, 6}));
}

TEST(Batch, MalformedBatchesThrow) {
  Ragged<int32_t> data, updates;
  Ragged<int64_t> indices;
  data.add({1, 2}, {2});
  indices.add({0}, {1, 1});
  updates.add({5}, {1});
  std::vector<int32_t> out = {-1, -1};
  const BatchOp op = nd_op();
  auto run = [&](const RaggedRef& d, const RaggedRef* i, const RaggedRef& u, int64_t rows = 1) {
    return [=, &op, &out] { scatterkit::run_batch(op, rows, d, i, u, out.data()); };
  };
  const RaggedRef idx = indices.ref();
  RaggedRef past_end = data.ref();
  past_end.size = 1;  // offsets point past the values
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      run(past_end, &idx, updates.ref()), "data offsets point outside their buffer"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(run(data.ref(), nullptr, updates.ref()),
                                                          "indices are missing"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(run(data.ref(), &idx, updates.ref(), -1),
                                                          "rows must be >= 0"));
  const Ragged<int32_t> narrow_indices = Ragged<int32_t>().add({0}, {1, 1});
  const RaggedRef narrow = narrow_indices.ref();
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(run(data.ref(), &narrow, updates.ref()),
                                                         "indices item size does not match"));
  const Ragged<int64_t> wide_updates = Ragged<int64_t>().add({5}, {1});
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      run(data.ref(), &idx, wide_updates.ref()), "updates and data have different item sizes"));
  EXPECT_EQ(out, (std::vector<int32_t>{-1, -1}));
}

TEST(Batch, ThreadsSplitRowsWithoutChangingBits) {
  // 2000 rows of 1000 floats (8 MB), each a float sum with heavy duplicates.
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-100, 100);
  Ragged<float> data, updates;
  Ragged<int64_t> indices;
  for (int r = 0; r < 2000; ++r) {
    const int64_t n = 1000, m = 1 + int64_t(rng() % 64);
    std::vector<float> d(n), u(m * 10);
    std::vector<int64_t> i(m);
    for (auto& x : d) x = value(rng);
    for (auto& x : u) x = value(rng);
    for (auto& x : i) x = int64_t(rng() % 4);
    data.add(d, {100, 10});
    indices.add(i, {m, 1});
    updates.add(u, {m, 10});
  }
  BatchOp op = nd_op(Reduction::kSum);
  op.dtype = DType::kFloat32;
  auto run = [&](int threads) {
    scatterkit::set_num_threads(threads);
    std::vector<float> out(data.values.size());
    const RaggedRef idx = indices.ref();
    const auto errors =
        scatterkit::run_batch(op, data.rows(), data.ref(), &idx, updates.ref(), out.data());
    EXPECT_EQ(errors, std::vector<std::string>(size_t(data.rows())));
    return out;
  };
  const auto one = run(1);
  EXPECT_TRUE(sktest::same_bits(run(2), one));
  // Row by row, the same as direct calls.
  for (int64_t r = 0; r < data.rows(); r += 199) {
    const auto d = data.row(data.values, r), u = updates.row(updates.values, r);
    const auto i = indices.row(indices.values, r);
    std::vector<float> direct(d.size());
    const int64_t m = int64_t(i.size());
    scatterkit::scatter_nd_update<float, int64_t>(
        sktest::cview(d, {100, 10}), sktest::cview(i, {m, 1}), sktest::cview(u, {m, 10}),
        sktest::mview(direct, {100, 10}), Reduction::kSum);
    EXPECT_TRUE(sktest::same_bits(data.row(one, r), direct)) << "row " << r;
  }
}

}  // namespace
}  // namespace test_batch
