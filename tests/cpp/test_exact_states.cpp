// The exact states' fast paths (exact/state_merge.hpp), bit for bit against the word-by-word
// operations of exact/superaccumulator.hpp: the merge that checks the flag words as it goes
// (in 512-bit registers where the processor has them) and undoes itself on a bad one.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

// Named so that local names stay apart in the unity build (see CMakeLists.txt).
namespace test_exact_states {
namespace {

using scatterkit::bfloat16;
using scatterkit::DType;
using scatterkit::float16;

// n states of random words whose sums carry: whole words of ones (a carry passes through them),
// words of zeros and random ones; counts near 2^64; flags any valid set.
template <class T>
std::vector<uint64_t> carrying_states(int64_t n, std::mt19937_64& gen) {
  using L = scatterkit::ExactLayout<T>;
  std::vector<uint64_t> s(size_t(n * L::kWords));
  for (int64_t x = 0; x < n; ++x) {
    uint64_t* w = &s[size_t(x * L::kWords)];
    for (int i = 0; i < L::kSumWords; ++i) {
      const uint64_t r = gen();
      w[i] = r % 4 == 0 ? ~uint64_t(0) : r % 4 == 1 ? 0 : r % 4 == 2 ? uint64_t(1) : gen();
    }
    w[L::kCount] = gen() % 2 ? gen() : ~uint64_t(0) - gen() % 4;
    w[L::kFlags] = gen() % (scatterkit::kExactAllFlags + 1);
  }
  return s;
}

// into[x] += other[x], a word at a time (superaccumulator.hpp's merge_state).
template <class T>
std::vector<uint64_t> merged_word_by_word(std::vector<uint64_t> into,
                                          const std::vector<uint64_t>& other) {
  using L = scatterkit::ExactLayout<T>;
  for (size_t x = 0; x < into.size() / L::kWords; ++x)
    scatterkit::detail::merge_state<T>(&into[x * L::kWords], &other[x * L::kWords]);
  return into;
}

// The merge equals the word-by-word one on 1 and 2 threads, through the stack's buffer of saved
// flags and the heap's; a bad flag word in either, anywhere, is a ValueError naming its element
// (into's first), and `into` is left as it was.
template <class T>
void check_merge() {
  constexpr DType dt = scatterkit::dtype_of<T>();
  using L = scatterkit::ExactLayout<T>;
  std::mt19937_64 gen(71);
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(384), int64_t(5000), int64_t(70000)}) {
    const std::vector<uint64_t> a = carrying_states<T>(n, gen), b = carrying_states<T>(n, gen);
    const std::vector<uint64_t> want = merged_word_by_word<T>(a, b);
    for (int threads : {1, 2}) {
      scatterkit::set_num_threads(threads);
      std::vector<uint64_t> got = a;
      scatterkit::exact_state_merge(dt, got.data(), b.data(), n);
      EXPECT_EQ(got, want) << "n " << n << ", threads " << threads;
      // a state merged into itself doubles
      std::vector<uint64_t> self = a;
      scatterkit::exact_state_merge(dt, self.data(), self.data(), n);
      EXPECT_EQ(self, merged_word_by_word<T>(a, a)) << "self, n " << n;
      for (int64_t at : {int64_t(0), n / 2, n - 1})
        for (bool in_into : {true, false})
          for (uint64_t flag : {uint64_t(16), uint64_t(1) << 63}) {
            std::vector<uint64_t> into = a, other = b;
            std::vector<uint64_t>& spoilt = in_into ? into : other;
            spoilt[size_t(at * L::kWords + L::kFlags)] |= flag;
            if (!in_into && at > 0)  // into's own bad state, later, is named first
              into[size_t((n - 1) * L::kWords + L::kFlags)] |= 32;
            const std::vector<uint64_t> before = into;
            const int64_t named = !in_into && at > 0 ? n - 1 : at;
            EXPECT_TRUE(sktest::throws_with<scatterkit::ValueError>(
                [&] { scatterkit::exact_state_merge(dt, into.data(), other.data(), n); },
                "element " + std::to_string(named) + " is not an exact-sum state"))
                << "n " << n << ", at " << at << ", into " << in_into;
            EXPECT_EQ(into, before) << "n " << n << ", at " << at << ", into " << in_into;
          }
    }
  }
  scatterkit::set_num_threads(2);
}

TEST(ExactStateMerge, EqualsWordByWordAndUndoesOnABadFlag) {
  check_merge<float>();
  check_merge<double>();
  check_merge<float16>();
  check_merge<bfloat16>();
}

// The scalar merge and the 512-bit one agree on any words (flags bad or not), saved flags too.
TEST(ExactStateMerge, ScalarAndWideAgree) {
  namespace sd = scatterkit::detail;
  std::mt19937_64 gen(72);
  const int64_t n = 3000;
  std::vector<uint64_t> a = carrying_states<float>(n, gen), b = carrying_states<float>(n, gen);
  for (int64_t x = 0; x < n; x += 37) (x % 2 ? a : b)[size_t(x * 8 + 7)] |= gen() << 4;
  std::vector<uint64_t> scalar = a, wide = a;
  std::vector<uint8_t> saved_scalar(n), saved_wide(n);
  const bool bad =
      sd::merge_states_checked<float>(scalar.data(), b.data(), saved_scalar.data(), 0, n);
  const bool bad_wide =
      sd::merge_states_checked_on<float>(wide.data(), b.data(), saved_wide.data(), 0, n);
  EXPECT_TRUE(bad);
  EXPECT_EQ(bad_wide, bad);
  EXPECT_EQ(wide, scalar);
  EXPECT_EQ(saved_wide, saved_scalar);
  sd::unmerge_states<float>(wide.data(), b.data(), saved_wide.data(), n);
  EXPECT_EQ(wide, a);
}

}  // namespace
}  // namespace test_exact_states
