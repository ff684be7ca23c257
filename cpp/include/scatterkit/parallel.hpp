// OpenMP work sharing with the library's thread policy.
//
// - parallel_for splits [0, n) into contiguous blocks, one per thread. Callers
//   only hand it work whose items cannot race (distinct output ranges), so
//   results never depend on the thread count.
// - Work below a threshold runs on the calling thread: starting a team costs
//   microseconds and these ops are memory bound.
// - The first exception thrown inside a region is captured and rethrown after
//   it; nothing escapes an OpenMP region.
// - After fork() in a process whose OpenMP pool already ran, libgomp would wait
//   forever for threads that do not exist in the child, so such a child runs
//   serially (Spark forks its Python workers).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "scatterkit/config.hpp"
#include "scatterkit/errors.hpp"
#include "scatterkit/function_ref.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define SCATTERKIT_HAS_PTHREAD_ATFORK 1
#endif

namespace scatterkit {
namespace detail {
inline namespace SCATTERKIT_KERNELS {

struct ThreadState {
  std::atomic<int> num_threads{0};  // 0: OpenMP's default
  std::atomic<bool> pool_started{false};
  std::atomic<bool> forked_child{false};
};

inline ThreadState& thread_state() {
  static ThreadState state;
  return state;
}

inline void on_fork_child() {
  ThreadState& s = thread_state();
  if (s.pool_started.load()) s.forked_child.store(true);
}

inline void register_fork_handler() {
#ifdef SCATTERKIT_HAS_PTHREAD_ATFORK
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &on_fork_child); });
#endif
}

// Below this many bytes touched an op stays on one thread.
constexpr int64_t kMinParallelBytes = int64_t(1) << 20;

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail

inline namespace SCATTERKIT_KERNELS {

// The most threads a kernel starts per processor OpenMP sees. Memory-bound work
// gains nothing past one per core; the margin keeps requests such as 7 threads
// on 2 cores (tests of thread-count independence) as asked. Without a cap, a
// request of 100000 threads would start thousands, and where the system's
// thread limit is lower libgomp ends the process.
constexpr int kMaxThreadsPerProcessor = 8;

// Threads used by the kernels: set_num_threads's value, else OpenMP's default,
// at most kMaxThreadsPerProcessor per processor; 1 in a child forked after the
// pool started, or without OpenMP.
inline int get_num_threads() {
#ifdef _OPENMP
  const detail::ThreadState& s = detail::thread_state();
  if (s.forked_child.load()) return 1;
  const int n = s.num_threads.load();
  // omp_get_num_procs asks the kernel for the affinity mask (a system call): once.
  static const int64_t cap = int64_t(kMaxThreadsPerProcessor) * std::max(1, omp_get_num_procs());
  return int(std::min<int64_t>(n > 0 ? n : omp_get_max_threads(), cap));
#else
  return 1;
#endif
}

inline void set_num_threads(int n) {
  if (n < 1) throw ValueError("set_num_threads: n must be >= 1, got " + std::to_string(n));
  detail::thread_state().num_threads.store(n);
}

}  // namespace SCATTERKIT_KERNELS

namespace detail {
inline namespace SCATTERKIT_KERNELS {

// Threads worth using for `items` independent items touching `bytes` bytes.
inline int threads_for(int64_t items, int64_t bytes) {
  if (items < 2 || bytes < kMinParallelBytes) return 1;
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;  // already inside a team (batched rows): no nesting
#endif
  const int64_t by_work = std::max<int64_t>(1, bytes / kMinParallelBytes);
  return int(std::min<int64_t>({int64_t(get_num_threads()), items, by_work}));
}

// Calls body(begin, end) on contiguous blocks covering [0, n); `bytes` is the
// memory the whole range touches, for the threshold. Compiled once, not once per body
// (function_ref.hpp).
inline void parallel_for(int64_t n, int64_t bytes, FunctionRef<void(int64_t, int64_t)> body) {
  if (n <= 0) return;
  const int threads = threads_for(n, bytes);
  if (threads <= 1) {
    body(int64_t(0), n);
    return;
  }
#ifdef _OPENMP
  register_fork_handler();
  thread_state().pool_started.store(true);
  std::exception_ptr error;
  std::atomic<bool> failed{false};
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    try {
      if (begin < end) body(begin, end);
    } catch (...) {
#pragma omp critical(scatterkit_error)
      if (!failed.exchange(true)) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#else
  body(int64_t(0), n);
#endif
}

}  // namespace SCATTERKIT_KERNELS
}  // namespace detail
}  // namespace scatterkit
