#!/usr/bin/env bash
# The Python test suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of the extension. Any report aborts the process, which fails the run.
#
# The sanitized package goes to its own directory, put first on PYTHONPATH, so
# the regular install is left alone. Python's own allocations are never freed
# at exit, so leak detection is off.
set -euo pipefail
cd "$(dirname "$0")/.."

site=build/asan-site
# -O1 rather than the wheel's -O3: a much faster build, and clearer reports.
flags="-O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
rm -rf "$site"
python -m pip install -q --no-deps --target "$site" \
  -Cbuild-dir=build/asan-wheel -Ccmake.build-type=Debug \
  -Ccmake.define.CMAKE_CXX_FLAGS="$flags" \
  -Ccmake.define.CMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  .

export PYTHONPATH="$PWD/$site${PYTHONPATH:+:$PYTHONPATH}"
export SCATTERKIT_SANITIZED=1
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The ASan runtime must be the first library loaded into the interpreter, and
# libstdc++ must be loaded with it so that its C++ exception interceptors work.
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
python -c "import scatterkit; assert '$site' in scatterkit.__file__, scatterkit.__file__"
python -m pytest -p no:cacheprovider "$@"
