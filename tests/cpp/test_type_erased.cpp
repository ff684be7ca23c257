// The type-erased API: TensorRef / IndexRef with DType and IndexType tags, as
// the Python bindings call it. Same semantics as the typed API.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_type_erased {
namespace {

using scatterkit::bfloat16;
using scatterkit::DType;
using scatterkit::float16;
using scatterkit::IndexRef;
using scatterkit::IndexType;
using scatterkit::OpOptions;
using scatterkit::Reduction;
using scatterkit::TensorRef;
using sktest::cview;
using sktest::mview;
using sktest::same_bits;
using sktest::Shape;

template <class T>
TensorRef ref(const std::vector<T>& v, Shape shape, DType dtype) {
  return TensorRef{v.data(), std::move(shape), dtype, sizeof(T)};
}

template <class I>
IndexRef iref(const std::vector<I>& v, Shape shape, IndexType type) {
  return IndexRef{v.data(), std::move(shape), type};
}

// ---- tags ----------------------------------------------------------------------

TEST(Tags, DtypeOfEveryElementType) {
  static_assert(scatterkit::dtype_of<bool>() == DType::kBool);
  static_assert(scatterkit::dtype_of<int8_t>() == DType::kInt8);
  static_assert(scatterkit::dtype_of<int16_t>() == DType::kInt16);
  static_assert(scatterkit::dtype_of<int32_t>() == DType::kInt32);
  static_assert(scatterkit::dtype_of<int64_t>() == DType::kInt64);
  static_assert(scatterkit::dtype_of<uint8_t>() == DType::kUInt8);
  static_assert(scatterkit::dtype_of<uint16_t>() == DType::kUInt16);
  static_assert(scatterkit::dtype_of<uint32_t>() == DType::kUInt32);
  static_assert(scatterkit::dtype_of<uint64_t>() == DType::kUInt64);
  static_assert(scatterkit::dtype_of<float16>() == DType::kFloat16);
  static_assert(scatterkit::dtype_of<bfloat16>() == DType::kBFloat16);
  static_assert(scatterkit::dtype_of<float>() == DType::kFloat32);
  static_assert(scatterkit::dtype_of<double>() == DType::kFloat64);
  static_assert(scatterkit::dtype_of<std::complex<float>>() == DType::kOpaque);
  static_assert(scatterkit::index_type_of<int32_t>() == IndexType::kInt32);
  static_assert(scatterkit::index_type_of<int64_t>() == IndexType::kInt64);
  static_assert(scatterkit::index_type_of<uint64_t>() == IndexType::kUInt64);
  static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2);
}

TEST(Tags, NamesRoundTrip) {
  for (int i = 0; i <= int(DType::kOpaque); ++i) {
    const DType t = DType(i);
    EXPECT_EQ(scatterkit::dtype_from_name(scatterkit::dtype_name(t)), t);
  }
  EXPECT_STREQ(scatterkit::dtype_name(DType::kBFloat16), "bfloat16");
}

// ---- each op, type-erased == typed ---------------------------------------------

TEST(TypeErased, ScatterUpdateEqualsTyped) {
  const auto data = sktest::iota_vector<double>(24);  // (2, 3, 4)
  const std::vector<int64_t> idx = {2, 0};
  const auto upd = sktest::iota_vector<double>(16, 100);  // (2, 2, 4)
  std::vector<double> erased(24), typed(24);
  scatterkit::scatter_update(
      ref(data, {2, 3, 4}, DType::kFloat64), iref(idx, {2}, IndexType::kInt64),
      ref(upd, {2, 2, 4}, DType::kFloat64), 1, erased.data(), OpOptions{false, nullptr});
  scatterkit::scatter_update<double, int64_t>(cview(data, {2, 3, 4}), cview(idx, {2}),
                                              cview(upd, {2, 2, 4}), 1, mview(typed, {2, 3, 4}));
  std::vector<double> expected = data;
  sktest::ref_scatter_update(expected, {2, 3, 4}, idx, upd, 1);
  EXPECT_EQ(erased, expected);
  EXPECT_EQ(typed, expected);
}

TEST(TypeErased, ScatterUpdateNegativeIndicesFollowOptions) {
  const std::vector<int32_t> data = {0, 1, 2, 3};
  const std::vector<int32_t> idx = {-1};
  const std::vector<int32_t> upd = {9};
  std::vector<int32_t> out(4, 5);
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatterkit::scatter_update(ref(data, {4}, DType::kInt32), iref(idx, {1}, IndexType::kInt32),
                                   ref(upd, {1}, DType::kInt32), 0, out.data(),
                                   OpOptions{false, "ScatterUpdate-3"});
      },
      "ScatterUpdate-3: index -1 is out of bounds"));
  EXPECT_EQ(out, std::vector<int32_t>(4, 5));
  scatterkit::scatter_update(ref(data, {4}, DType::kInt32), iref(idx, {1}, IndexType::kInt32),
                             ref(upd, {1}, DType::kInt32), 0, out.data(), OpOptions{true, nullptr});
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 2, 9}));
}

TEST(TypeErased, ScatterElementsUpdateEveryIndexType) {
  // Spec example 4 (sum on axis 1) with each index tag.
  const std::vector<int32_t> data(12, 1);
  const std::vector<int32_t> i32 = {1, 1, 0, 3};
  const std::vector<int64_t> i64 = {1, 1, 0, 3};
  const std::vector<uint64_t> u64 = {1, 1, 0, 3};
  const std::vector<int32_t> upd = {11, 12, 13, 14};
  const std::vector<int32_t> expected = {1, 24, 1, 1, 14, 1, 1, 15, 1, 1, 1, 1};
  auto run = [&](IndexRef indices) {
    std::vector<int32_t> out(12);
    scatterkit::scatter_elements_update(ref(data, {3, 4}, DType::kInt32), indices,
                                        ref(upd, {2, 2}, DType::kInt32), 1, out.data(),
                                        Reduction::kSum, true);
    return out;
  };
  EXPECT_EQ(run(iref(i32, {2, 2}, IndexType::kInt32)), expected);
  EXPECT_EQ(run(iref(i64, {2, 2}, IndexType::kInt64)), expected);
  EXPECT_EQ(run(iref(u64, {2, 2}, IndexType::kUInt64)), expected);
}

TEST(TypeErased, ScatterElementsHalfTagsReduce) {
  // Spec example 1 in float16 and bfloat16 storage, addressed by tag only.
  const auto data = sktest::make_vector<float16>({2, 3, 4, 6});
  const std::vector<int64_t> idx = {1, 0, 0, -2, -1, 2};
  const auto upd = sktest::make_vector<float16>({10, 20, 30, 40, 70, 60});
  std::vector<float16> out(4);
  scatterkit::scatter_elements_update(
      ref(data, {4}, DType::kFloat16), iref(idx, {6}, IndexType::kInt64),
      ref(upd, {6}, DType::kFloat16), 0, out.data(), Reduction::kSum, true);
  EXPECT_TRUE(same_bits(out, sktest::make_vector<float16>({52, 13, 104, 76})));

  const auto bdata = sktest::make_vector<bfloat16>({2, 3, 4, 6});
  const auto bupd = sktest::make_vector<bfloat16>({10, 20, 30, 40, 70, 60});
  std::vector<bfloat16> bout(4);
  scatterkit::scatter_elements_update(
      ref(bdata, {4}, DType::kBFloat16), iref(idx, {6}, IndexType::kInt64),
      ref(bupd, {6}, DType::kBFloat16), 0, bout.data(), Reduction::kMax, false);
  EXPECT_TRUE(same_bits(bout, sktest::make_vector<bfloat16>({30, 10, 60, 70})));
}

TEST(TypeErased, ScatterNdUpdateInPlace) {
  std::vector<uint32_t> data = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint64_t> idx = {4, 3, 1, 7};
  const std::vector<uint32_t> upd = {9, 10, 11, 12};
  scatterkit::scatter_nd_update(ref(data, {8}, DType::kUInt32),
                                iref(idx, {4, 1}, IndexType::kUInt64),
                                ref(upd, {4}, DType::kUInt32), data.data());
  EXPECT_EQ(data, (std::vector<uint32_t>{1, 11, 3, 10, 9, 6, 7, 12}));
  scatterkit::scatter_nd_update(ref(data, {8}, DType::kUInt32),
                                iref(idx, {4, 1}, IndexType::kUInt64),
                                ref(upd, {4}, DType::kUInt32), data.data(), Reduction::kSub);
  EXPECT_EQ(data, (std::vector<uint32_t>{1, 0, 3, 0, 0, 6, 7, 0}));
}

TEST(TypeErased, SliceScatterSeveralAxes) {
  const auto data = sktest::iota_vector<int16_t>(20);  // (4, 5)
  const std::vector<int16_t> upd = {-1, -2, -3, -4};
  std::vector<int16_t> out(20);
  scatterkit::slice_scatter(ref(data, {4, 5}, DType::kInt16), ref(upd, {2, 2}, DType::kInt16),
                            {0, -1}, {4, 0}, {3, -3}, {0, 1}, out.data());
  // rows 0, 3; columns 4, 1
  EXPECT_EQ(out, (std::vector<int16_t>{0,  -2, 2,  3,  -1, 5,  6,  7,  8,  9,
                                       10, 11, 12, 13, 14, 15, -4, 17, 18, -3}));
}

// ---- element widths: opaque data moves as bytes -----------------------------------

TEST(TypeErased, OpaqueWidths) {
  // 16 bytes (complex<double>), 12 bytes (run-time width), 1 byte (bool tag).
  using C = std::complex<double>;
  const std::vector<C> cdata = {{0, 0}, {1, 1}, {2, 2}};
  const std::vector<C> cupd = {{-1, 5}};
  const std::vector<int64_t> idx = {1};
  std::vector<C> cplx_out(3);
  scatterkit::scatter_elements_update(ref(cdata, {3}, DType::kOpaque),
                                      iref(idx, {1}, IndexType::kInt64),
                                      ref(cupd, {1}, DType::kOpaque), 0, cplx_out.data());
  EXPECT_EQ(cplx_out, (std::vector<C>{{0, 0}, {-1, 5}, {2, 2}}));

  struct Vec3 {
    float x, y, z;
  };
  static_assert(sizeof(Vec3) == 12);
  const std::vector<Vec3> vdata = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}};  // (2, 2)
  const std::vector<Vec3> vupd = {{7, 8, 9}, {6, 5, 4}};
  std::vector<Vec3> vout(4);
  scatterkit::scatter_nd_update(ref(vdata, {2, 2}, DType::kOpaque),
                                iref(idx, {1, 1}, IndexType::kInt64),
                                ref(vupd, {1, 2}, DType::kOpaque), vout.data());
  EXPECT_TRUE(same_bits(vout, std::vector<Vec3>{{1, 1, 1}, {2, 2, 2}, {7, 8, 9}, {6, 5, 4}}));
  scatterkit::slice_scatter(ref(vdata, {2, 2}, DType::kOpaque), ref(vupd, {2, 1}, DType::kOpaque),
                            {1}, {2}, {1}, {1}, vout.data());
  EXPECT_TRUE(same_bits(vout, std::vector<Vec3>{{1, 1, 1}, {7, 8, 9}, {3, 3, 3}, {6, 5, 4}}));
}

TEST(TypeErased, LargeMisalignedOutputsAreCopiedExactly) {
  // Outputs of more than 8 MiB take the streaming-store copy; odd offsets of
  // data and out exercise its unaligned head and tail, 2 threads its blocks.
  const int64_t n = (int64_t(9) << 20) + 13;
  std::vector<uint8_t> data_buf(size_t(n) + 16), out_buf(size_t(n) + 16, 0xee);
  for (size_t i = 0; i < data_buf.size(); ++i) data_buf[i] = uint8_t(i * 131 + 7);
  const uint8_t* data = data_buf.data() + 3;
  uint8_t* out = out_buf.data() + 5;
  const std::vector<int64_t> idx = {0, n - 1, 12345};
  const std::vector<uint8_t> upd = {1, 2, 3};
  for (int threads : {1, 2}) {
    scatterkit::set_num_threads(threads);
    std::fill(out_buf.begin(), out_buf.end(), 0xee);
    scatterkit::scatter_update(TensorRef{data, {n}, DType::kUInt8, 1},
                               IndexRef{idx.data(), {3}, IndexType::kInt64},
                               TensorRef{upd.data(), {3}, DType::kUInt8, 1}, 0, out);
    std::vector<uint8_t> expected(data, data + n);
    expected[0] = 1;
    expected[size_t(n - 1)] = 2;
    expected[12345] = 3;
    EXPECT_EQ(std::memcmp(out, expected.data(), size_t(n)), 0) << threads << " threads";
    EXPECT_EQ(out_buf[4], 0xee) << "wrote before out";
    EXPECT_EQ(out_buf[size_t(n) + 5], 0xee) << "wrote past out";
    // The same through an op that copies first, then scatters.
    std::fill(out_buf.begin(), out_buf.end(), 0xee);
    scatterkit::scatter_nd_update(
        TensorRef{data, {n}, DType::kUInt8, 1}, IndexRef{idx.data(), {3, 1}, IndexType::kInt64},
        TensorRef{upd.data(), {3}, DType::kUInt8, 1}, out, Reduction::kMax);
    for (size_t i : {size_t(0), size_t(n - 1), size_t(12345)})
      expected[i] = std::max(data[i], expected[i]);
    EXPECT_EQ(std::memcmp(out, expected.data(), size_t(n)), 0) << threads << " threads";
    EXPECT_EQ(out_buf[size_t(n) + 5], 0xee) << "wrote past out";
  }
}

TEST(TypeErased, ElementMismatchesAreTypeErrors) {
  const std::vector<float> data = {1, 2};
  const std::vector<double> wide = {3};
  const std::vector<int32_t> same_width = {3};
  const std::vector<int64_t> idx = {0};
  std::vector<float> out = {0, 0};
  auto call = [&](TensorRef updates) {
    return [&, updates] {
      scatterkit::scatter_nd_update(ref(data, {2}, DType::kFloat32),
                                    iref(idx, {1, 1}, IndexType::kInt64), updates, out.data());
    };
  };
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      call(ref(wide, {1}, DType::kFloat64)),
      "updates dtype float64 does not match data dtype float32"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(call(ref(same_width, {1}, DType::kInt32)),
                                                         "updates dtype int32"));
  // Same tag, other width (e.g. a mis-described opaque type).
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      call(TensorRef{wide.data(), {1}, DType::kFloat32, 8}),
      "item size 8 does not fit dtype float32"));
  EXPECT_EQ(out, (std::vector<float>{0, 0}));
}

TEST(TypeErased, ReductionOnOpaqueIsATypeError) {
  const std::vector<std::complex<float>> data = {{1, 1}, {2, 2}};
  const std::vector<int64_t> idx = {0};
  std::vector<std::complex<float>> out(2);
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      [&] {
        scatterkit::scatter_nd_update(ref(data, {2}, DType::kOpaque),
                                      iref(idx, {1, 1}, IndexType::kInt64),
                                      ref(data, {1}, DType::kOpaque), out.data(), Reduction::kSum,
                                      OpOptions{true, "ScatterNDUpdate-15"});
      },
      "ScatterNDUpdate-15: reduction 'sum' needs an arithmetic element type"));
  EXPECT_EQ(out, (std::vector<std::complex<float>>(2)));
}

// ---- inputs sharing memory with out -------------------------------------------------

TEST(Overlap, UpdatesInsideOutAreReadAsTheyWereBeforeTheCall) {
  // In place, updates = data[0:2]: copy semantics give data[1:3] = old data[0:2].
  std::vector<float> a = {0, 1, 2, 3, 4};
  const std::vector<int64_t> idx = {1, 2};
  scatterkit::scatter_update<float, int64_t>(cview(a, {5}), cview(idx, {2}), {a.data(), {2}}, 0,
                                             mview(a, {5}));
  EXPECT_EQ(a, (std::vector<float>{0, 0, 1, 3, 4}));

  std::vector<float> b = {0, 1, 2, 3, 4};
  const std::vector<int64_t> cells = {1, 2};
  scatterkit::scatter_nd_update<float, int64_t>(cview(b, {5}), cview(cells, {2, 1}),
                                                {b.data(), {2}}, mview(b, {5}));
  EXPECT_EQ(b, (std::vector<float>{0, 0, 1, 3, 4}));

  std::vector<float> c = {0, 1, 2, 3, 4, 5};
  scatterkit::slice_scatter<float>(cview(c, {6}), {c.data() + 1, {5}}, 0, 5, 1, 0, mview(c, {6}));
  EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 5}));
}

TEST(Overlap, IndicesInsideOutAndOutShiftedFromData) {
  // int64 data whose first two elements are also the indices, summed in place.
  std::vector<int64_t> a = {3, 1, 10, 20, 30};
  scatterkit::scatter_elements_update<int64_t, int64_t>(
      cview(a, {5}), {a.data(), {2}}, {a.data() + 2, {2}}, 0, mview(a, {5}), Reduction::kSum);
  EXPECT_EQ(a, (std::vector<int64_t>{3, 21, 10, 30, 30}));

  // out = data + 1 element: the result is the op on data as it was.
  std::vector<float> buf = {0, 1, 2, 3, 4, 5};
  const std::vector<int64_t> idx = {0};
  const std::vector<float> upd = {9};
  scatterkit::scatter_update(TensorRef{buf.data(), {5}, DType::kFloat32, 4},
                             iref(idx, {1}, IndexType::kInt64),
                             TensorRef{upd.data(), {1}, DType::kFloat32, 4}, 0, buf.data() + 1);
  EXPECT_EQ(buf, (std::vector<float>{0, 9, 1, 2, 3, 4}));
}

TEST(Overlap, ByteRanges) {
  char b[8] = {};  // only its addresses matter; initialised so that GCC does not warn
  EXPECT_TRUE(scatterkit::detail::overlaps(b, 4, b + 3, 4));
  EXPECT_FALSE(scatterkit::detail::overlaps(b, 4, b + 4, 4));
  EXPECT_FALSE(scatterkit::detail::overlaps(b, 0, b, 4));
  EXPECT_FALSE(scatterkit::detail::overlaps(nullptr, 4, b, 4));
}

// ---- element and index types by size and signedness ----------------------------------

TEST(Types, EveryIntegerSpellingHasItsTag) {
  static_assert(scatterkit::dtype_of<long long>() == DType::kInt64);
  static_assert(scatterkit::dtype_of<unsigned long long>() == DType::kUInt64);
  static_assert(scatterkit::dtype_of<signed char>() == DType::kInt8);
  static_assert(scatterkit::dtype_of<unsigned char>() == DType::kUInt8);
  static_assert(scatterkit::dtype_of<char>() ==
                (std::is_signed_v<char> ? DType::kInt8 : DType::kUInt8));
  static_assert(scatterkit::index_type_of<unsigned long long>() == IndexType::kUInt64);
  static_assert(scatterkit::index_type_of<long long>() == IndexType::kInt64);
  static_assert(scatterkit::index_type_of<int>() == IndexType::kInt32);

  std::vector<long long> data = {1, 2, 3}, out(3);
  const std::vector<long long> idx = {2, 2}, upd = {10, 20};
  scatterkit::scatter_elements_update<long long, long long>(
      cview(data, {3}), cview(idx, {2}), cview(upd, {2}), 0, mview(out, {3}), Reduction::kSum);
  EXPECT_EQ(out, (std::vector<long long>{1, 2, 33}));

  std::vector<float> f(10), fout(10);
  const std::vector<unsigned long long> huge = {~0ull};
  const std::vector<float> one = {7};
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatterkit::scatter_nd_update<float, unsigned long long>(
            cview(f, {10}), cview(huge, {1, 1}), cview(one, {1}), mview(fout, {10}));
      },
      "index 18446744073709551615 is out of bounds"));
}

TEST(Types, MutableViewsPassAsConstViews) {
  std::vector<float> data = {1, 2, 3}, out(3), upd = {9};
  std::vector<int64_t> idx = {1};
  scatterkit::TensorView<float> d = mview(data, {3}), u = mview(upd, {1});
  scatterkit::TensorView<int64_t> i = mview(idx, {1});
  scatterkit::scatter_update<float, int64_t>(d, i, u, 0, mview(out, {3}));
  EXPECT_EQ(out, (std::vector<float>{1, 9, 3}));
}

TEST(Types, UnknownTagsAndAbsurdItemSizesAreTypeErrorsBeforeAnyWrite) {
  const std::vector<float> data = {0, 1, 2, 3}, upd = {5};
  const std::vector<int64_t> idx = {1};
  std::vector<float> out(4, -99);
  auto call = [&](DType dtype, size_t itemsize, IndexType itype) {
    return [&, dtype, itemsize, itype] {
      scatterkit::scatter_nd_update(
          TensorRef{data.data(), {4}, dtype, itemsize}, IndexRef{idx.data(), {1, 1}, itype},
          TensorRef{upd.data(), {1}, dtype, itemsize}, out.data(), Reduction::kSum);
    };
  };
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      call(DType(42), 4, IndexType::kInt64),
      "scatter_nd_update: data has an unknown dtype tag 42"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      call(DType::kOpaque, ~size_t(0), IndexType::kInt64), "is too large"));
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      call(DType::kFloat32, 4, IndexType(7)), "scatter_nd_update: unknown index type 7"));
  EXPECT_EQ(out, std::vector<float>(4, -99));
}

}  // namespace
}  // namespace test_type_erased
