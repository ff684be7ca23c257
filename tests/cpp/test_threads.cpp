// Threading: the thread-count setting, the work-sharing helper, and every op
// giving bitwise identical results with 1 and 2 threads on inputs of several
// MB (above the threading threshold), equal to the plain C-order fold.
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "test_support.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_threads {
namespace {

using scatterkit::float16;
using scatterkit::Reduction;
using sktest::cview;
using sktest::mview;
using sktest::same_bits;
using sktest::Shape;

#ifdef _OPENMP
constexpr bool kOpenMP = true;
#else
constexpr bool kOpenMP = false;
#endif

// Runs fn() with n threads and returns what it produced.
template <class F>
auto with_threads(int n, F&& fn) {
  scatterkit::set_num_threads(n);
  return fn();
}

// The library would use 2 threads for work touching `bytes` bytes.
void expect_threaded(int64_t bytes) {
  if (!kOpenMP) return;
  scatterkit::set_num_threads(2);
  EXPECT_EQ(scatterkit::detail::threads_for(int64_t(1) << 20, bytes), 2)
      << bytes << " bytes is below the threading threshold";
}

// ---- settings and the work-sharing helper -------------------------------------------

// Needs a process in which set_num_threads was not called yet: ctest runs
// every test in its own process; a whole-binary run skips it.
TEST(NumThreads, DefaultIsOpenMPs) {
  if (scatterkit::detail::thread_state().num_threads.load() != 0)
    GTEST_SKIP() << "set_num_threads was already called in this process";
#ifdef _OPENMP
  EXPECT_EQ(
      scatterkit::get_num_threads(),
      std::min(omp_get_max_threads(), scatterkit::kMaxThreadsPerProcessor * omp_get_num_procs()));
#else
  EXPECT_EQ(scatterkit::get_num_threads(), 1);
#endif
}

TEST(NumThreads, SetThenGet) {
  scatterkit::set_num_threads(3);
  EXPECT_EQ(scatterkit::get_num_threads(), kOpenMP ? 3 : 1);
  scatterkit::set_num_threads(1);
  EXPECT_EQ(scatterkit::get_num_threads(), 1);
}

TEST(NumThreads, CappedPerProcessor) {
  scatterkit::set_num_threads(1 << 30);
#ifdef _OPENMP
  const int cap = scatterkit::kMaxThreadsPerProcessor * omp_get_num_procs();
  EXPECT_EQ(scatterkit::get_num_threads(), cap);
  // A team for a huge range of work stays within the cap too.
  EXPECT_EQ(scatterkit::detail::threads_for(int64_t(1) << 40, int64_t(1) << 50), cap);
#else
  EXPECT_EQ(scatterkit::get_num_threads(), 1);
#endif
  scatterkit::set_num_threads(1);
}

TEST(ParallelFor, CoversTheRangeOnceOnSeveralThreads) {
  scatterkit::set_num_threads(2);
  const int64_t n = 1000;
  std::vector<int> hits(n, 0), thread_of(n, -1);
  scatterkit::detail::parallel_for(n, int64_t(1) << 30, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      ++hits[size_t(i)];
#ifdef _OPENMP
      thread_of[size_t(i)] = omp_get_thread_num();
#endif
    }
  });
  EXPECT_EQ(hits, std::vector<int>(n, 1));
  const std::set<int> threads(thread_of.begin(), thread_of.end());
  EXPECT_EQ(threads.size(), kOpenMP ? 2u : 1u);
}

// ScatterElements' line blocks: every line of every outer position exactly
// once, a block never exceeds its width and spans several outer positions
// only whole ones (short lines), and thread ranges may start in the middle of
// an outer position (3 outer x 1100 lines).
TEST(LineBlocks, TileEveryLineOnceWithinOuterAndWidth) {
  struct Case {
    scatterkit::Shape data, indices;
  };
  // long lines; short lines (blocks of several outer positions); inner > 1
  for (const Case& c : {Case{{3, 40, 1100}, {3, 7, 1100}}, Case{{3000, 16}, {3000, 4}},
                        Case{{500, 8, 3}, {500, 2, 3}}}) {
    const scatterkit::detail::ElementsLayout layout =
        scatterkit::detail::make_elements_layout(c.data, c.indices, 1);
    for (int threads = 1; threads <= 4; ++threads) {
      for (const int64_t width : {int64_t(1), int64_t(13), scatterkit::detail::kWideBlockLines}) {
        scatterkit::set_num_threads(threads);
        std::vector<std::atomic<int>> hits(size_t(layout.outer * layout.inner));
        std::atomic<bool> bad_block{false};
        scatterkit::detail::for_each_line_block(
            layout, int64_t(1) << 30, width, [&](const scatterkit::detail::LineBlock& blk) {
              const bool whole = blk.i0 == 0 && blk.i1 == layout.inner;
              if (blk.o0 < 0 || blk.o1 > layout.outer || blk.o1 - blk.o0 < 1 ||
                  (blk.o1 - blk.o0 > 1 && !whole) || blk.i0 < 0 || blk.i1 > layout.inner ||
                  blk.i1 - blk.i0 < 1 || blk.i1 - blk.i0 > width || blk.j0 != 0 ||
                  blk.j1 != layout.along)
                bad_block = true;
              for (int64_t o = blk.o0; o < blk.o1; ++o)
                for (int64_t i = blk.i0; i < blk.i1; ++i) ++hits[size_t(o * layout.inner + i)];
            });
        EXPECT_FALSE(bad_block) << threads << " threads, width " << width;
        for (size_t line = 0; line < hits.size(); ++line)
          ASSERT_EQ(hits[line].load(), 1) << "line " << line << ", " << threads << " threads";
      }
    }
  }
}

// CopyFirst fills out from data piece by piece: each block finds its outer
// positions' pieces copied already, and in the end every element is copied.
TEST(LineBlocks, CopyFirstCopiesEachPieceBeforeItsBlock) {
  const scatterkit::Shape data_shape{20000, 5};
  const scatterkit::detail::ElementsLayout layout =
      scatterkit::detail::make_elements_layout(data_shape, {20000, 3}, 1);
  ASSERT_TRUE(scatterkit::detail::copy_in_pieces_pays(layout, sizeof(int32_t)));
  std::vector<int32_t> data(100000);
  for (size_t k = 0; k < data.size(); ++k) data[k] = int32_t(k) + 1;
  for (int threads = 1; threads <= 2; ++threads) {
    scatterkit::set_num_threads(threads);
    std::vector<int32_t> out(data.size(), 0);
    std::atomic<bool> early{false};
    scatterkit::detail::for_each_line_block(
        layout, int64_t(1) << 30, scatterkit::detail::kWideBlockLines,
        [&](const scatterkit::detail::LineBlock& blk) {
          for (int64_t k = blk.o0 * layout.piece(); k < blk.o1 * layout.piece(); ++k)
            if (out[size_t(k)] != data[size_t(k)]) early = true;
        },
        {reinterpret_cast<char*>(out.data()), reinterpret_cast<const char*>(data.data()),
         sizeof(int32_t)});
    EXPECT_FALSE(early) << threads << " threads";
    EXPECT_EQ(out, data) << threads << " threads";
  }
}

TEST(ParallelFor, SmallWorkRunsOnTheCallingThread) {
  scatterkit::set_num_threads(2);
  int calls = 0;
  scatterkit::detail::parallel_for(1000, 1000, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1000);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ParallelFor, RethrowsAnExceptionFromInsideTheRegion) {
  scatterkit::set_num_threads(2);
  // Only the block holding the last item throws (the second thread's).
  EXPECT_TRUE(sktest::throws_with<scatterkit::IndexError>(
      [] {
        scatterkit::detail::parallel_for(100, int64_t(1) << 30, [](int64_t, int64_t e) {
          if (e == 100) throw scatterkit::IndexError("from the last block");
        });
      },
      "from the last block"));
  // Every block throws: exactly one exception comes out.
  EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
      [] {
        scatterkit::detail::parallel_for(100, int64_t(1) << 30, [](int64_t, int64_t) {
          throw scatterkit::ValueError("every block");
        });
      },
      "every block"));
}

// ---- every op: 1 thread == 2 threads == the plain C-order fold --------------------------

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1000, 1000);
  std::vector<float> v(n);
  for (auto& x : v) x = value(rng);
  return v;
}

template <class I>
std::vector<I> random_indices(size_t n, int64_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<I> v(n);
  for (auto& x : v) x = I(rng() % uint64_t(size));
  return v;
}

TEST(ThreadEquality, ScatterUpdateRowsAndColumns) {
  // data (256, 4096) float = 4 MiB; 300 row indices (duplicates) on axis 0,
  // 600 column indices on axis 1.
  const Shape dshape = {256, 4096};
  const auto data = random_floats(256 * 4096, 1);
  expect_threaded(int64_t(data.size()) * 4 * 2);
  for (int64_t axis : {0, 1}) {
    const int64_t n = axis == 0 ? 300 : 600;
    const auto idx = random_indices<int64_t>(size_t(n), dshape[size_t(axis)], 2);
    const Shape ushape = axis == 0 ? Shape{n, 4096} : Shape{256, n};
    const auto upd = random_floats(size_t(sktest::count_of(ushape)), 3);
    auto run = [&] {
      std::vector<float> out(data.size());
      scatterkit::scatter_update<float, int64_t>(cview(data, dshape), cview(idx, {n}),
                                                 cview(upd, ushape), axis, mview(out, dshape));
      return out;
    };
    auto run_in_place = [&] {
      std::vector<float> inout = data;
      scatterkit::scatter_update<float, int64_t>(cview(inout, dshape), cview(idx, {n}),
                                                 cview(upd, ushape), axis, mview(inout, dshape));
      return inout;
    };
    std::vector<float> expected = data;
    sktest::ref_scatter_update(expected, dshape, idx, upd, axis);
    const auto one = with_threads(1, run), two = with_threads(2, run);
    EXPECT_TRUE(same_bits(one, expected)) << "axis " << axis;
    EXPECT_TRUE(same_bits(two, one)) << "axis " << axis;
    EXPECT_TRUE(same_bits(with_threads(2, run_in_place), one)) << "in place, axis " << axis;
  }
}

TEST(ThreadEquality, ScatterElementsFloatSumHeavyDuplicates) {
  // data (64, 8192) float; 2M updates along axis 0 into only 4 rows: every
  // target receives ~512 float additions, whose order decides the bits.
  const int64_t rows = 64, cols = 8192, along = 256;
  const auto data = random_floats(size_t(rows * cols), 4);
  const auto upd = random_floats(size_t(along * cols), 5);
  const auto idx = random_indices<int32_t>(size_t(along * cols), 4, 6);
  expect_threaded(int64_t(upd.size()) * (4 + 4 + 4));
  for (Reduction r : {Reduction::kSum, Reduction::kNone, Reduction::kMax}) {
    auto run = [&] {
      std::vector<float> out(data.size());
      scatterkit::scatter_elements_update<float, int32_t>(
          cview(data, {rows, cols}), cview(idx, {along, cols}), cview(upd, {along, cols}), 0,
          mview(out, {rows, cols}), r);
      return out;
    };
    std::vector<float> expected = data;
    for (int64_t j = 0; j < along; ++j)
      for (int64_t i = 0; i < cols; ++i) {
        float& dst = expected[size_t(idx[size_t(j * cols + i)] * cols + i)];
        const float u = upd[size_t(j * cols + i)];
        dst = r == Reduction::kSum ? dst + u : r == Reduction::kNone ? u : std::max(dst, u);
      }
    const auto one = with_threads(1, run), two = with_threads(2, run);
    EXPECT_TRUE(same_bits(one, expected)) << scatterkit::reduction_name(r);
    EXPECT_TRUE(same_bits(two, one)) << scatterkit::reduction_name(r);
  }
}

// A histogram (fewer lines than threads) splits each line between threads,
// each folding into a table of its own, for the reductions that merge exactly.
// Updates are drawn from `values`, plus NaNs with two payloads at a rate of
// 1 in nan_every (0: none), sparse enough that many bins meet their first NaN
// in a later part. Equal values with other bits (NaN payloads, -0 and +0)
// show whether the merge kept the first of equals, as the C-order fold does.
template <class T, class Op>
void expect_split_histogram_exact(const std::vector<T>& values, int64_t lines,
                                  unsigned nan_every = 0) {
  const int64_t bins = 1000, along = 200000;
  std::vector<T> data(size_t(lines * bins)), upd(size_t(lines * along));
  for (size_t i = 0; i < data.size(); ++i) data[i] = values[i % values.size()];
  std::mt19937 rng(9);
  for (auto& u : upd) u = values[rng() % values.size()];
  if constexpr (std::is_floating_point_v<T>)
    for (size_t k = 0; k < upd.size(); ++k)
      if (nan_every > 0 && rng() % nan_every == 0)
        upd[k] = k % 2 ? std::nanf("1") : -std::nanf("2");
  const auto idx = random_indices<int64_t>(upd.size(), bins, 10);
  const Reduction r = std::is_same_v<Op, scatterkit::detail::MaxOp<T>>   ? Reduction::kMax
                      : std::is_same_v<Op, scatterkit::detail::MinOp<T>> ? Reduction::kMin
                      : std::is_same_v<Op, scatterkit::detail::SumOp<T>> ? Reduction::kSum
                                                                         : Reduction::kProd;
  // discard: folding straight into `out` (a buffer the caller drops on an
  // error) must give the bits of folding into a scratch copy.
  bool discard = false;
  auto run = [&] {
    std::vector<T> out(data.size());
    scatterkit::OpOptions options;
    options.discard_out_on_error = discard;
    scatterkit::scatter_elements_update<T, int64_t>(
        cview(data, {lines, bins}), cview(idx, {lines, along}), cview(upd, {lines, along}), 1,
        mview(out, {lines, bins}), r, true, options);
    return out;
  };
  std::vector<T> expected = data;
  sktest::ref_scatter_elements(expected, {lines, bins}, idx, {lines, along}, upd, 1,
                               [](T& acc, T u) { acc = Op::combine(acc, u); });
  const auto layout = scatterkit::detail::make_elements_layout({lines, bins}, {lines, along}, 1);
  for (int threads : {1, 2, 3}) {
    scatterkit::set_num_threads(threads);
    const int64_t parts = scatterkit::detail::line_parts(
        layout, bins * lines * int64_t(sizeof(T)), int64_t(idx.size()) * 8,
        int64_t(idx.size()) * (64 + 8 + int64_t(sizeof(T))));
    if (kOpenMP) {
      EXPECT_EQ(parts, threads > lines ? threads : 1) << threads << " threads";
    }
    for (bool discard_out : {false, true}) {
      discard = discard_out;
      EXPECT_TRUE(same_bits(run(), expected))
          << scatterkit::reduction_name(r) << ", " << lines << " line(s), " << threads
          << " threads, NaN rate 1/" << nan_every << ", discard_out_on_error " << discard;
    }
  }
}

TEST(ThreadEquality, HistogramSplitBetweenThreadsMergesExactly) {
  using namespace scatterkit::detail;
  // The extreme is a zero: -0 or +0, whichever a bin meets first.
  const std::vector<float> max_ties = {0.0f, -0.0f, -1.0f, -3.0f, -0.0f, 0.0f};
  const std::vector<float> min_ties = {0.0f, -0.0f, 1.0f, 3.0f, -0.0f, 0.0f};
  for (int64_t lines : {1, 2})
    for (unsigned nan_every : {0u, 500u}) {
      expect_split_histogram_exact<float, MaxOp<float>>(max_ties, lines, nan_every);
      expect_split_histogram_exact<float, MinOp<float>>(min_ties, lines, nan_every);
    }
  const std::vector<double> spread = {-1e300, 2.5, 1e300, -0.0, 0.0};
  expect_split_histogram_exact<double, MaxOp<double>>(spread, 1, 300);
  const std::vector<int32_t> ints = {-3, 1, 2, 7, -1, 1000003, 1 << 30, -5};
  expect_split_histogram_exact<int32_t, SumOp<int32_t>>(ints, 1);  // wraps around
  expect_split_histogram_exact<int32_t, ProdOp<int32_t>>(ints, 1);
  expect_split_histogram_exact<int32_t, MaxOp<int32_t>>(ints, 2);
  const std::vector<uint8_t> bytes = {0, 1, 3, 255, 128};
  expect_split_histogram_exact<uint8_t, SumOp<uint8_t>>(bytes, 1);
}

TEST(ThreadEquality, ScatterElementsHalfMeanAndInt64Prod) {
  // Side-table reductions (float16 mean) and in-place folds (int64 prod) on
  // axis 1 with many lines.
  const int64_t rows = 512, cols = 512, along = 1024;
  std::vector<float16> hdata(static_cast<size_t>(rows * cols)),
      hupd(static_cast<size_t>(rows * along));
  const auto f = random_floats(hdata.size() + hupd.size(), 7);
  for (size_t i = 0; i < hdata.size(); ++i) hdata[i] = scatterkit::to_float16(f[i] / 100);
  for (size_t i = 0; i < hupd.size(); ++i)
    hupd[i] = scatterkit::to_float16(f[hdata.size() + i] / 100);
  const auto idx = random_indices<int64_t>(size_t(rows * along), cols, 8);
  expect_threaded(int64_t(idx.size()) * (2 + 2 + 8));
  for (bool init : {true, false}) {
    auto run = [&] {
      std::vector<float16> out(hdata.size());
      scatterkit::scatter_elements_update<float16, int64_t>(
          cview(hdata, {rows, cols}), cview(idx, {rows, along}), cview(hupd, {rows, along}), 1,
          mview(out, {rows, cols}), Reduction::kMean, init);
      return out;
    };
    const auto one = with_threads(1, run), two = with_threads(2, run);
    EXPECT_TRUE(same_bits(two, one)) << "float16 mean, init " << init;
  }
  std::vector<int64_t> idata(static_cast<size_t>(rows * cols)),
      iupd(static_cast<size_t>(rows * along));
  for (size_t i = 0; i < idata.size(); ++i) idata[i] = int64_t(i % 7) - 3;
  for (size_t i = 0; i < iupd.size(); ++i) iupd[i] = int64_t(i % 11) - 5;
  auto run = [&] {
    std::vector<int64_t> out(idata.size());
    scatterkit::scatter_elements_update<int64_t, int64_t>(
        cview(idata, {rows, cols}), cview(idx, {rows, along}), cview(iupd, {rows, along}), 1,
        mview(out, {rows, cols}), Reduction::kProd, true);
    return out;
  };
  EXPECT_TRUE(same_bits(with_threads(2, run), with_threads(1, run)));
}

TEST(ThreadEquality, ScatterNdFloatSumHeavyDuplicates) {
  // data (1024, 512) float = 2 MiB; 4096 slab updates (8 MiB) into 16 slabs,
  // then into all 1024 slabs.
  const int64_t rows = 1024, cols = 512, tuples = 4096;
  const auto data = random_floats(size_t(rows * cols), 9);
  const auto upd = random_floats(size_t(tuples * cols), 10);
  expect_threaded(tuples * cols * 4 * 2);
  for (int64_t targets : {16, 1024}) {
    const auto idx = random_indices<int64_t>(size_t(tuples), targets, 11);
    for (Reduction r : {Reduction::kSum, Reduction::kNone, Reduction::kSub}) {
      auto run = [&] {
        std::vector<float> out(data.size());
        scatterkit::scatter_nd_update<float, int64_t>(
            cview(data, {rows, cols}), cview(idx, {tuples, 1}), cview(upd, {tuples, cols}),
            mview(out, {rows, cols}), r);
        return out;
      };
      std::vector<float> expected = data;
      sktest::ref_scatter_nd(expected, {rows, cols}, idx, 1, upd, [r](float& d, float u) {
        d = r == Reduction::kSum ? d + u : r == Reduction::kSub ? d - u : u;
      });
      const auto one = with_threads(1, run), two = with_threads(2, run);
      EXPECT_TRUE(same_bits(one, expected)) << targets << ' ' << scatterkit::reduction_name(r);
      EXPECT_TRUE(same_bits(two, one)) << targets << ' ' << scatterkit::reduction_name(r);
    }
  }
}

TEST(ThreadEquality, ScatterNdHalfSumAndElementTuples) {
  // float16 sums through the float32 side accumulator, and k = rank tuples.
  const int64_t rows = 256, cols = 4096, tuples = 1024;
  std::vector<float16> data(static_cast<size_t>(rows * cols)),
      upd(static_cast<size_t>(tuples * cols));
  const auto f = random_floats(data.size() + upd.size(), 12);
  for (size_t i = 0; i < data.size(); ++i) data[i] = scatterkit::to_float16(f[i] / 10);
  for (size_t i = 0; i < upd.size(); ++i) upd[i] = scatterkit::to_float16(f[data.size() + i] / 10);
  const auto idx = random_indices<int32_t>(size_t(tuples), 8, 13);
  auto run = [&] {
    std::vector<float16> out(data.size());
    scatterkit::scatter_nd_update<float16, int32_t>(
        cview(data, {rows, cols}), cview(idx, {tuples, 1}), cview(upd, {tuples, cols}),
        mview(out, {rows, cols}), Reduction::kSum);
    return out;
  };
  EXPECT_TRUE(same_bits(with_threads(2, run), with_threads(1, run)));

  // 1M single-element updates into a (1024, 1024) float tensor.
  const int64_t n = 1 << 20;
  const auto fdata = random_floats(1 << 20, 14);
  const auto fupd = random_floats(size_t(n), 15);
  const auto coords = random_indices<int64_t>(size_t(2 * n), 1024, 16);
  auto run_elements = [&] {
    std::vector<float> out(fdata.size());
    scatterkit::scatter_nd_update<float, int64_t>(cview(fdata, {1024, 1024}), cview(coords, {n, 2}),
                                                  cview(fupd, {n}), mview(out, {1024, 1024}),
                                                  Reduction::kSum);
    return out;
  };
  std::vector<float> expected = fdata;
  sktest::ref_scatter_nd(expected, {1024, 1024}, coords, 2, fupd,
                         [](float& d, float u) { d += u; });
  const auto one = with_threads(1, run_elements);
  EXPECT_TRUE(same_bits(one, expected));
  EXPECT_TRUE(same_bits(with_threads(2, run_elements), one));
}

TEST(ThreadEquality, SliceScatterStrided) {
  // data (2048, 1024) float = 8 MiB; every other column, and rows backwards.
  const Shape dshape = {2048, 1024};
  const auto data = random_floats(2048 * 1024, 17);
  const auto upd = random_floats(2048 * 512, 18);
  expect_threaded(int64_t(upd.size()) * 4 * 2);
  for (int64_t axis : {1, 0}) {
    const Shape ushape = axis == 1 ? Shape{2048, 512} : Shape{1024, 1024};
    auto run = [&] {
      std::vector<float> out(data.size());
      if (axis == 1)
        scatterkit::slice_scatter<float>(cview(data, dshape), cview(upd, ushape), 1, 1024, 2, 1,
                                         mview(out, dshape));
      else
        scatterkit::slice_scatter<float>(cview(data, dshape), cview(upd, ushape), -1, -2049, -2, 0,
                                         mview(out, dshape));
      return out;
    };
    std::vector<float> expected = data;
    for (int64_t r = 0; r < ushape[0]; ++r)
      for (int64_t c = 0; c < ushape[1]; ++c) {
        const int64_t dr = axis == 1 ? r : 2047 - 2 * r, dc = axis == 1 ? 1 + 2 * c : c;
        expected[size_t(dr * 1024 + dc)] = upd[size_t(r * ushape[1] + c)];
      }
    const auto one = with_threads(1, run), two = with_threads(2, run);
    EXPECT_TRUE(same_bits(one, expected)) << "axis " << axis;
    EXPECT_TRUE(same_bits(two, one)) << "axis " << axis;
  }
}

// ---- fork: a child of a process whose OpenMP pool ran must not hang ---------------------

TEST(Fork, ChildRunsSeriallyAfterThePoolStarted) {
  if (!kOpenMP) GTEST_SKIP() << "built without OpenMP";
  const int64_t rows = 1024, cols = 512, tuples = 2048;
  const auto data = random_floats(size_t(rows * cols), 19);
  const auto upd = random_floats(size_t(tuples * cols), 20);
  const auto idx = random_indices<int64_t>(size_t(tuples), rows, 21);
  auto run = [&] {
    std::vector<float> out(data.size());
    scatterkit::scatter_nd_update<float, int64_t>(
        cview(data, {rows, cols}), cview(idx, {tuples, 1}), cview(upd, {tuples, cols}),
        mview(out, {rows, cols}), Reduction::kSum);
    return out;
  };
  const auto parent = with_threads(2, run);
  ASSERT_TRUE(scatterkit::detail::thread_state().pool_started.load());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(60);  // a hang becomes SIGALRM instead of a stuck test
    const bool serial = scatterkit::get_num_threads() == 1;
    const auto child = run();
    const bool same = std::memcmp(child.data(), parent.data(), child.size() * sizeof(float)) == 0;
    _exit(serial && same ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "child saw more than one thread or another result";
  EXPECT_EQ(scatterkit::get_num_threads(), 2) << "the parent keeps its setting";
}

}  // namespace
}  // namespace test_threads
