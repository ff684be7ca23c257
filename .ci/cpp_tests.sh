#!/usr/bin/env bash
# C++ checks: the GoogleTest suite and the benchmarks (release preset, one build directory),
# then a downstream CMake project built against `cmake --install` prefixes, with and without
# OpenMP. Run from anywhere in a clone; needs cmake >= 3.21, ninja, g++, libgtest-dev and
# libbenchmark-dev.
# (.ci/wheel_consumers.sh builds the same project against the installed wheel.)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
script_start=$SECONDS

source .ci/lib.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/scatterkit-cpp.XXXXXX")
trap 'rm -rf "$work"' EXIT

section "C++ tests and benchmarks: configure, build (one build directory), run the tests"
step_start=$SECONDS
cmake --preset release -DSCATTERKIT_BUILD_BENCHMARKS=ON
cmake --build --preset release
ctest --preset release
echo "tests took $((SECONDS - step_start)) s"

section "C++ benchmarks (bench/README.md): a short run"
for b in scatter_update scatter_elements_update scatter_nd_update slice_scatter histogram; do
  build/release/bench/bench_$b --benchmark_list_tests >/dev/null
done
OMP_WAIT_POLICY=PASSIVE build/release/bench/bench_scatter_elements_update \
  --benchmark_filter='W2_f32_i64/none.*threads:1|bound_W2' --benchmark_min_time=0.05
SCATTERKIT_HISTOGRAM_UPDATES=100000 OMP_WAIT_POLICY=PASSIVE build/release/bench/bench_histogram \
  --benchmark_filter='H_range_pass/.*/bins:16777216/' --benchmark_min_time=0.05
OMP_WAIT_POLICY=PASSIVE build/release/bench/bench_exact --rounds 1 --updates 100000 --bins 4096 \
  --threads 1

section "Install into a temporary prefix"
prefix="$work/prefix"
cmake --install build/release --prefix "$prefix"
find "$prefix" -name 'scatterkit*.cmake' | sort
config=$(find "$prefix" -name scatterkitConfig.cmake | head -n 1)
if [[ -z "$config" ]]; then
  echo "error: cmake --install wrote no scatterkitConfig.cmake" >&2
  exit 1
fi

section "Consumer against the install prefix (CMAKE_PREFIX_PATH)"
build_consumer "$work/consumer-prefix" "$(dirname "$config")" -DCMAKE_PREFIX_PATH="$prefix"

section "Consumer without OpenMP, against a prefix installed without it"
cmake -S . -B "$work/no-openmp" -G Ninja -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON \
  -DSCATTERKIT_BUILD_PYTHON=OFF
cmake --install "$work/no-openmp" --prefix "$work/prefix-no-openmp"
build_consumer "$work/consumer-no-openmp" \
  "$(dirname "$(find "$work/prefix-no-openmp" -name scatterkitConfig.cmake | head -n 1)")" \
  -DCMAKE_PREFIX_PATH="$work/prefix-no-openmp" -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON

section "C++ checks passed in $((SECONDS - script_start)) s"
