// One program, two translation units: one compiled with OpenMP, one without. Each must
// run the kernels it was compiled with (config.hpp): without the per-setting namespace
// the linker keeps one copy of every inline function for both, and one of the two
// thread counts below comes out wrong. The two units are built at -O0 so that every
// call goes through the linker's choice instead of being inlined.
#include <gtest/gtest.h>

#include "kernels.hpp"

namespace {

TEST(MixedOpenMP, EachTranslationUnitKeepsItsThreadPolicy) {
  EXPECT_EQ(mixed_openmp::threads_with_openmp(2), 2);
  EXPECT_EQ(mixed_openmp::threads_without_openmp(2), 1);
  // Asked in the other order, in case the first call decided something.
  EXPECT_EQ(mixed_openmp::threads_without_openmp(3), 1);
  EXPECT_EQ(mixed_openmp::threads_with_openmp(3), 3);
}

TEST(MixedOpenMP, BothCopiesOfAKernelGiveTheSameResult) {
  const int64_t rows = 512;  // 2 MiB: past the threshold where threads start
  mixed_openmp::threads_with_openmp(2);
  const std::vector<float> threaded = mixed_openmp::scatter_rows_with_openmp(rows);
  const std::vector<float> serial = mixed_openmp::scatter_rows_without_openmp(rows);
  ASSERT_EQ(threaded, serial);
  EXPECT_EQ(threaded.front(), -1.0f);
  EXPECT_EQ(threaded[1024], 1.0f);
  EXPECT_EQ(threaded.back(), -1.0f);
}

}  // namespace
