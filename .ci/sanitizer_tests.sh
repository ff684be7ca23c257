#!/usr/bin/env bash
# The Python test suite against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of the extension. Any report aborts the process, which fails the run.
#
# The sanitized package goes to its own directory, put first on PYTHONPATH, so
# the regular install is left alone. Python's own allocations are never freed
# at exit, so leak detection is off. Arguments go to pytest. The first one may be
# --build-only (build the sanitized package and stop) or --no-build (test the one
# built before). Tests of servers and clusters (marker jvm) whose executors get the
# regular build by design do not belong here: .ci/run picks what runs.
set -euo pipefail
cd "$(dirname "$0")/.."

site=build/asan-site
mode=${1:-}
case "$mode" in --build-only | --no-build) shift ;; esac

if [ "$mode" != --no-build ]; then
  # -Og and line tables only (-g1) rather than the wheel's -O3: the kernels compile in a
  # fraction of -O1 -g's time, and reports still name file and line.
  flags="-Og -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  rm -rf "$site"
  # Build requirements installed once, not in a fresh isolated environment each time: the
  # build directory then stays valid and a rerun only recompiles what changed.
  python -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.13"
  python -m pip install -q --no-deps --no-build-isolation --target "$site" \
    -Cbuild-dir=build/asan-wheel -Ccmake.build-type=Debug \
    -Ccmake.define.CMAKE_CXX_FLAGS="$flags" -Ccmake.define.CMAKE_CXX_FLAGS_DEBUG="" \
    -Ccmake.define.CMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    .
fi
if [ "$mode" = --build-only ]; then
  exit 0
fi

export PYTHONPATH="$PWD/$site${PYTHONPATH:+:$PYTHONPATH}"
export SCATTERKIT_SANITIZED=1
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The ASan runtime must be the first library loaded into the interpreter, and
# libstdc++ must be loaded with it so that its C++ exception interceptors work.
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
python -c "import scatterkit; assert '$site' in scatterkit.__file__, scatterkit.__file__"

# Spark: a JVM started with the sanitizer runtime preloaded hangs, so spark-submit goes
# through a wrapper that starts the JVM without it and hands it to the Python workers
# (spark.executorEnv), which then run the sanitized build too.
if real_home=$(LD_PRELOAD= python -c "from pyspark.find_spark_home import _find_spark_home as f; print(f())" 2>/dev/null); then
  shim="$PWD/build/asan-spark-home"
  mkdir -p "$shim/bin"
  cat >"$shim/bin/spark-submit" <<SH
#!/usr/bin/env bash
export SPARK_HOME="$real_home"
preload="\$LD_PRELOAD"
unset LD_PRELOAD
exec "$real_home/bin/spark-submit" --conf "spark.executorEnv.LD_PRELOAD=\$preload" "\$@"
SH
  chmod +x "$shim/bin/spark-submit"
  export SPARK_HOME="$shim"
fi
python -m pytest -p no:cacheprovider "$@"
