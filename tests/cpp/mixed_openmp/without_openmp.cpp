#ifdef _OPENMP
#error "without_openmp.cpp is compiled without OpenMP"
#endif
#define KERNELS_SUFFIX without_openmp
#include "kernels.inc"
