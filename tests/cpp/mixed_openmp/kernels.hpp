// The same calls compiled twice: with_openmp.cpp with -fopenmp, without_openmp.cpp without.
#pragma once

#include <cstdint>
#include <vector>

namespace mixed_openmp {

// Asks for `threads`, then returns the number the kernels would use.
int threads_with_openmp(int threads);
int threads_without_openmp(int threads);

// ScatterUpdate-3 of a [rows, 1024] float matrix (rows 0 and rows - 1 replaced by -1.0f),
// big enough to start threads where OpenMP is on.
std::vector<float> scatter_rows_with_openmp(int64_t rows);
std::vector<float> scatter_rows_without_openmp(int64_t rows);

}  // namespace mixed_openmp
