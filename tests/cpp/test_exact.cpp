// OpOptions::exact: float sums and means as the exact real sum rounded once
// (nearest, ties to even), ScatterND sub as data minus the updates, min/max
// free of order (-0 below +0, any NaN the default quiet NaN); the mergeable
// exact-sum states (exact/state.hpp); prod and none are ValueErrors.
// Results are compared bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_exact {
namespace {

using scatterkit::BatchKind;
using scatterkit::BatchOp;
using scatterkit::bfloat16;
using scatterkit::DType;
using scatterkit::float16;
using scatterkit::IndexRef;
using scatterkit::IndexType;
using scatterkit::OpOptions;
using scatterkit::RaggedRef;
using scatterkit::Reduction;
using scatterkit::TensorRef;
using sktest::cview;
using sktest::make;
using sktest::make_vector;
using sktest::mview;
using sktest::Ragged;
using sktest::same_bits;
using sktest::Shape;

OpOptions exact_options() {
  OpOptions o;
  o.exact = true;
  return o;
}

template <class T>
TensorRef ref(const std::vector<T>& v, Shape shape) {
  return TensorRef{v.data(), std::move(shape), scatterkit::dtype_of<T>(), sizeof(T)};
}

IndexRef iref(const std::vector<int64_t>& v, Shape shape) {
  return IndexRef{v.data(), std::move(shape), IndexType::kInt64};
}

// An element of T with the given bits.
template <class T, class B>
T from_bits(B bits) {
  static_assert(sizeof(T) == sizeof(B), "same width");
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// ScatterElementsUpdate-12 on 1-D data through the typed entry.
template <class T>
std::vector<T> elements(const std::vector<T>& data, const std::vector<int64_t>& idx,
                        const std::vector<T>& upd, Reduction r, bool use_init_val = true,
                        bool exact = true) {
  std::vector<T> out(data.size());
  OpOptions o = exact_options();
  o.exact = exact;
  const int64_t n = int64_t(data.size()), m = int64_t(idx.size());
  scatterkit::scatter_elements_update<T, int64_t>(
      cview(data, {n}), cview(idx, {m}), cview(upd, {m}), 0, mview(out, {n}), r, use_init_val, o);
  return out;
}

// ScatterNDUpdate-15 on 1-D data, one coordinate per update, through the typed entry.
template <class T>
std::vector<T> nd(const std::vector<T>& data, const std::vector<int64_t>& idx,
                  const std::vector<T>& upd, Reduction r) {
  std::vector<T> out(data.size());
  const int64_t n = int64_t(data.size()), m = int64_t(idx.size());
  scatterkit::scatter_nd_update<T, int64_t>(cview(data, {n}), cview(idx, {m, 1}), cview(upd, {m}),
                                            mview(out, {n}), r, exact_options());
  return out;
}

// ---- sums --------------------------------------------------------------------------

TEST(ExactSum, TypedEntryCancelsExactly) {
  const std::vector<float> data = {0.0f, 5.0f};
  const std::vector<int64_t> idx = {0, 0, 0};
  const std::vector<float> upd = {1e30f, 1.0f, -1e30f};
  std::vector<float> out(2);
  scatterkit::scatter_elements_update<float, int64_t>(cview(data, {2}), cview(idx, {3}),
                                                      cview(upd, {3}), 0, mview(out, {2}),
                                                      Reduction::kSum, true, exact_options());
  EXPECT_TRUE(same_bits(out, std::vector<float>{1.0f, 5.0f}));
  // The C-order fold loses the 1 (1e30 + 1 rounds to 1e30).
  EXPECT_TRUE(same_bits(elements(data, idx, upd, Reduction::kSum, true, false),
                        std::vector<float>{0.0f, 5.0f}));
  EXPECT_TRUE(same_bits(elements<double>({0.0}, {0, 0, 0}, {1e300, 1.0, -1e300}, Reduction::kSum),
                        std::vector<double>{1.0}));
  // float16 / bfloat16: the smallest subnormal survives the cancellation of large terms
  const auto h =
      elements(make_vector<float16>({0}), {0, 0, 0},
               {make<float16>(60000), float16{0x0001}, make<float16>(-60000)}, Reduction::kSum);
  EXPECT_EQ(h[0].bits, 0x0001);
  const auto b =
      elements(make_vector<bfloat16>({0}), {0, 0, 0},
               {make<bfloat16>(3e38), bfloat16{0x0001}, make<bfloat16>(-3e38)}, Reduction::kSum);
  EXPECT_EQ(b[0].bits, 0x0001);
}

TEST(ExactSum, HalfwaySumsRoundToEven) {
  const float half_ulp = std::ldexp(1.0f, -24);  // half an ulp of 1
  EXPECT_TRUE(same_bits(elements<float>({1.0f}, {0}, {half_ulp}, Reduction::kSum),
                        std::vector<float>{1.0f}));
  EXPECT_TRUE(same_bits(elements<float>({1.0f}, {0, 0}, {half_ulp, 2 * half_ulp}, Reduction::kSum),
                        std::vector<float>{from_bits<float>(uint32_t(0x3f800002))}));
  EXPECT_TRUE(same_bits(
      elements<float>({1.0f}, {0, 0}, {half_ulp, std::ldexp(1.0f, -100)}, Reduction::kSum),
      std::vector<float>{from_bits<float>(uint32_t(0x3f800001))}));
  // 2**24 + 1 is a tie between 2**24 and 2**24 + 2: to even
  EXPECT_TRUE(same_bits(elements<float>({16777216.0f}, {0}, {1.0f}, Reduction::kSum),
                        std::vector<float>{16777216.0f}));
  EXPECT_TRUE(same_bits(elements<float>({16777216.0f}, {0}, {3.0f}, Reduction::kSum),
                        std::vector<float>{16777220.0f}));
  // means: 2**-150 is a tie between 0 and 2**-149 (to 0); 1.5 units go to 2
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_TRUE(same_bits(elements<float>({7.0f}, {0, 0}, {tiny, 0.0f}, Reduction::kMean, false),
                        std::vector<float>{0.0f}));
  EXPECT_TRUE(same_bits(elements<float>({7.0f}, {0, 0}, {-tiny, 0.0f}, Reduction::kMean, false),
                        std::vector<float>{-0.0f}));
  EXPECT_TRUE(same_bits(elements<float>({7.0f}, {0, 0}, {3 * tiny, 0.0f}, Reduction::kMean, false),
                        std::vector<float>{2 * tiny}));
}

TEST(ExactSum, OverflowInfinitiesAndNaN) {
  const float top = std::numeric_limits<float>::max();
  const float inf = std::numeric_limits<float>::infinity();
  const float half_ulp_top = std::ldexp(1.0f, 103);
  const uint32_t default_nan = 0x7fc00000;
  // a sum past the range that comes back
  EXPECT_TRUE(same_bits(elements<float>({top}, {0, 0}, {top, -top}, Reduction::kSum),
                        std::vector<float>{top}));
  // max + half an ulp is the threshold of overflow
  EXPECT_TRUE(same_bits(elements<float>({top}, {0}, {half_ulp_top}, Reduction::kSum),
                        std::vector<float>{inf}));
  EXPECT_TRUE(same_bits(
      elements<float>({top}, {0, 0}, {half_ulp_top, -std::ldexp(1.0f, -149)}, Reduction::kSum),
      std::vector<float>{top}));
  EXPECT_TRUE(
      same_bits(elements<float>({top}, {0}, {top}, Reduction::kMean), std::vector<float>{top}));
  // +inf with -inf, and NaN payloads: the default NaN
  const float nan_payload = from_bits<float>(uint32_t(0xffc12345));
  const std::vector<std::vector<float>> nan_cases = {{inf, -inf}, {1.0f, nan_payload}};
  for (const auto& upd : nan_cases) {
    for (Reduction r : {Reduction::kSum, Reduction::kMean, Reduction::kMin, Reduction::kMax}) {
      const auto out = elements<float>({2.0f}, {0, 0}, upd, r);
      if (r == Reduction::kMin || r == Reduction::kMax) {
        if (upd[0] == inf) continue;  // min/max of infinities: no NaN
      }
      uint32_t got;
      std::memcpy(&got, &out[0], 4);
      EXPECT_EQ(got, default_nan) << "reduction " << int(r);
    }
  }
  EXPECT_TRUE(same_bits(elements<float>({2.0f}, {0, 0}, {inf, 1.0f}, Reduction::kSum),
                        std::vector<float>{inf}));
}

TEST(ExactSum, TypeErasedEntryEqualsTyped) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> mag(-40, 40);
  std::uniform_int_distribution<int64_t> pick(-6, 5);
  std::vector<double> data(6), upd(200);
  std::vector<int64_t> idx(200);
  for (auto& v : data) v = std::ldexp(1.0 + std::fmod(mag(gen), 1.0), int(mag(gen)));
  for (size_t p = 0; p < upd.size(); ++p) {
    upd[p] = p % 3 == 2 ? -upd[p - 1] : std::ldexp(mag(gen), int(mag(gen)));
    idx[p] = pick(gen);
  }
  for (Reduction r : {Reduction::kSum, Reduction::kMean}) {
    for (bool init : {true, false}) {
      std::vector<double> erased(6);
      scatterkit::scatter_elements_update(ref(data, {6}), iref(idx, {200}), ref(upd, {200}), 0,
                                          erased.data(), r, init, exact_options());
      EXPECT_TRUE(same_bits(erased, elements(data, idx, upd, r, init)));
    }
  }
  // float32 through the tags, against the typed entry: 1e30 + 1 - 1e30
  const std::vector<float> fdata = {0.0f, 0.0f};
  const std::vector<int64_t> fidx = {1, 1, 1};
  const std::vector<float> fupd = {1e30f, 1.0f, -1e30f};
  std::vector<float> fout(2);
  scatterkit::scatter_elements_update(ref(fdata, {2}), iref(fidx, {3}), ref(fupd, {3}), 0,
                                      fout.data(), Reduction::kSum, true, exact_options());
  EXPECT_TRUE(same_bits(fout, std::vector<float>{0.0f, 1.0f}));
}

TEST(ExactSum, ScatterNDSubIsDataMinusTheUpdates) {
  const std::vector<float> data = {1e30f, 2.0f, -0.0f, -0.0f};
  const std::vector<int64_t> idx = {0, 0, 1, 2, 3};
  const std::vector<float> upd = {1e30f, -1.0f, 2.0f, 0.0f, -0.0f};
  // 1e30 - 1e30 + 1 = 1; 2 - 2 = +0; -0 - (+0) = -0; -0 - (-0) = +0
  EXPECT_TRUE(
      same_bits(nd(data, idx, upd, Reduction::kSub), std::vector<float>{1.0f, 0.0f, -0.0f, 0.0f}));
  // type-erased, on a 2-D tensor with k = 1 (rows)
  const std::vector<double> d2 = {1e300, 1.0, 5.0, 6.0};
  const std::vector<int64_t> i2 = {0, 0};
  const std::vector<double> u2 = {1e300, 0.5, -1.0, 0.25};
  std::vector<double> out(4);
  scatterkit::scatter_nd_update(ref(d2, {2, 2}), iref(i2, {2, 1}), ref(u2, {2, 2}), out.data(),
                                Reduction::kSub, exact_options());
  // 1e300 - 1e300 - (-1) = 1; 1 - 0.5 - 0.25 = 0.25
  EXPECT_TRUE(same_bits(out, std::vector<double>{1.0, 0.25, 5.0, 6.0}));
  scatterkit::scatter_nd_update(ref(d2, {2, 2}), iref(i2, {2, 1}), ref(u2, {2, 2}), out.data(),
                                Reduction::kSum, exact_options());
  EXPECT_TRUE(same_bits(out, std::vector<double>{1e300 + 1e300 - 1.0, 1.75, 5.0, 6.0}));
}

TEST(ExactSum, SignedZeros) {
  // -0 only when every term is -0
  EXPECT_TRUE(same_bits(elements<float>({-0.0f}, {0, 0}, {-0.0f, -0.0f}, Reduction::kSum),
                        std::vector<float>{-0.0f}));
  EXPECT_TRUE(
      same_bits(elements<float>({-0.0f}, {0}, {0.0f}, Reduction::kSum), std::vector<float>{0.0f}));
  EXPECT_TRUE(same_bits(elements<float>({-0.0f}, {0, 0}, {1.0f, -1.0f}, Reduction::kSum),
                        std::vector<float>{0.0f}));
  EXPECT_TRUE(same_bits(elements<float>({5.0f}, {0}, {-0.0f}, Reduction::kSum, false),
                        std::vector<float>{-0.0f}));
  EXPECT_TRUE(same_bits(elements<float>({5.0f}, {0, 0}, {-0.0f, -0.0f}, Reduction::kMean, false),
                        std::vector<float>{-0.0f}));
}

// ---- min / max ---------------------------------------------------------------------

TEST(ExactMinMax, SignedZerosInEitherOrder) {
  for (float data : {-0.0f, 0.0f}) {
    for (const std::vector<float>& upd :
         {std::vector<float>{0.0f}, std::vector<float>{-0.0f}, std::vector<float>{0.0f, -0.0f},
          std::vector<float>{-0.0f, 0.0f}}) {
      const std::vector<int64_t> idx(upd.size(), 0);
      const bool mixed = std::signbit(data) != std::signbit(upd[0]) || upd.size() > 1;
      const float want_max = mixed ? 0.0f : data, want_min = mixed ? -0.0f : data;
      EXPECT_TRUE(same_bits(elements<float>({data}, idx, upd, Reduction::kMax),
                            std::vector<float>{want_max}));
      EXPECT_TRUE(same_bits(elements<float>({data}, idx, upd, Reduction::kMin),
                            std::vector<float>{want_min}));
      EXPECT_TRUE(
          same_bits(nd<float>({data}, idx, upd, Reduction::kMax), std::vector<float>{want_max}));
      EXPECT_TRUE(
          same_bits(nd<float>({data}, idx, upd, Reduction::kMin), std::vector<float>{want_min}));
    }
  }
  // use_init_val false: the updates alone
  EXPECT_TRUE(same_bits(elements<double>({7.0}, {0, 0}, {0.0, -0.0}, Reduction::kMax, false),
                        std::vector<double>{0.0}));
  EXPECT_TRUE(same_bits(elements<double>({7.0}, {0, 0}, {-0.0, 0.0}, Reduction::kMax, false),
                        std::vector<double>{0.0}));
  EXPECT_TRUE(same_bits(elements<double>({7.0}, {0, 0}, {0.0, -0.0}, Reduction::kMin, false),
                        std::vector<double>{-0.0}));
  const auto h = elements(make_vector<float16>({0}), {0, 0}, {float16{0x8000}, float16{0x0000}},
                          Reduction::kMax);
  EXPECT_EQ(h[0].bits, 0x0000);
  const auto hm = elements(make_vector<float16>({0}), {0, 0}, {float16{0x0000}, float16{0x8000}},
                           Reduction::kMin);
  EXPECT_EQ(hm[0].bits, 0x8000);
}

TEST(ExactMinMax, AnyNaNIsTheDefaultNaNUntargetedKeepTheirBits) {
  const double payload = from_bits<double>(uint64_t(0xfff8000000012345));
  const double dflt = from_bits<double>(uint64_t(0x7ff8000000000000));
  for (Reduction r : {Reduction::kMin, Reduction::kMax}) {
    // a NaN update, a NaN in targeted data; an untargeted NaN keeps its payload
    EXPECT_TRUE(same_bits(elements<double>({1.0, payload}, {0, 0}, {payload, 2.0}, r),
                          std::vector<double>{dflt, payload}));
    EXPECT_TRUE(
        same_bits(elements<double>({payload, 3.0}, {0}, {2.0}, r), std::vector<double>{dflt, 3.0}));
    EXPECT_TRUE(
        same_bits(nd<double>({payload, 3.0}, {0}, {2.0}, r), std::vector<double>{dflt, 3.0}));
  }
  const auto h = elements(make_vector<float16>({0, 0}), {0}, {float16{0xfe01}}, Reduction::kMax);
  EXPECT_EQ(h[0].bits, 0x7e00);
  const auto b = elements(make_vector<bfloat16>({0, 0}), {0}, {bfloat16{0xffc1}}, Reduction::kMin);
  EXPECT_EQ(b[0].bits, 0x7fc0);
}

// ---- threads -----------------------------------------------------------------------

template <class F>
auto with_threads(int n, F&& fn) {
  scatterkit::set_num_threads(n);
  return fn();
}

TEST(ExactThreads, HistogramSumsAndMeansAreTheSameOnEveryThreadCount) {
  const int64_t bins = 100000, n = 2000000;
  std::mt19937_64 gen(11);
  std::uniform_int_distribution<int64_t> pick(0, bins - 1);
  std::uniform_int_distribution<int> expo(-30, 30);
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> data(static_cast<size_t>(bins), 1.0f), upd(static_cast<size_t>(n));
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    idx[size_t(p)] = pick(gen);
    upd[size_t(p)] = std::ldexp(val(gen), expo(gen));
  }
  for (Reduction r : {Reduction::kSum, Reduction::kMean, Reduction::kMax}) {
    auto run = [&] {
      std::vector<float> out(static_cast<size_t>(bins));
      scatterkit::scatter_elements_update<float, int64_t>(cview(data, {bins}), cview(idx, {n}),
                                                          cview(upd, {n}), 0, mview(out, {bins}), r,
                                                          true, exact_options());
      return out;
    };
    const auto one = with_threads(1, run);
    EXPECT_TRUE(same_bits(with_threads(2, run), one));
    EXPECT_TRUE(same_bits(with_threads(3, run), one));
  }
  scatterkit::set_num_threads(2);
}

// An untargeted element holding a NaN with a payload keeps its bits, also when
// a 1-D histogram splits its updates between threads.
TEST(ExactThreads, MinMaxKeepUntargetedNaNBits) {
  const int64_t bins = 100000, n = 1000000;
  std::mt19937_64 gen(12);
  std::uniform_int_distribution<int64_t> pick(1, bins - 1);  // never element 0
  std::vector<float> data(static_cast<size_t>(bins), 1.0f), upd(static_cast<size_t>(n), 2.0f);
  data[0] = from_bits<float>(uint32_t(0x7fc00001));
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (auto& i : idx) i = pick(gen);
  for (Reduction r : {Reduction::kMin, Reduction::kMax}) {
    for (int threads : {1, 2}) {
      std::vector<float> out(static_cast<size_t>(bins));
      scatterkit::set_num_threads(threads);
      scatterkit::scatter_elements_update<float, int64_t>(cview(data, {bins}), cview(idx, {n}),
                                                          cview(upd, {n}), 0, mview(out, {bins}), r,
                                                          true, exact_options());
      uint32_t got;
      std::memcpy(&got, &out[0], 4);
      EXPECT_EQ(got, 0x7fc00001u) << "threads " << threads << ", reduction "
                                  << scatterkit::reduction_name(r) << ": got 0x" << std::hex << got;
    }
  }
  scatterkit::set_num_threads(2);
}

// Few updates into many elements fold into a table over the targeted elements only: the
// same bits as the call on those elements alone (a table over every element), on every
// thread count; untargeted elements, a NaN with a payload among them, keep data's bits; a
// bad index leaves out untouched.
TEST(ExactThreads, FewUpdatesIntoManyElementsEqualTheTargetedElementsAlone) {
  const int64_t n = 40000;
  std::mt19937_64 gen(13);
  std::uniform_int_distribution<int> expo(-30, 30);
  std::normal_distribution<float> val(0.0f, 1.0f);
  std::vector<float> upd(static_cast<size_t>(n));
  for (auto& u : upd) u = std::ldexp(val(gen), expo(gen));
  upd[7] = std::numeric_limits<float>::infinity();
  for (int64_t size : {int64_t(150000), int64_t(1000000)}) {  // both compact (past 3 per update)
    std::vector<float> data(static_cast<size_t>(size));
    for (auto& d : data) d = std::ldexp(val(gen), expo(gen));
    std::uniform_int_distribution<int64_t> pick(-size, size - 1);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (auto& i : idx) i = pick(gen);
    // the targeted elements, in order, and the indices renumbered to them
    std::vector<int64_t> kept;
    for (int64_t i : idx) kept.push_back(i < 0 ? i + size : i);
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    std::vector<char> targeted(static_cast<size_t>(size), 0);
    for (int64_t x : kept) targeted[size_t(x)] = 1;
    for (int64_t x = 0; x < size; ++x)
      if (!targeted[size_t(x)]) {
        data[size_t(x)] = from_bits<float>(uint32_t(0x7fc00001));  // one untargeted NaN
        break;
      }
    std::vector<int64_t> renumbered(idx.size());
    for (size_t p = 0; p < idx.size(); ++p)
      renumbered[p] =
          std::lower_bound(kept.begin(), kept.end(), idx[p] < 0 ? idx[p] + size : idx[p]) -
          kept.begin();
    std::vector<float> small_data(kept.size());
    for (size_t r = 0; r < kept.size(); ++r) small_data[r] = data[size_t(kept[r])];
    for (Reduction r : {Reduction::kSum, Reduction::kMean}) {
      for (bool init : {true, false}) {
        const auto want =
            with_threads(1, [&] { return elements(small_data, renumbered, upd, r, init); });
        for (int threads : {1, 2}) {
          const auto got = with_threads(threads, [&] { return elements(data, idx, upd, r, init); });
          std::vector<float> got_targeted(kept.size());
          for (size_t k = 0; k < kept.size(); ++k) got_targeted[k] = got[size_t(kept[k])];
          EXPECT_TRUE(same_bits(got_targeted, want))
              << "size " << size << ", threads " << threads << ", init " << init;
          bool untargeted_kept = true;
          for (int64_t x = 0; x < size; ++x)
            if (!targeted[size_t(x)] && std::memcmp(&got[size_t(x)], &data[size_t(x)], 4) != 0)
              untargeted_kept = false;
          EXPECT_TRUE(untargeted_kept) << "size " << size << ", threads " << threads;
        }
      }
    }
    // a bad index: out untouched (out of place and in place)
    std::vector<int64_t> bad = idx;
    bad[size_t(n / 2)] = size;
    for (Reduction r : {Reduction::kSum, Reduction::kMean}) {
      for (bool in_place : {false, true}) {
        std::vector<float> out(static_cast<size_t>(size), 3.0f);
        const std::vector<float> before = out;
        const float* src = in_place ? out.data() : data.data();
        EXPECT_THROW((scatterkit::scatter_elements_update<float, int64_t>(
                         scatterkit::TensorView<const float>{src, {size}}, cview(bad, {n}),
                         cview(upd, {n}), 0, mview(out, {size}), r, true, exact_options())),
                     scatterkit::IndexError);
        EXPECT_TRUE(same_bits(out, before)) << "size " << size << ", in place " << in_place;
      }
    }
  }
  scatterkit::set_num_threads(2);
}

// ---- run_batch -----------------------------------------------------------------------

TEST(ExactBatch, RowsEqualDirectCalls) {
  Ragged<float> data, updates;
  Ragged<int64_t> indices;
  data.add({0, 5}, {2}).add({1, 2, 3}, {3}).add({-0.0f}, {1});
  indices.add({0, 0, 0}, {3}).add({2, -1, 0, 0}, {4}).add({0}, {1});
  updates.add({1e30f, 1, -1e30f}, {3}).add({1e-30f, 1, 1e30f, -1e30f}, {4}).add({-0.0f}, {1});
  BatchOp op;
  op.kind = BatchKind::kScatterElementsUpdate;
  op.dtype = DType::kFloat32;
  op.reduction = Reduction::kSum;
  op.options.exact = true;
  const RaggedRef idx = indices.ref();
  std::vector<float> out(data.values.size());
  auto errors = scatterkit::run_batch(op, 3, data.ref(), &idx, updates.ref(), out.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", "", ""}));
  EXPECT_TRUE(same_bits(data.row(out, 0), std::vector<float>{1.0f, 5.0f}));
  EXPECT_TRUE(same_bits(data.row(out, 1), std::vector<float>{1.0f, 2.0f, 4.0f}));
  EXPECT_TRUE(same_bits(data.row(out, 2), std::vector<float>{-0.0f}));
  for (int64_t r = 0; r < 3; ++r)
    EXPECT_TRUE(same_bits(data.row(out, r),
                          elements(data.row(data.values, r), indices.row(indices.values, r),
                                   updates.row(updates.values, r), Reduction::kSum)));
  // ScatterND sub, each row against a direct call
  op.kind = BatchKind::kScatterNDUpdate;
  op.reduction = Reduction::kSub;
  Ragged<int64_t> nd_indices;
  nd_indices.add({0, 0, 0}, {3, 1}).add({2, -1, 0, 0}, {4, 1}).add({0}, {1, 1});
  const RaggedRef nidx = nd_indices.ref();
  errors = scatterkit::run_batch(op, 3, data.ref(), &nidx, updates.ref(), out.data());
  ASSERT_EQ(errors, (std::vector<std::string>{"", "", ""}));
  EXPECT_TRUE(same_bits(data.row(out, 0), std::vector<float>{-1.0f, 5.0f}));
  for (int64_t r = 0; r < 3; ++r)
    EXPECT_TRUE(
        same_bits(data.row(out, r), nd(data.row(data.values, r), indices.row(indices.values, r),
                                       updates.row(updates.values, r), Reduction::kSub)));
  // prod is no exact reduction: every row reports it and keeps its data
  op.kind = BatchKind::kScatterElementsUpdate;
  op.reduction = Reduction::kProd;
  std::fill(out.begin(), out.end(), 9.0f);
  errors = scatterkit::run_batch(op, 3, data.ref(), &idx, updates.ref(), out.data());
  for (const auto& e : errors) EXPECT_NE(e.find("ValueError: "), std::string::npos) << e;
  for (const auto& e : errors)
    EXPECT_NE(e.find("exact=True is not defined for reduction 'prod'"), std::string::npos) << e;
  EXPECT_TRUE(same_bits(out, data.values));
}

// ---- states ------------------------------------------------------------------------

template <class T>
void check_states_in_two_parts() {
  constexpr DType dt = scatterkit::dtype_of<T>();
  const int words = scatterkit::exact_state_words(dt);
  EXPECT_EQ(words, (std::is_same_v<T, double> ? 36 : 8));
  const int64_t n = 3;
  const auto data = make_vector<T>({1, -0.0, 4});
  const std::vector<int64_t> idx_a = {0, 0, -3}, idx_b = {0, 2};
  const double big = std::is_same_v<T, double> ? 1e300 : std::is_same_v<T, float> ? 1e30 : 1e4;
  const auto upd_a = make_vector<T>({big, 0.5, 0.25});
  const auto upd_b = make_vector<T>({-big, -0.0});
  const size_t total = static_cast<size_t>(n * words);
  std::vector<uint64_t> init(total), a(total), b(total);
  scatterkit::exact_state_init(dt, data.data(), n, init.data());
  scatterkit::exact_state_fold(dt, a.data(), {n}, iref(idx_a, {3, 1}), ref(upd_a, {3}));
  scatterkit::exact_state_fold(dt, b.data(), {n}, iref(idx_b, {2, 1}), ref(upd_b, {2}));
  // (init + a) + b and init + (b + a): the same words
  std::vector<uint64_t> left = init, right = b;
  scatterkit::exact_state_merge(dt, left.data(), a.data(), n);
  scatterkit::exact_state_merge(dt, left.data(), b.data(), n);
  scatterkit::exact_state_merge(dt, right.data(), a.data(), n);
  std::vector<uint64_t> both = init;
  scatterkit::exact_state_merge(dt, both.data(), right.data(), n);
  EXPECT_EQ(left, both);
  // finish: the one-shot exact ScatterND sum
  std::vector<T> sum(static_cast<size_t>(n));
  scatterkit::exact_state_finish(dt, left.data(), n, false, sum.data());
  std::vector<int64_t> all_idx = idx_a;
  all_idx.insert(all_idx.end(), idx_b.begin(), idx_b.end());
  std::vector<T> all_upd = upd_a;
  all_upd.insert(all_upd.end(), upd_b.begin(), upd_b.end());
  const std::vector<T> want = nd(data, all_idx, all_upd, Reduction::kSum);
  EXPECT_TRUE(same_bits(sum, want));
  // 1 + big + 0.5 + 0.25 - big = 1.75 (index -3 is 0); -0 alone; 4 + -0 = 4
  EXPECT_TRUE(same_bits(sum, make_vector<T>({1.75, -0.0, 4})));
  // mean: the one-shot exact ScatterElements mean (data counted)
  std::vector<T> mean(static_cast<size_t>(n));
  scatterkit::exact_state_finish(dt, left.data(), n, true, mean.data());
  EXPECT_TRUE(same_bits(mean, elements(data, all_idx, all_upd, Reduction::kMean)));
  // a state with no terms leaves out as it is
  std::vector<uint64_t> empty(total);
  std::vector<T> kept = make_vector<T>({7, 8, 9});
  scatterkit::exact_state_finish(dt, empty.data(), n, false, kept.data());
  EXPECT_TRUE(same_bits(kept, make_vector<T>({7, 8, 9})));
  // a bad index is reported before the state changes
  const std::vector<int64_t> bad = {0, 3};
  const std::vector<uint64_t> before = a;
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] { scatterkit::exact_state_fold(dt, a.data(), {n}, iref(bad, {2, 1}), ref(upd_b, {2})); },
      "out of bounds"));
  EXPECT_EQ(a, before);
}

TEST(ExactState, FoldInTwoPartsMergeBothOrdersFinish) {
  check_states_in_two_parts<float>();
  check_states_in_two_parts<double>();
  check_states_in_two_parts<float16>();
  check_states_in_two_parts<bfloat16>();
}

TEST(ExactState, ErrorsAreTyped) {
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      [] { scatterkit::exact_state_words(DType::kInt32); }, "exact sums are for"));
  std::vector<uint64_t> st(8);
  st[7] = uint64_t(1) << 40;  // a flag no state has
  std::vector<uint64_t> other(8);
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [&] { scatterkit::exact_state_merge(DType::kFloat32, other.data(), st.data(), 1); },
      "not an exact-sum state"));
  const std::vector<double> upd = {1.0};
  const std::vector<int64_t> idx = {0};
  std::vector<uint64_t> good(8);
  EXPECT_TRUE(sktest::throws_with<scatterkit::TypeError>(
      [&] {
        scatterkit::exact_state_fold(DType::kFloat32, good.data(), {1}, iref(idx, {1, 1}),
                                     ref(upd, {1}));
      },
      "does not match"));
}

// ---- errors ------------------------------------------------------------------------

template <class T>
void check_prod_and_none_refused() {
  const auto data = make_vector<T>({1, 2, 3});
  const std::vector<int64_t> idx = {0, 1};
  const auto upd = make_vector<T>({4, 5});
  for (Reduction r : {Reduction::kProd, Reduction::kNone}) {
    const std::string what = std::string("exact=True is not defined for reduction '") +
                             (r == Reduction::kProd ? "prod" : "none") + "'";
    std::vector<T> out = make_vector<T>({9, 9, 9});
    EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
        [&] {
          scatterkit::scatter_elements_update<T, int64_t>(cview(data, {3}), cview(idx, {2}),
                                                          cview(upd, {2}), 0, mview(out, {3}), r,
                                                          true, exact_options());
        },
        what));
    EXPECT_TRUE(same_bits(out, make_vector<T>({9, 9, 9})));
    EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
        [&] {
          scatterkit::scatter_nd_update(ref(data, {3}), iref(idx, {2, 1}), ref(upd, {2}),
                                        out.data(), r, exact_options());
        },
        what));
    EXPECT_TRUE(same_bits(out, make_vector<T>({9, 9, 9})));
  }
}

TEST(ExactErrors, ProdAndNoneOnFloatsAreValueErrors) {
  check_prod_and_none_refused<float>();
  check_prod_and_none_refused<double>();
  check_prod_and_none_refused<float16>();
  check_prod_and_none_refused<bfloat16>();
}

// Data with no elements: an index along its empty axis is an IndexError (not a
// crash in the exact kernels' sizing), and no updates give an empty result.
TEST(ExactErrors, EmptyDataIsAnIndexErrorNotACrash) {
  const std::vector<float> none;
  const std::vector<int64_t> idx = {0, 0};
  const std::vector<float> upd = {1.0f, 2.0f};
  std::vector<float> out;
  for (Reduction r : {Reduction::kSum, Reduction::kMean, Reduction::kMax}) {
    EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
        [&] {
          scatterkit::scatter_elements_update(ref(none, {0}), iref(idx, {2}), ref(upd, {2}), 0,
                                              out.data(), r, true, exact_options());
        },
        "out of bounds"));
    EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
        [&] {
          scatterkit::scatter_elements_update(ref(none, {3, 0}), iref(idx, {1, 2}),
                                              ref(upd, {1, 2}), 1, out.data(), r, false,
                                              exact_options());
        },
        "out of bounds"));
  }
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [&] {
        scatterkit::scatter_nd_update(ref(none, {0}), iref(idx, {2, 1}), ref(upd, {2}), out.data(),
                                      Reduction::kSum, exact_options());
      },
      "out of bounds"));
  const std::vector<int64_t> no_idx;
  scatterkit::scatter_elements_update(ref(none, {2, 0}), iref(no_idx, {2, 0}), ref(none, {2, 0}), 0,
                                      out.data(), Reduction::kSum, true, exact_options());
}

TEST(ExactErrors, IntegerDataIsUnchanged) {
  const std::vector<int32_t> data = {2, 3, 4, 6};
  const std::vector<int64_t> idx = {1, 0, 0, -2, -1, 2};
  const std::vector<int32_t> upd = {10, 20, 30, 40, 70, 60};
  for (Reduction r : {Reduction::kNone, Reduction::kSum, Reduction::kProd, Reduction::kMin,
                      Reduction::kMax, Reduction::kMean})
    for (bool init : {true, false})
      EXPECT_EQ(elements(data, idx, upd, r, init, true), elements(data, idx, upd, r, init, false))
          << int(r);
}

}  // namespace
}  // namespace test_exact
