// Exact sums and means for ScatterElementsUpdate and ScatterNDUpdate
// (exact=True): every target's terms are summed without rounding and the sum
// (or the mean) is rounded once, so the bits do not depend on the order of the
// updates, on how they are grouped, or on the thread count.
//
// Fast path: a double per target. Every term of a float16, bfloat16, float32
// or float64 tensor is a double, and a double sum of them stays exact as long
// as it fits 53 bits: each addition is checked (TwoSum's error term is zero).
// A target whose addition is not exact, or that meets an infinity or NaN,
// moves for good to an exact state (exact.hpp), and its slot holds a NaN
// naming that state. Since no ordering is needed, threads may split one
// target's updates: each folds a part of every line into a table of its own,
// and the tables are summed exactly at the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "scatterkit/config.hpp"
#include "scatterkit/exact.hpp"

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Double slots with exact states for the targets that left the fast path.
template <class T>
class ExactSlots {
 public:
  using L = ExactLayout<T>;

  // slot += b, exactly. Never rounds: a slot whose sum stops being exact moves.
  SCATTERKIT_ALWAYS_INLINE void add(double* slot, double b) {
    const double a = *slot;
    const double s = a + b;
    const double bv = s - a;
    const double err = (a - (s - bv)) + (b - bv);  // TwoSum: s + err == a + b
    if (__builtin_expect(err == 0, 1))
      *slot = s;
    else
      spill(slot, b);  // inexact, an infinity or NaN, or a slot that already moved
  }

  // The exact state a slot moved to, or null if it holds its sum.
  const uint64_t* state(double slot) const {
    return slot == slot ? nullptr : &states_[state_number(slot) * L::kWords];
  }

 private:
  static constexpr uint64_t kTag =
      0x7ff8000000000000;  // a quiet NaN; the payload numbers the state
  static size_t state_number(double slot) {
    uint64_t b;
    std::memcpy(&b, &slot, sizeof b);
    return size_t(b & ~kTag);
  }

#if defined(__GNUC__)
  __attribute__((noinline))
#endif
  void spill(double* slot, double b) {
    const double a = *slot;
    size_t n;
    if (a != a) {
      n = state_number(a);
    } else {
      n = states_.size() / L::kWords;
      states_.resize(states_.size() + L::kWords, 0);
      add_value<T>(&states_[n * L::kWords], a);
      const uint64_t tagged = kTag | uint64_t(n);
      std::memcpy(slot, &tagged, sizeof tagged);
    }
    add_value<T>(&states_[n * L::kWords], b);
  }

  std::vector<uint64_t> states_;
};

// The exact sum of a target's parts (slots of several tables), rounded once,
// or divided by `count` first (mean).
template <class T>
T finish_parts(const ExactSlots<T>* slots, const double* const* tables, int64_t parts, int64_t x,
               bool mean, uint64_t count) {
  using L = ExactLayout<T>;
  double sum = tables[0][x];
  bool fast = slots[0].state(sum) == nullptr;
  for (int64_t k = 1; k < parts && fast; ++k) {
    const double b = tables[k][x];
    const double s = sum + b, bv = s - sum;
    fast = (sum - (s - bv)) + (b - bv) == 0;  // also false for a moved slot (NaN)
    sum = s;
  }
  if (fast) return mean ? round_double_mean<T>(sum, count) : round_double<T>(sum);
  uint64_t state[L::kWords] = {};
  for (int64_t k = 0; k < parts; ++k) {
    const double v = tables[k][x];
    if (const uint64_t* moved = slots[k].state(v))
      merge_state<T>(state, moved);
    else
      add_value<T>(state, v);
  }
  return finish_state<T>(state, mean, count);
}

// A target's exact sum from a run of terms: the fast path of one slot.
template <class T>
struct ExactRun {
  ExactSlots<T> slots;
  double sum = -0.0;
  void add(double v) { slots.add(&sum, v); }
  T finish(bool mean, uint64_t count) const {
    const double* tables[1] = {&sum};
    return finish_parts<T>(&slots, tables, 1, 0, mean, count);
  }
};

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
