#ifndef _OPENMP
#error "with_openmp.cpp is compiled with OpenMP"
#endif
#define KERNELS_SUFFIX with_openmp
#include "kernels.inc"
