// The kernels' scratch memory (scratch.hpp): the last array freed is kept for the next one it
// fits, within the limit set_scratch_cache sets.
#include <cstdint>
#include <thread>
#include <vector>

#include "scatterkit/scratch.hpp"
#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_scratch {
namespace {

using scatterkit::detail::kDefaultScratchCacheBytes;
using scatterkit::detail::kScratchGrain;
using scatterkit::detail::ScratchArray;

// Each test starts with nothing kept and the default limit, and leaves it so.
class ScratchCache : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    scatterkit::set_scratch_cache(0);
    scatterkit::set_scratch_cache(kDefaultScratchCacheBytes);
  }
};

TEST_F(ScratchCache, AFreedArrayServesTheNextThatFits) {
  const void* first = nullptr;
  {
    const ScratchArray<int64_t> a(1000);
    first = a.get();
    EXPECT_EQ(scatterkit::scratch_cache_bytes(), 0u);  // taken, not kept, while alive
  }
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), kScratchGrain);
  {
    const ScratchArray<int32_t> smaller(10);
    EXPECT_EQ(smaller.get(), first);
    EXPECT_EQ(scatterkit::scratch_cache_bytes(), 0u);
  }
  const ScratchArray<char> larger(kScratchGrain + 1);  // does not fit: a fresh block
  EXPECT_NE(larger.get(), first);
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), kScratchGrain);  // the first stays kept
}

TEST_F(ScratchCache, KeepsOnlyTheLastFreedArray) {
  {
    const ScratchArray<char> a(kScratchGrain), b(3 * kScratchGrain);
  }  // b freed first, then a: a's block replaces b's
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), kScratchGrain);
}

TEST_F(ScratchCache, KeepsNothingPastTheLimit) {
  scatterkit::set_scratch_cache(kScratchGrain);
  {
    const ScratchArray<char> a(2 * kScratchGrain);
  }
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), 0u);
  {
    const ScratchArray<char> a(kScratchGrain);
  }
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), kScratchGrain);
  scatterkit::set_scratch_cache(0);  // frees what is kept
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), 0u);
  {
    const ScratchArray<char> a(1);
  }
  EXPECT_EQ(scatterkit::scratch_cache_bytes(), 0u);
}

TEST_F(ScratchCache, ThreadsTakeAndGiveSafely) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        const ScratchArray<int64_t> a(int64_t(1 + (t + i) % 3) << 18);
        a.get()[0] = i;  // the memory is this array's alone while it lives
        EXPECT_EQ(a.get()[0], i);
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_LE(scatterkit::scratch_cache_bytes(), 3 * kScratchGrain);
}

}  // namespace
}  // namespace test_scratch
