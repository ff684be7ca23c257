// Error paths (docs/design.md section 3): the exception type, a message naming the
// op and the offending value, and the output (or data, in place) untouched.
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_errors {
namespace {

using scatterkit::DType;
using scatterkit::IndexError;
using scatterkit::IndexRef;
using scatterkit::IndexType;
using scatterkit::OpOptions;
using scatterkit::Reduction;
using scatterkit::TensorRef;
using scatterkit::TypeError;
using scatterkit::ValueError;
using sktest::cview;
using sktest::mview;
using sktest::throws_with;

constexpr float kSentinel = -99.0f;

// Data (2, 5) float; the output starts as sentinels.
struct Fixture : ::testing::Test {
  std::vector<float> data = sktest::iota_vector<float>(10);
  std::vector<float> out = std::vector<float>(10, kSentinel);
  void expect_out_untouched() const { EXPECT_EQ(out, std::vector<float>(10, kSentinel)); }
};

using ScatterUpdateErrors = Fixture;
using ScatterElementsUpdateErrors = Fixture;
using ScatterNdUpdateErrors = Fixture;
using SliceScatterErrors = Fixture;

TEST(ErrorTypes, DeriveFromTheStandardOnes) {
  // pybind11 maps these bases to ValueError / IndexError without glue.
  static_assert(std::is_base_of_v<std::invalid_argument, ValueError>);
  static_assert(std::is_base_of_v<std::out_of_range, IndexError>);
  static_assert(std::is_base_of_v<std::invalid_argument, TypeError>);
  static_assert(!std::is_base_of_v<ValueError, TypeError>);
  static_assert(!std::is_base_of_v<TypeError, ValueError>);
}

// ---- scatter_update ------------------------------------------------------------

TEST_F(ScatterUpdateErrors, IndexOutOfBoundsNumpyStyle) {
  const std::vector<int64_t> idx = {0, 7};
  const std::vector<float> upd(4);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {2}),
                                                   cview(upd, {2, 2}), 1, mview(out, {2, 5}));
      },
      "scatter_update: index 7 is out of bounds for axis 1 with size 5 (at indices[1]; "
      "valid range [0, 4])"));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, NegativeIndexInV3) {
  const std::vector<int32_t> idx = {-1};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_update<float, int32_t>(cview(data, {2, 5}), cview(idx, {1}),
                                                   cview(upd, {1, 5}), 0, mview(out, {2, 5}),
                                                   OpOptions{false, "ScatterUpdate-3"});
      },
      "ScatterUpdate-3: index -1 is out of bounds for axis 0 with size 2 (at indices[0]; valid "
      "range [0, 1]; negative indices are not allowed in this operation version)"));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, BadIndexAfterGoodOnesInPlace) {
  // Validation precedes every write: data is untouched in place too.
  const std::vector<int64_t> idx = {1, 0, -3};
  const std::vector<float> upd(15, 1.0f);
  const std::vector<float> before = data;
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {3}),
                                                   cview(upd, {3, 5}), 0, mview(data, {2, 5}),
                                                   OpOptions{true, nullptr});
      },
      "index -3 is out of bounds for axis 0 with size 2 (at indices[2]; valid range [-2, 1])"));
  EXPECT_EQ(data, before);
}

TEST_F(ScatterUpdateErrors, Uint64HugeIndexIsNotWrapped) {
  // 2^64 - 1 read as int64 would be -1, a valid index when negatives are allowed.
  const std::vector<uint64_t> idx = {std::numeric_limits<uint64_t>::max()};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_update<float, uint64_t>(cview(data, {2, 5}), cview(idx, {1}),
                                                    cview(upd, {1, 5}), 0, mview(out, {2, 5}),
                                                    OpOptions{true, nullptr});
      },
      "index 18446744073709551615 is out of bounds for axis 0 with size 2"));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, AxisOutOfRange) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(2);
  for (int64_t axis : {2, -3}) {
    EXPECT_TRUE(throws_with<ValueError>(
        [&] {
          scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {1}),
                                                     cview(upd, {2, 1}), axis, mview(out, {2, 5}));
        },
        "axis " + std::to_string(axis) + " is out of bounds for rank 2 (valid range [-2, 1])"));
  }
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, UpdatesShapeMismatch) {
  const std::vector<int64_t> idx = {0, 1};
  const std::vector<float> upd(6);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {2}),
                                                   cview(upd, {2, 3}), 1, mview(out, {2, 5}));
      },
      "updates shape (2, 3) does not match the expected shape (2, 2)"));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, OutShapeMismatch) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {1}),
                                                   cview(upd, {1, 5}), 0, mview(out, {5, 2}));
      },
      "out shape (5, 2) does not match data shape (2, 5)"));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, ZeroSizeShapesWhoseExtentsOverflowAreTooBig) {
  // No element, but strides over (2**62, 2**62, 0) would overflow int64 (NumPy refuses it too).
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(5);
  const int64_t huge = int64_t(1) << 62;
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update(TensorRef{nullptr, {huge, huge, 0}, DType::kFloat32, 4},
                                   IndexRef{idx.data(), {1}, IndexType::kInt64},
                                   TensorRef{upd.data(), {1, 5}, DType::kFloat32, 4}, 0,
                                   out.data());
      },
      "data shape (4611686018427387904, 4611686018427387904, 0) is too big"));
  // 2**61 float32 elements are 2**63 bytes: one too many; int16 (2**62 bytes) fits.
  EXPECT_FALSE(scatterkit::detail::extents_fit({0, int64_t(1) << 61}, 4));
  EXPECT_TRUE(scatterkit::detail::extents_fit({0, int64_t(1) << 61}, 2));
  EXPECT_TRUE(scatterkit::detail::extents_fit({huge, 0, 1}, 1));
  expect_out_untouched();
}

TEST_F(ScatterUpdateErrors, NegativeExtentAndNullPointers) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {-1}),
                                                   cview(upd, {1, 5}), 0, mview(out, {2, 5}));
      },
      "indices shape (-1,) has a negative extent"));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update<float, int64_t>({nullptr, {2, 5}}, cview(idx, {1}),
                                                   cview(upd, {1, 5}), 0, mview(out, {2, 5}));
      },
      "data is a null pointer"));
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_update(TensorRef{data.data(), {2, 5}, DType::kFloat32, 4},
                                   IndexRef{idx.data(), {1}, IndexType::kInt64},
                                   TensorRef{upd.data(), {1, 5}, DType::kFloat32, 4}, 0, nullptr);
      },
      "out is a null pointer"));
  expect_out_untouched();
}

// ---- scatter_elements_update -------------------------------------------------------

TEST_F(ScatterElementsUpdateErrors, FirstOffenderInCOrder) {
  const std::vector<int64_t> idx = {0, 1, 7, 9};
  const std::vector<float> upd(4);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_elements_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {2, 2}),
                                                            cview(upd, {2, 2}), 1,
                                                            mview(out, {2, 5}), Reduction::kSum);
      },
      "scatter_elements_update: index 7 is out of bounds for axis 1 with size 5 (at indices[1, "
      "0]; valid range [-5, 4])"));
  expect_out_untouched();
}

TEST_F(ScatterElementsUpdateErrors, HistogramFoldingIntoADiscardedOutKeepsData) {
  // 40 int64 indices into 5 bins: validation is fused into the fold, which with
  // discard_out_on_error runs on `out` itself. The error still names the first
  // offender, and data is never written.
  std::vector<int64_t> idx(40);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = int64_t(k % 5);
  idx[30] = 5;
  idx[35] = -9;
  const std::vector<float> upd(40, 1.0f);
  const std::vector<float> before = data;
  OpOptions options;
  options.discard_out_on_error = true;
  for (Reduction r : {Reduction::kSum, Reduction::kMax}) {
    EXPECT_TRUE(throws_with<IndexError>(
        [&] {
          scatterkit::scatter_elements_update<float, int64_t>(
              cview(data, {2, 5}), cview(idx, {1, 40}), cview(upd, {1, 40}), 1, mview(out, {2, 5}),
              r, true, options);
        },
        "index 5 is out of bounds for axis 1 with size 5 (at indices[0, 30]"));
    EXPECT_EQ(data, before);
  }
}

TEST_F(ScatterElementsUpdateErrors, HistogramBadIndexAfterManyNegativeOnes) {
  // Past a few negative indices, a long line is walked by the general loop
  // rather than the fast one; its bad index is still found and named.
  std::vector<int64_t> idx(400);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = int64_t(k % 5) - 5;  // all negative
  idx[300] = -6;
  idx[350] = 5;
  const std::vector<float> upd(400, 1.0f);
  for (Reduction r : {Reduction::kNone, Reduction::kSum, Reduction::kMax}) {
    EXPECT_TRUE(throws_with<IndexError>(
        [&] {
          scatterkit::scatter_elements_update<float, int64_t>(
              cview(data, {2, 5}), cview(idx, {1, 400}), cview(upd, {1, 400}), 1,
              mview(out, {2, 5}), r);
        },
        "index -6 is out of bounds for axis 1 with size 5 (at indices[0, 300]"));
    expect_out_untouched();
  }
}

TEST_F(ScatterElementsUpdateErrors, BelowMinusSize) {
  const std::vector<int32_t> idx = {-6};
  const std::vector<float> upd(1);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_elements_update<float, int32_t>(
            cview(data, {2, 5}), cview(idx, {1, 1}), cview(upd, {1, 1}), -1, mview(out, {2, 5}));
      },
      "index -6 is out of bounds for axis 1 with size 5"));
  expect_out_untouched();
}

TEST_F(ScatterElementsUpdateErrors, Uint64HugeIndexIsNotWrapped) {
  const std::vector<uint64_t> idx = {1, uint64_t(1) << 63};
  const std::vector<float> upd(2);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_elements_update<float, uint64_t>(
            cview(data, {2, 5}), cview(idx, {1, 2}), cview(upd, {1, 2}), 1, mview(out, {2, 5}));
      },
      "index 9223372036854775808 is out of bounds for axis 1 with size 5"));
  expect_out_untouched();
}

TEST_F(ScatterElementsUpdateErrors, ShapeRules) {
  const std::vector<int64_t> idx(6, 0);
  const std::vector<float> upd(6);
  auto call = [&](sktest::Shape ishape, sktest::Shape ushape, int64_t axis) {
    return [=] {
      scatterkit::scatter_elements_update<float, int64_t>(
          cview(data, {2, 5}), cview(idx, ishape), cview(upd, ushape), axis, mview(out, {2, 5}));
    };
  };
  EXPECT_TRUE(
      throws_with<ValueError>(call({6}, {6}, 0), "indices rank 1 does not match data rank 2"));
  EXPECT_TRUE(throws_with<ValueError>(call({2, 3}, {3, 2}, 1),
                                      "updates shape (3, 2) does not match indices shape (2, 3)"));
  EXPECT_TRUE(throws_with<ValueError>(call({3, 2}, {3, 2}, 1),
                                      "indices shape (3, 2) exceeds data shape (2, 5) at axis 0"));
  EXPECT_TRUE(throws_with<ValueError>(call({1, 2}, {1, 2}, 2), "axis 2 is out of bounds"));
  expect_out_untouched();
}

TEST_F(ScatterElementsUpdateErrors, UnsupportedReductions) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(1);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_elements_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {1, 1}),
                                                            cview(upd, {1, 1}), 0,
                                                            mview(out, {2, 5}), Reduction::kSub);
      },
      "reduction 'sub' is not supported"));
  const std::array<bool, 2> bdata = {true, false};
  const std::array<bool, 1> bupd = {true};
  std::array<bool, 2> bout = {false, true};
  EXPECT_TRUE(throws_with<TypeError>(
      [&] {
        scatterkit::scatter_elements_update<bool, int64_t>(cview(bdata, {2}), cview(idx, {1}),
                                                           cview(bupd, {1}), 0, mview(bout, {2}),
                                                           Reduction::kMean, false);
      },
      "reduction 'mean' is not supported for bool data"));
  EXPECT_EQ(bout, (std::array<bool, 2>{false, true}));
  expect_out_untouched();
}

TEST_F(ScatterElementsUpdateErrors, ReductionOnOpaqueData) {
  struct Rgb {
    unsigned char r, g, b;
  };
  const std::vector<Rgb> odata(2), oupd(1);
  std::vector<Rgb> oout(2, Rgb{1, 2, 3});
  const std::vector<int64_t> idx = {0};
  EXPECT_TRUE(throws_with<TypeError>(
      [&] {
        scatterkit::scatter_elements_update<Rgb, int64_t>(cview(odata, {2}), cview(idx, {1}),
                                                          cview(oupd, {1}), 0, mview(oout, {2}),
                                                          Reduction::kMax);
      },
      "reduction 'max' needs an arithmetic element type"));
  EXPECT_EQ(oout[1].g, 2);
}

// A reduction counts each target's updates in 32 bits, so an axis of 2**32 - 2 updates or
// more is refused before any read; with no updates at all there is nothing to count.
TEST_F(ScatterElementsUpdateErrors, ReductionCountLimitOnlyWithUpdates) {
  const std::vector<int64_t> idx(1, 0);
  const std::vector<float> upd(1);
  const int64_t too_many = int64_t(UINT32_MAX) - 1;
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_elements_update<float, int64_t>(
            cview(data, {2, 5}), cview(idx, {too_many, 1}), cview(upd, {too_many, 1}), 0,
            mview(out, {2, 5}), Reduction::kSum);
      },
      "reductions support at most 4294967293 updates along the axis"));
  expect_out_untouched();
  scatterkit::scatter_elements_update<float, int64_t>(
      cview(data, {2, 5}), cview(idx, {too_many, 0}), cview(upd, {too_many, 0}), 0,
      mview(out, {2, 5}), Reduction::kSum);
  EXPECT_EQ(out, data);
}

// With no updates and a null `out`, every op raises ValueError (no copy through null).
TEST_F(ScatterElementsUpdateErrors, NullOutWithEmptyIndices) {
  const std::vector<int64_t> idx;
  const std::vector<float> upd;
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_elements_update(TensorRef{data.data(), {2, 5}, DType::kFloat32, 4},
                                            IndexRef{idx.data(), {2, 0}, IndexType::kInt64},
                                            TensorRef{upd.data(), {2, 0}, DType::kFloat32, 4}, 1,
                                            nullptr);
      },
      "out is a null pointer"));
}

// ---- scatter_nd_update -----------------------------------------------------------

TEST_F(ScatterNdUpdateErrors, EachCoordinateCheckedOnItsAxis) {
  // (1, 4) is valid, (1, 5) is not: 5 is out of range for axis 1 only.
  const std::vector<int64_t> idx = {1, 4, 1, 5};
  const std::vector<float> upd(2);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_nd_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {2, 2}),
                                                      cview(upd, {2}), mview(out, {2, 5}));
      },
      "scatter_nd_update: index 5 is out of bounds for axis 1 with size 5 (at indices[1, 1]; "
      "valid range [-5, 4])"));
  const std::vector<int64_t> idx0 = {2, 0};
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_nd_update<float, int64_t>(cview(data, {2, 5}), cview(idx0, {1, 2}),
                                                      cview(upd, {1}), mview(out, {2, 5}));
      },
      "index 2 is out of bounds for axis 0 with size 2 (at indices[0, 0]"));
  expect_out_untouched();
}

TEST_F(ScatterNdUpdateErrors, Uint64HugeIndexIsNotWrapped) {
  const std::vector<uint64_t> idx = {std::numeric_limits<uint64_t>::max() - 1};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        scatterkit::scatter_nd_update<float, uint64_t>(cview(data, {2, 5}), cview(idx, {1, 1}),
                                                       cview(upd, {1, 5}), mview(out, {2, 5}));
      },
      "index 18446744073709551614 is out of bounds for axis 0 with size 2"));
  expect_out_untouched();
}

TEST_F(ScatterNdUpdateErrors, ShapeRules) {
  const std::vector<int64_t> idx(6, 0);
  const std::vector<float> upd(10);
  auto call = [&](sktest::Shape dshape, sktest::Shape ishape, sktest::Shape ushape) {
    return [=] {
      scatterkit::scatter_nd_update<float, int64_t>(cview(data, dshape), cview(idx, ishape),
                                                    cview(upd, ushape), mview(out, dshape));
    };
  };
  EXPECT_TRUE(throws_with<ValueError>(call({2, 5}, {1, 3}, {1}),
                                      "indices.shape[-1] = 3 exceeds the data rank 2"));
  EXPECT_TRUE(throws_with<ValueError>(call({2, 5}, {}, {2, 5}), "indices must have rank >= 1"));
  EXPECT_TRUE(throws_with<ValueError>(call({}, {1, 0}, {1}), "data must have rank >= 1"));
  EXPECT_TRUE(throws_with<ValueError>(call({2, 5}, {2, 1}, {2, 4}),
                                      "updates shape (2, 4) does not match the expected shape "
                                      "(2, 5)"));
  expect_out_untouched();
}

TEST_F(ScatterNdUpdateErrors, MeanIsNotAnNdReduction) {
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd(5);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::scatter_nd_update<float, int64_t>(cview(data, {2, 5}), cview(idx, {1, 1}),
                                                      cview(upd, {1, 5}), mview(out, {2, 5}),
                                                      Reduction::kMean);
      },
      "reduction 'mean' is not supported"));
  expect_out_untouched();
}

// ---- slice_scatter ---------------------------------------------------------------

TEST_F(SliceScatterErrors, AttributeErrors) {
  const std::vector<float> upd(10);
  auto call = [&](std::vector<int64_t> start, std::vector<int64_t> stop, std::vector<int64_t> step,
                  std::vector<int64_t> axes, sktest::Shape ushape) {
    return [=] {
      scatterkit::slice_scatter<float>(cview(data, {2, 5}), cview(upd, ushape), start, stop, step,
                                       axes, mview(out, {2, 5}));
    };
  };
  EXPECT_TRUE(throws_with<ValueError>(call({0}, {1}, {0}, {0}, {1, 5}), "step must not be 0"));
  EXPECT_TRUE(throws_with<ValueError>(call({0, 0}, {1, 1}, {1, 1}, {1, -1}, {2, 1}),
                                      "axes must be distinct, axis 1 repeats"));
  EXPECT_TRUE(throws_with<ValueError>(call({0, 0}, {1}, {1}, {0}, {1, 5}),
                                      "start, stop, step and axis must have the same length"));
  EXPECT_TRUE(
      throws_with<ValueError>(call({}, {}, {}, {}, {2, 5}), "must have the same length >= 1"));
  EXPECT_TRUE(throws_with<ValueError>(call({0}, {1}, {1}, {2}, {1, 5}),
                                      "axis 2 is out of bounds for rank 2"));
  EXPECT_TRUE(
      throws_with<ValueError>(call({0}, {5}, {2}, {1}, {2, 2}),
                              "updates shape (2, 2) does not match the expected shape (2, 3)"));
  expect_out_untouched();
}

TEST_F(SliceScatterErrors, ZeroDimData) {
  const std::vector<float> upd(1);
  EXPECT_TRUE(throws_with<ValueError>(
      [&] {
        scatterkit::slice_scatter<float>(cview(data, {}), cview(upd, {}), 0, 1, 1, 0,
                                         mview(out, {}));
      },
      "data must have rank >= 1"));
  expect_out_untouched();
}

// ---- type-erased only: element and index tags --------------------------------------

TEST_F(ScatterUpdateErrors, DtypeMismatchIsATypeError) {
  const std::vector<int64_t> idx = {0};
  const std::vector<int32_t> upd(5);
  EXPECT_TRUE(throws_with<TypeError>(
      [&] {
        scatterkit::scatter_update(TensorRef{data.data(), {2, 5}, DType::kFloat32, 4},
                                   IndexRef{idx.data(), {1}, IndexType::kInt64},
                                   TensorRef{upd.data(), {1, 5}, DType::kInt32, 4}, 0, out.data());
      },
      "updates dtype int32 does not match data dtype float32"));
  expect_out_untouched();
}

// An item size that does not fit the dtype is a TypeError (no read past the buffers).
TEST(TypeErasedErrors, ItemsizeSmallerThanTheDtype) {
  std::vector<unsigned char> data(4), upd(1), out(4, 7);
  const std::vector<int64_t> idx = {3};
  EXPECT_TRUE(throws_with<TypeError>(
      [&] {
        scatterkit::scatter_elements_update(TensorRef{data.data(), {4}, DType::kFloat64, 1},
                                            IndexRef{idx.data(), {1}, IndexType::kInt64},
                                            TensorRef{upd.data(), {1}, DType::kFloat64, 1}, 0,
                                            out.data(), Reduction::kSum);
      },
      "float64"));
  EXPECT_EQ(out, std::vector<unsigned char>(4, 7));
}

TEST(NamesAndSettings, Errors) {
  EXPECT_TRUE(throws_with<TypeError>([] { scatterkit::dtype_from_name("complex64"); },
                                     "unknown dtype name 'complex64'"));
  EXPECT_TRUE(throws_with<ValueError>([] { scatterkit::set_num_threads(0); },
                                      "set_num_threads: n must be >= 1, got 0"));
  EXPECT_TRUE(throws_with<ValueError>([] { scatterkit::set_num_threads(-4); }, "got -4"));
}

}  // namespace
}  // namespace test_errors
