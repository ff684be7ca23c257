// Run-time element and index type tags, and the dispatch from tags to types.
//
// Ops need different things from an element type: pure data movement only its
// byte width, reductions its arithmetic. Dispatching on exactly that keeps the
// number of template instantiations (and the build time) small.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "scatterkit/errors.hpp"
#include "scatterkit/half.hpp"

namespace scatterkit {

// Element types with arithmetic. Anything else is moved as opaque bytes.
enum class DType {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kOpaque,  // moved by byte width only (complex, structured, strings, ...)
};

// Integer types accepted for indices. Narrower types are widened by callers;
// uint64 is validated as unsigned and then read as int64 (valid values < 2^63).
enum class IndexType { kInt32, kInt64, kUInt64 };

// Bytes per index of the type.
inline int64_t index_size(IndexType t) { return t == IndexType::kInt32 ? 4 : 8; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kOpaque: return "opaque";
  }
  return "?";
}

// Bytes per element of an arithmetic type (0 for kOpaque: any width).
inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kUInt64:
    case DType::kFloat64: return 8;
    case DType::kOpaque: return 0;
  }
  return 0;
}

inline DType dtype_from_name(const std::string& name) {
  for (int i = 0; i <= int(DType::kOpaque); ++i)
    if (name == dtype_name(DType(i))) return DType(i);
  throw TypeError("unknown dtype name '" + name + "'");
}

// Element type of a typed view -> its tag.
template <class T>
constexpr DType dtype_of() {
  // Integers by size and signedness: long long, char and the like are integers too.
  constexpr bool is_integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  constexpr bool is_signed = std::is_signed_v<T>;
  if constexpr (std::is_same_v<T, bool>)
    return DType::kBool;
  else if constexpr (is_integer && sizeof(T) == 1)
    return is_signed ? DType::kInt8 : DType::kUInt8;
  else if constexpr (is_integer && sizeof(T) == 2)
    return is_signed ? DType::kInt16 : DType::kUInt16;
  else if constexpr (is_integer && sizeof(T) == 4)
    return is_signed ? DType::kInt32 : DType::kUInt32;
  else if constexpr (is_integer && sizeof(T) == 8)
    return is_signed ? DType::kInt64 : DType::kUInt64;
  else if constexpr (std::is_same_v<T, float16>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kFloat64;
  else
    return DType::kOpaque;
}

template <class I>
constexpr IndexType index_type_of() {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "indices must be integers");
  // By size and signedness: unsigned long long is not uint64_t (unsigned long) on Linux.
  if constexpr (sizeof(I) == 8)
    return std::is_unsigned_v<I> ? IndexType::kUInt64 : IndexType::kInt64;
  else if constexpr (sizeof(I) == 4 && std::is_unsigned_v<I>)
    return IndexType::kInt64;  // widened by the caller
  else
    return IndexType::kInt32;
}

namespace detail {

template <class T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the arithmetic type named by `t`.
template <class F>
decltype(auto) visit_arithmetic(const char* op, DType t, F&& f) {
  switch (t) {
    case DType::kBool: return f(TypeTag<bool>{});
    case DType::kInt8: return f(TypeTag<int8_t>{});
    case DType::kInt16: return f(TypeTag<int16_t>{});
    case DType::kInt32: return f(TypeTag<int32_t>{});
    case DType::kInt64: return f(TypeTag<int64_t>{});
    case DType::kUInt8: return f(TypeTag<uint8_t>{});
    case DType::kUInt16: return f(TypeTag<uint16_t>{});
    case DType::kUInt32: return f(TypeTag<uint32_t>{});
    case DType::kUInt64: return f(TypeTag<uint64_t>{});
    case DType::kFloat16: return f(TypeTag<float16>{});
    case DType::kBFloat16: return f(TypeTag<bfloat16>{});
    case DType::kFloat32: return f(TypeTag<float>{});
    case DType::kFloat64: return f(TypeTag<double>{});
    case DType::kOpaque: break;
  }
  throw_type_error(op, "reductions need an arithmetic element type (bool, integer or float)");
}

// Fixed-width byte blocks: moving one is a memcpy the compiler inlines.
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

// Element moved through a fixed-size memcpy, so alignment and aliasing never matter.
template <class E>
inline void move_element(void* dst, const void* src) {
  std::memcpy(dst, src, sizeof(E));
}

// Calls f(TypeTag<Bytes<N>>{}) for itemsize N in {1,2,4,8,16}, else f(TypeTag<void>{})
// (the caller then moves `itemsize` bytes with a run-time memcpy).
template <class F>
decltype(auto) visit_width(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(TypeTag<Bytes<1>>{});
    case 2: return f(TypeTag<Bytes<2>>{});
    case 4: return f(TypeTag<Bytes<4>>{});
    case 8: return f(TypeTag<Bytes<8>>{});
    case 16: return f(TypeTag<Bytes<16>>{});
    default: return f(TypeTag<void>{});
  }
}

template <class F>
decltype(auto) visit_index(IndexType t, F&& f) {
  switch (t) {
    case IndexType::kInt32: return f(TypeTag<int32_t>{});
    case IndexType::kInt64: return f(TypeTag<int64_t>{});
    case IndexType::kUInt64: return f(TypeTag<uint64_t>{});
  }
  throw TypeError("unknown index type " + std::to_string(int(t)));
}

}  // namespace detail
}  // namespace scatterkit
