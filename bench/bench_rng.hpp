// The benchmarks' random numbers, apart from bench_common.hpp so that a program without
// google-benchmark (bench_exact.cpp) draws the same data.
#pragma once

#include <cstdint>

namespace scatterkit {
namespace bench {

// Every workload draws from its own stream of this seed (the stream id is the
// second argument of the generators), so results never depend on the order in
// which benchmarks run.
constexpr uint64_t kSeed = 3;

// SplitMix64: a tiny, fast, well-mixed generator; good enough for benchmark data.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) : state_(seed * 0x9e3779b97f4a7c15ull + stream) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound); the modulo bias is below 2^-40 for our bounds.
  int64_t below(int64_t bound) { return int64_t(next() % uint64_t(bound)); }

  // Uniform in [0, 1), 24 random bits.
  float unit() { return float(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

}  // namespace bench
}  // namespace scatterkit
