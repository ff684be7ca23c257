#!/usr/bin/env bash
# C++ checks: the GoogleTest suite (release preset), then a downstream CMake
# project built against (1) a `cmake --install` prefix and (2) the installed
# wheel. Run from anywhere in a clone; needs cmake >= 3.21, ninja, g++,
# libgtest-dev, and the scatterkit wheel installed in $PYTHON (default: python,
# else python3) for the last step.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_root=$(pwd)
python=${PYTHON:-$(command -v python || command -v python3 || true)}
script_start=$SECONDS

section() {
  printf '\n==== %s ====\n' "$*"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/scatterkit-cpp.XXXXXX")
trap 'rm -rf "$work"' EXIT

section "C++ tests: configure, build and run (release preset)"
step_start=$SECONDS
cmake --preset release
cmake --build --preset release
ctest --preset release
echo "tests took $((SECONDS - step_start)) s"

# Builds tests/cpp_consumer in $1 with the remaining arguments, runs it, and
# checks which scatterkit package configuration CMake picked.
build_consumer() {
  local build_dir=$1 expected_dir=$2
  shift 2
  cmake -S "$repo_root/tests/cpp_consumer" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release "$@"
  local found_dir
  found_dir=$(sed -n 's/^scatterkit_DIR:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if [[ "$(realpath "$found_dir")" != "$(realpath "$expected_dir")" ]]; then
    echo "error: the consumer found scatterkit in $found_dir, expected $expected_dir" >&2
    return 1
  fi
  cmake --build "$build_dir"
  ctest --test-dir "$build_dir" --output-on-failure
  "$build_dir/scatterkit_consumer"
}

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

section "Consumer against the installed wheel (scatterkit_DIR)"
if [[ -z "$python" ]]; then
  echo "error: no python found; set PYTHON to the interpreter with scatterkit installed" >&2
  exit 1
fi
wheel_cmake_dir=$("$python" -m scatterkit --cmakedir)
echo "$python -m scatterkit --cmakedir: $wheel_cmake_dir"
build_consumer "$work/consumer-wheel" "$wheel_cmake_dir" -Dscatterkit_DIR="$wheel_cmake_dir"

section "The README's C++ example, compiled against the wheel's headers"
awk '/^```cpp$/{on=1; next} /^```$/{on=0} on' README.md > "$work/readme_example.cpp"
g++ -std=c++17 -O2 -fopenmp -I"$("$python" -m scatterkit --includedir)" \
  "$work/readme_example.cpp" -o "$work/readme_example"
readme_output=$("$work/readme_example")
echo "$readme_output"
[[ "$readme_output" == "1 11 3 10 9 6 7 12 " ]] || {
  echo "error: the README example printed something else" >&2
  exit 1
}

section "C++ checks passed in $((SECONDS - script_start)) s"
