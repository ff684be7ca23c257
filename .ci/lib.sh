# Shell functions shared by the CI scripts (sourced, after cd to the repository root).

section() {
  printf '\n==== %s ====\n' "$*"
}

# Builds tests/cpp_consumer in $1 with the remaining arguments, runs it, and
# checks which scatterkit package configuration CMake picked.
build_consumer() {
  local build_dir=$1 expected_dir=$2
  shift 2
  cmake -S "$PWD/tests/cpp_consumer" -B "$build_dir" -G Ninja \
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
