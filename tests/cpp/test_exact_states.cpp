// The exact states' fast paths, bit for bit against the word-by-word operations of
// exact/superaccumulator.hpp: the merge that checks the flag words as it goes (in 512-bit
// registers where the processor has them) and undoes itself on a bad one (exact/state_merge.hpp),
// and the fold of many float terms into a small tensor through bounded double slots, which move
// into exact states when their bound would break (exact/bounded_slots.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exact_reference.hpp"
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

// ---- the fold through bounded slots ---------------------------------------------------

// Terms of a kind, each kind aimed at a path of the bounded slots:
// 0 log-normal amounts (bench_events'): the unit lowers now and then, the bound holds;
// 1 magnitudes 2^0 to 2^20 in every step: the bound breaks every few steps (the slots move, or
//   a step waits term by term for enough terms to pay for a move);
// 2 narrow, then too wide for any slot (2^-60 to 2^60), then narrow again;
// 3 log-normal with specials: zeros of both signs, infinities, NaN, subnormals, the largest floats;
// 4 zeros of both signs only (some elements get only -0);
// 5 subnormals, and the smallest normals beside them;
// 6 cancellations: each term and its negation, large and small, in any order;
// 7 positive terms near 2^20 and a few near 1, their lowest bits 2^-3 and 2^-23: sums that soon
//   pass 2^53 of the smallest unit, which the bound must catch (a double would round them).
std::vector<float> bounded_terms(int64_t n, int kind, std::mt19937_64& gen) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<float> v(static_cast<size_t>(n));
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nanf(""),
                            std::ldexp(1.0f, -149),
                            -std::ldexp(3.0f, -140),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max()};
  auto mantissa = [&] { return float(int32_t(gen() >> 40) | 1); };  // 24 bits, odd
  for (int64_t p = 0; p < n; ++p) {
    float& x = v[size_t(p)];
    const float sign = gen() % 2 ? -1.0f : 1.0f;
    switch (kind) {
      case 0: x = float(std::exp(3.0 + normal(gen))); break;
      case 1: x = sign * std::ldexp(mantissa(), int(gen() % 21) - 23); break;
      case 7: x = std::ldexp(mantissa(), gen() % 64 == 0 ? -23 : -3); break;
      case 2:
        x = p < n / 3 || p >= 2 * n / 3 ? sign * std::ldexp(mantissa(), -23)
                                        : sign * std::ldexp(mantissa(), int(gen() % 121) - 83);
        break;
      case 3: x = gen() % 10 == 0 ? specials[gen() % 9] : float(std::exp(3.0 + normal(gen))); break;
      case 4: x = gen() % 3 == 0 ? 0.0f : -0.0f; break;
      case 5:
        x = sign * (gen() % 2 ? std::ldexp(float(gen() % (1u << 23)), -149)
                              : std::ldexp(mantissa(), -149));
        break;
      default: {
        const float big = std::ldexp(mantissa(), int(gen() % 30) - 10);
        x = p % 2 ? -v[size_t(p - 1)] : (gen() % 2 ? big : std::ldexp(mantissa(), -40));
      }
    }
  }
  if (kind == 6) std::shuffle(v.begin(), v.end(), gen);
  return v;
}

template <class T>
std::vector<T> as_type(const std::vector<float>& v) {
  std::vector<T> out;
  for (float x : v) out.push_back(sktest::make<T>(x));
  return out;
}

// exact_state_fold through the bounded slots equals the fold one by one: every kind of terms, one
// element to the most the slots take, steps whole and not, empty states and states holding terms,
// int64 and int32 indices (negative ones too), 1-3 threads; a bad index anywhere leaves the
// states as they were.
template <class T>
void check_bounded_fold() {
  constexpr DType dt = scatterkit::dtype_of<T>();
  using L = scatterkit::ExactLayout<T>;
  std::mt19937_64 gen(73);
  for (int64_t cells :
       {int64_t(1), int64_t(7), int64_t(384), scatterkit::detail::kBoundedSlotsMaxElements})
    for (int64_t n : {cells, 2 * cells + 61, int64_t(150000)})
      for (int kind = 0; kind <= 7; ++kind) {
        const std::vector<T> upd = as_type<T>(bounded_terms(n, kind, gen));
        std::uniform_int_distribution<int64_t> pick(-cells, cells - 1);
        std::vector<int64_t> idx(static_cast<size_t>(n)), flat(idx.size());
        for (size_t p = 0; p < idx.size(); ++p) {
          idx[p] = pick(gen);
          flat[p] = idx[p] < 0 ? idx[p] + cells : idx[p];
        }
        const std::vector<int32_t> idx32(idx.begin(), idx.end());
        const std::string what = "cells " + std::to_string(cells) + ", n " + std::to_string(n) +
                                 ", kind " + std::to_string(kind);
        std::vector<uint64_t> start(size_t(cells * L::kWords), 0);
        const std::vector<T> init = as_type<T>(bounded_terms(cells, kind, gen));
        for (bool empty : {true, false}) {
          if (!empty) scatterkit::exact_state_init(dt, init.data(), cells, start.data());
          std::vector<uint64_t> want = start;
          sktest::fold_term_by_term(want, flat, upd);
          for (int threads : {1, 2, 3}) {
            scatterkit::set_num_threads(threads);
            std::vector<uint64_t> got = start, got32 = start;
            scatterkit::exact_state_fold(
                dt, got.data(), {cells},
                scatterkit::IndexRef{idx.data(), {n, 1}, scatterkit::IndexType::kInt64},
                scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)});
            EXPECT_EQ(got, want) << what << ", empty " << empty << ", threads " << threads;
            scatterkit::exact_state_fold(
                dt, got32.data(), {cells},
                scatterkit::IndexRef{idx32.data(), {n, 1}, scatterkit::IndexType::kInt32},
                scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)});
            EXPECT_EQ(got32, want)
                << "int32, " << what << ", empty " << empty << ", threads " << threads;
          }
        }
        for (int64_t at : {int64_t(0), n / 2, n - 1}) {
          std::vector<int64_t> bad = idx;
          bad[size_t(at)] = at % 2 ? cells : -cells - 1;
          std::vector<uint64_t> kept = start;
          EXPECT_THROW(scatterkit::exact_state_fold(
                           dt, kept.data(), {cells},
                           scatterkit::IndexRef{bad.data(), {n, 1}, scatterkit::IndexType::kInt64},
                           scatterkit::TensorRef{upd.data(), {n}, dt, sizeof(T)}),
                       scatterkit::IndexError)
              << what << ", bad at " << at;
          EXPECT_EQ(kept, start) << what << ", bad at " << at;
        }
      }
  scatterkit::set_num_threads(2);
}

TEST(ExactBoundedSlots, FoldEqualsOneByOne) {
  check_bounded_fold<float>();
  check_bounded_fold<float16>();
  check_bounded_fold<bfloat16>();
}

// The slots themselves: a few thousand log-normal amounts stay in the slots (no state is ever
// needed), terms that break the bound move into states, and both give the words of the fold one
// by one.
TEST(ExactBoundedSlots, TheBoundHoldsOrTheSlotsMove) {
  namespace sd = scatterkit::detail;
  using L = scatterkit::ExactLayout<float>;
  std::mt19937_64 gen(74);
  const int64_t cells = 384;
  for (int kind : {0, 7}) {
    const int64_t n = kind == 0 ? 4000 : 200000;
    const std::vector<float> upd = bounded_terms(n, kind, gen);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (auto& a : idx) a = int64_t(gen() % (kind == 0 ? cells : 3));  // kind 7: sums pass 2^53
    sd::BoundedSlots<float> slots(cells);
    ASSERT_TRUE(sd::fold_bounded(slots, idx.data(), upd.data(), n, sd::IndexRange{0, cells}));
    EXPECT_EQ(slots.states.empty(), kind == 0) << "kind " << kind;
    std::vector<uint64_t> got(size_t(cells * L::kWords), 0), want = got;
    slots.add_to(got.data());
    sktest::fold_term_by_term(want, idx, upd);
    EXPECT_EQ(got, want) << "kind " << kind;
  }
}
}  // namespace
}  // namespace test_exact_states
