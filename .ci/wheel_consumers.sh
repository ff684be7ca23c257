#!/usr/bin/env bash
# The downstream CMake project (tests/cpp_consumer) and the README's C++ example, built
# against the scatterkit wheel installed in $PYTHON (default: python, else python3).
# Run from anywhere in a clone after installing the package; needs cmake >= 3.21, ninja, g++.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=${PYTHON:-$(command -v python || command -v python3 || true)}

source .ci/lib.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/scatterkit-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

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

