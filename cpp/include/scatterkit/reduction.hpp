// Reduction functors: how one update folds into a target.
//
// Each functor over storage type T has
//   Acc                      the accumulator type,
//   identity()               the start value when use_init_val is false,
//   load(T) / store(Acc, n)  conversion in and out (store finalises: mean
//                            divides by the count n, halves round once),
//   combine(Acc, T)          one update folded in.
// Integer sum/sub/prod wrap: they are computed in unsigned arithmetic, so
// there is no signed-overflow UB. float16/bfloat16 accumulate in float32.
// min/max propagate NaN from either operand, keeping the first NaN (and the
// first of equal values, -0 and +0).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "scatterkit/dtype.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/float_format.hpp"
#include "scatterkit/half.hpp"

namespace scatterkit {

enum class Reduction { kNone, kSum, kSub, kProd, kMin, kMax, kMean };

inline const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::kNone: return "none";
    case Reduction::kSum: return "sum";
    case Reduction::kSub: return "sub";
    case Reduction::kProd: return "prod";
    case Reduction::kMin: return "min";
    case Reduction::kMax: return "max";
    case Reduction::kMean: return "mean";
  }
  return "?";
}

inline Reduction reduction_from_name(const std::string& name) {
  for (int i = 0; i <= int(Reduction::kMean); ++i)
    if (name == reduction_name(Reduction(i))) return Reduction(i);
  throw ValueError("unknown reduction '" + name +
                   "' (expected one of none, sum, sub, prod, min, max, mean)");
}

namespace detail {

template <class T>
constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <class T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Arithmetic type of a storage type: float for the 16-bit floats, else itself.
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
inline compute_t<T> to_compute(T v) {
  if constexpr (is_half_v<T>)
    return to_float(v);
  else
    return v;
}

template <class T>
inline T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, float16>)
    return to_float16(v);
  else if constexpr (std::is_same_v<T, bfloat16>)
    return to_bfloat16(v);
  else
    return v;
}

// Unsigned type at least as wide as unsigned int: wrapping arithmetic without
// promotion back to signed int.
template <class T>
using wrap_t =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Shared load/store for reductions whose accumulator is the compute type.
template <class T>
struct PlainAccess {
  using Acc = compute_t<T>;
  static Acc load(T v) { return to_compute(v); }
  static T store(Acc a, int64_t) { return from_compute<T>(a); }
};

template <class T>
struct SumOp : PlainAccess<T> {
  using Acc = compute_t<T>;
  static Acc identity() { return Acc(0); }
  static Acc combine(Acc a, T u) {
    if constexpr (std::is_same_v<T, bool>)
      return a || u;
    else if constexpr (is_int_v<T>)
      return T(wrap_t<T>(a) + wrap_t<T>(u));
    else
      return a + to_compute(u);
  }
};

template <class T>
struct SubOp : PlainAccess<T> {
  using Acc = compute_t<T>;
  static Acc identity() { return Acc(0); }
  static Acc combine(Acc a, T u) {
    if constexpr (std::is_same_v<T, bool>)
      return a != u;
    else if constexpr (is_int_v<T>)
      return T(wrap_t<T>(a) - wrap_t<T>(u));
    else
      return a - to_compute(u);
  }
};

template <class T>
struct ProdOp : PlainAccess<T> {
  using Acc = compute_t<T>;
  static Acc identity() { return Acc(1); }
  static Acc combine(Acc a, T u) {
    if constexpr (std::is_same_v<T, bool>)
      return a && u;
    else if constexpr (is_int_v<T>)
      return T(wrap_t<T>(a) * wrap_t<T>(u));
    else
      return a * to_compute(u);
  }
};

template <class T>
struct MinOp : PlainAccess<T> {
  using Acc = compute_t<T>;
  static Acc identity() {
    if constexpr (std::is_same_v<T, bool>)
      return true;
    else if constexpr (is_int_v<T>)
      return std::numeric_limits<T>::max();
    else
      return std::numeric_limits<Acc>::infinity();
  }
  static Acc combine(Acc a, T u) {
    const Acc v = to_compute(u);
    if constexpr (!is_int_v<T> && !std::is_same_v<T, bool>)
      if (__builtin_expect(v != v, 0)) return a != a ? a : v;  // see MaxOp::combine
    return v < a ? v : a;
  }
};

template <class T>
struct MaxOp : PlainAccess<T> {
  using Acc = compute_t<T>;
  static Acc identity() {
    if constexpr (std::is_same_v<T, bool>)
      return false;
    else if constexpr (is_int_v<T>)
      return std::numeric_limits<T>::lowest();
    else
      return -std::numeric_limits<Acc>::infinity();
  }
  // A NaN target loses every comparison, so the select keeps it; only a NaN
  // update needs a test. That test reads the update alone, not the target, so
  // it does not wait on the target's cache miss (8% faster on a histogram).
  static Acc combine(Acc a, T u) {
    const Acc v = to_compute(u);
    if constexpr (!is_int_v<T> && !std::is_same_v<T, bool>)
      if (__builtin_expect(v != v, 0)) return a != a ? a : v;
    return v > a ? v : a;
  }
};

// GCC's and Clang's 128-bit integers; __extension__ keeps -Wpedantic quiet about them.
__extension__ typedef __int128 int128_t;
__extension__ typedef unsigned __int128 uint128_t;

// Exact integer mean: the sum is held wide enough never to overflow.
template <class T>
using mean_acc_t = std::conditional_t<
    !is_int_v<T>, compute_t<T>,
    std::conditional_t<(sizeof(T) < 8), int64_t,
                       std::conditional_t<std::is_signed_v<T>, int128_t, uint128_t>>>;

template <class T>
struct MeanOp {
  static_assert(!std::is_same_v<T, bool>, "mean is not defined for bool");
  using Acc = mean_acc_t<T>;
  static Acc identity() { return Acc(0); }
  static Acc load(T v) { return Acc(to_compute(v)); }
  static Acc combine(Acc a, T u) { return a + Acc(to_compute(u)); }
  static T store(Acc a, int64_t n) {
    if constexpr (is_int_v<T>) {
      const Acc d = Acc(n);
      Acc q = a / d;
      if constexpr (std::is_signed_v<T>)
        if (q * d != a && a < 0) --q;  // floor, toward -inf
      return T(q);
    } else {
      return from_compute<T>(a / Acc(n));
    }
  }
};

// Whether the fold can run directly on the output elements: the accumulator
// is the storage type and finalising is the identity.
template <class Op, class T>
constexpr bool folds_in_place_v =
    std::is_same_v<typename Op::Acc, T> && !std::is_same_v<Op, MeanOp<T>>;

template <class Op, class T>
constexpr bool is_min_max_v = std::is_same_v<Op, MinOp<T>> || std::is_same_v<Op, MaxOp<T>>;

// Whether the fold may also run on the output elements by rounding to T after
// every update: min and max of float16/bfloat16 pick one of their operands,
// which T holds exactly (a NaN is quieted once, as a single final rounding does).
template <class Op, class T>
constexpr bool folds_through_storage_v =
    folds_in_place_v<Op, T> || (is_half_v<T> && is_min_max_v<Op, T>);

// c ? a : b keeping the chosen value's exact bits (a NaN's payload, say), in
// integer operations: GCC does not vectorize a float select under its default
// -ftrapping-math, and may compile a select to a branch on the data.
template <class T>
T select_exact(bool c, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t,
                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  static_assert(sizeof(T) == sizeof(Bits), "a 2-, 4- or 8-byte type");
  Bits x, y;
  std::memcpy(&x, &a, sizeof(T));
  std::memcpy(&y, &b, sizeof(T));
  const Bits mask = Bits(Bits(0) - Bits(c));
  const Bits r = Bits((x & mask) | (y & ~mask));
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

// Bits of a 16-bit float format: the exponent field (an infinity's magnitude)
// and the bit that makes a NaN quiet.
template <class T>
struct HalfFormat;
template <>
struct HalfFormat<float16> {
  static constexpr uint16_t kInf = 0x7c00, kQuiet = 0x0200;
};
template <>
struct HalfFormat<bfloat16> {
  static constexpr uint16_t kInf = 0x7f80, kQuiet = 0x0040;
};

// min/max of two 16-bit floats on their bits: what Op::store(Op::combine(
// Op::load(a), u), 1) gives (the winner's bits, a NaN quieted), without the
// conversions to float32 and back, which are not instructions on a baseline
// x86-64 build: a 10M-update float16 max histogram 1.25-1.4x faster.
template <class Op, class T>
inline T half_min_max(T a, T u) {
  constexpr uint16_t inf = HalfFormat<T>::kInf, quiet = HalfFormat<T>::kQuiet;
  const int32_t mag_a = a.bits & 0x7fff, mag_u = u.bits & 0x7fff;
  // A NaN update replaces all but a NaN target. The test reads the update
  // alone, so the branch does not wait on the target's cache miss.
  if (__builtin_expect(mag_u > inf, 0)) return {uint16_t((mag_a > inf ? a.bits : u.bits) | quiet)};
  // Ordered as the values are, with -0 equal to +0.
  const int32_t key_a = (a.bits & 0x8000) ? -mag_a : mag_a;
  const int32_t key_u = (u.bits & 0x8000) ? -mag_u : mag_u;
  const bool better = std::is_same_v<Op, MaxOp<T>> ? key_u > key_a : key_u < key_a;
  // A NaN target stays, quieted. Selected with masks: GCC made `take ? u : a`
  // a branch, which waits on the target's cache miss and mispredicts (1.3x
  // slower on a histogram of 1M bins).
  const bool nan_a = mag_a > inf;
  const T kept = {uint16_t(a.bits | (quiet * uint16_t(nan_a)))};
  return select_exact(better & !nan_a, u, kept);
}

// min/max whose result does not depend on the order of the updates
// (exact=True): -0 orders below +0, and any NaN, in the target or the update,
// gives the default quiet NaN. On the bits, with selects (no branch on the
// target, which waits on its cache miss).
template <class T, bool kMax>
struct ExactMinMaxOp {
  using Acc = T;
  using Bits = typename FloatFormat<T>::Bits;
  static constexpr Bits kSign = Bits(Bits(1) << (sizeof(Bits) * 8 - 1));
  static T identity() { return signed_infinity<T>(kMax); }
  static T load(T v) { return v; }
  static T store(T a, int64_t) { return a; }
  // Float order as unsigned integers, with -0 < +0.
  static Bits key(Bits b) { return (b & kSign) ? Bits(~b) : Bits(b | kSign); }
  static T combine(T a, T u) {
    const Bits inf = to_bits(signed_infinity<T>(false));
    const Bits ba = to_bits(a), bu = to_bits(u);
    if (__builtin_expect(Bits(bu & ~kSign) > inf, 0)) return canonical_nan<T>();
    const bool better = kMax ? key(bu) > key(ba) : key(bu) < key(ba);
    const bool nan_a = Bits(ba & ~kSign) > inf;
    return select_exact(nan_a, canonical_nan<T>(), select_exact(better, u, a));
  }
};
template <class T>
using ExactMinOp = ExactMinMaxOp<T, false>;
template <class T>
using ExactMaxOp = ExactMinMaxOp<T, true>;

template <class T>
constexpr bool is_float_v = is_half_v<T> || std::is_floating_point_v<T>;

// One update folded into an element of the output (folds_through_storage_v).
template <class Op, class T>
inline T fold_into_storage(T a, T u) {
  if constexpr (is_half_v<T> && is_min_max_v<Op, T>)
    return half_min_max<Op>(a, u);
  else
    return Op::store(Op::combine(Op::load(a), u), 1);
}

// The reductions an op's kernels are compiled for: visit_reduction instantiates no others.
template <Reduction... kReductions>
struct ReductionSet {
  static constexpr bool has(Reduction r) { return ((r == kReductions) || ...); }
};

// Calls f(TypeTag<Op>{}) with the functor for reduction r over T (r != none, one of
// Allowed's: the op has checked r before). `exact` (float T, min or max only: exact sums
// have kernels of their own) picks the order-free min/max.
template <class T, class Allowed, class F>
decltype(auto) visit_reduction(const char* op, Reduction r, F&& f, bool exact = false) {
  if constexpr (is_float_v<T>) {
    if (exact && r == Reduction::kMin) return f(TypeTag<ExactMinOp<T>>{});
    if (exact && r == Reduction::kMax) return f(TypeTag<ExactMaxOp<T>>{});
    if (exact) throw_value_error(op, "internal: visit_reduction called for an exact sum");
  }
  switch (r) {
    case Reduction::kSum:
      if constexpr (Allowed::has(Reduction::kSum)) return f(TypeTag<SumOp<T>>{});
      break;
    case Reduction::kSub:
      if constexpr (Allowed::has(Reduction::kSub)) return f(TypeTag<SubOp<T>>{});
      break;
    case Reduction::kProd:
      if constexpr (Allowed::has(Reduction::kProd)) return f(TypeTag<ProdOp<T>>{});
      break;
    case Reduction::kMin:
      if constexpr (Allowed::has(Reduction::kMin)) return f(TypeTag<MinOp<T>>{});
      break;
    case Reduction::kMax:
      if constexpr (Allowed::has(Reduction::kMax)) return f(TypeTag<MaxOp<T>>{});
      break;
    case Reduction::kMean:
      if constexpr (std::is_same_v<T, bool>)
        throw_type_error(op, "reduction 'mean' is not supported for bool data");
      else if constexpr (Allowed::has(Reduction::kMean))
        return f(TypeTag<MeanOp<T>>{});
      break;
    case Reduction::kNone: break;
  }
  throw_value_error(op, std::string("internal: visit_reduction called with reduction '") +
                            reduction_name(r) + "'");
}

}  // namespace detail
}  // namespace scatterkit
