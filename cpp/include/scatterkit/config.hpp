// Build settings that change what the library's functions do, made part of their names.
//
// A kernel compiled with OpenMP and the same kernel compiled without it are two different
// functions under one C++ name: a program linking translation units of both kinds would run
// one of them everywhere, chosen by the linker (a violation of the one-definition rule that
// no tool reports). So every function that may start threads lives in an inline namespace
// named after the setting. Callers still write scatterkit::scatter_update, and each
// translation unit links the kernels it was compiled with. The data types (TensorRef,
// TensorView, BatchOp, the errors, ...) do not depend on the setting and stay outside it, so
// they pass freely between translation units.
#pragma once

#ifdef _OPENMP
#define SCATTERKIT_KERNELS with_openmp
#else
#define SCATTERKIT_KERNELS without_openmp
#endif

// For small functions that must inline into a hot loop.
#if defined(__GNUC__)
#define SCATTERKIT_ALWAYS_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define SCATTERKIT_ALWAYS_INLINE __forceinline
#else
#define SCATTERKIT_ALWAYS_INLINE inline
#endif

// For functions shared by many kernels, which inlining would copy into each of them.
#if defined(__GNUC__)
#define SCATTERKIT_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define SCATTERKIT_NOINLINE __declspec(noinline)
#else
#define SCATTERKIT_NOINLINE
#endif
