"""Shared fixtures and helpers for the scatterkit Python tests."""

from __future__ import annotations

import os
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

# Hypothesis profiles, chosen with SCATTERKIT_HYPOTHESIS_PROFILE=NAME or --hypothesis-profile=NAME:
# - "ci" (the default): each test's own budget of examples, derandomized (the same examples
#   every run), nothing read from or written to disk;
# - "dev": the same examples, at most DEV_EXAMPLES per test, for quick local runs.
PROFILE_VARIABLE = "SCATTERKIT_HYPOTHESIS_PROFILE"
DEV_EXAMPLES = 10
_REPRODUCIBLE = {"derandomize": True, "database": None, "deadline": None, "print_blob": True}
settings.register_profile("ci", **_REPRODUCIBLE)
settings.register_profile("dev", max_examples=DEV_EXAMPLES, **_REPRODUCIBLE)
settings.load_profile(os.environ.get(PROFILE_VARIABLE) or "ci")

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)

BOOL_DTYPES = [np.dtype(np.bool_)]
SIGNED_DTYPES = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64)]
UNSIGNED_DTYPES = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)]
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
FLOAT_DTYPES = [np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64)]
# Every dtype a reduction accepts.
REDUCIBLE_DTYPES = BOOL_DTYPES + INT_DTYPES + FLOAT_DTYPES
# Every integer dtype an index, axis, start, stop or step may have.
INDEX_DTYPES = list(INT_DTYPES)
# Dtypes that only move (no reduction): they must still scatter byte for byte.
STRUCT_DTYPE = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
MOVEMENT_DTYPES = [
    np.dtype(np.complex64),
    np.dtype(np.complex128),
    np.dtype(np.longdouble),
    np.dtype("datetime64[ns]"),
    np.dtype("S5"),
    STRUCT_DTYPE,
    np.dtype("U3"),
]
ALL_DTYPES = REDUCIBLE_DTYPES + MOVEMENT_DTYPES


def dtype_id(dtype) -> str:
    """A short readable test id for a dtype."""
    dtype = np.dtype(dtype)
    if dtype == STRUCT_DTYPE:
        return "struct"
    return str(dtype) if dtype.names is None else "struct"


def is_float_dtype(dtype) -> bool:
    return np.dtype(dtype) in FLOAT_DTYPES


def random_values(rng: np.random.Generator, dtype, shape, special: bool = True) -> np.ndarray:
    """Values of ``dtype`` and ``shape``; with ``special`` also extremes, NaN, inf and -0.0."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        flat = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        flat = rng.integers(-5 if info.min < 0 else 0, 6, n).astype(dtype)
        if special and n:
            picks = rng.integers(0, 4, n)
            wide = rng.integers(int(info.min), int(info.max), n, dtype=dtype, endpoint=True)
            flat = np.where(picks == 0, wide, flat)
            extremes = np.array([info.min, info.max], dtype)
            flat = np.where(picks == 1, rng.choice(extremes, n), flat)
    elif dtype in FLOAT_DTYPES:
        flat = (rng.integers(-8, 9, n) / 4.0).astype(np.float64)
        if special and n:
            picks = rng.integers(0, 6, n)
            big = {2: 60000.0, 4: 3.0e38}.get(dtype.itemsize, 1.0e300)
            if dtype == BFLOAT16:
                big = 3.0e38
            pool = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, big, -big, 1e-3, 7.0e-8])
            flat = np.where(picks == 0, rng.choice(pool, n), flat)
            flat = np.where(picks == 1, rng.normal(0.0, 100.0, n), flat)
        with np.errstate(over="ignore"):
            flat = flat.astype(dtype)
    elif dtype.kind == "c":
        flat = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    elif dtype.kind == "f":  # longdouble
        flat = rng.normal(size=n).astype(dtype) / np.longdouble(3)
    elif dtype.kind == "M":
        flat = rng.integers(-(2**62), 2**62, n).astype(np.int64).view(dtype)
    elif dtype.kind == "S":
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz\x00\x01\xff", np.uint8)
        flat = rng.choice(letters, n * dtype.itemsize).astype(np.uint8).view(dtype)
    elif dtype.kind == "U":
        codes = rng.choice(
            np.array([65, 98, 0x3B1, 0x1F600, 0x4E2D], np.uint32), n * (dtype.itemsize // 4)
        )
        flat = codes.astype(np.uint32).view(dtype)
    elif dtype.names is not None:
        flat = np.zeros(n, dtype)
        for name in dtype.names:
            flat[name] = random_values(rng, dtype[name], (n,), special)
    else:  # pragma: no cover - guard for a dtype added to the lists without a generator
        raise AssertionError(f"no generator for {dtype}")
    return np.asarray(flat).reshape(shape)


def random_indices(
    rng: np.random.Generator, shape, size: int, index_dtype, allow_negative: bool
) -> np.ndarray:
    """Valid indices into an axis of ``size`` (negative ones when allowed and signed)."""
    index_dtype = np.dtype(index_dtype)
    lo = -size if allow_negative and index_dtype.kind == "i" else 0
    if size == 0:
        assert int(np.prod(shape)) == 0, "no valid index into an empty axis"
        return np.zeros(shape, index_dtype)
    return rng.integers(lo, size, tuple(shape)).astype(index_dtype)


def _float_bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(f"u{a.dtype.itemsize}")


def assert_same(actual, expected) -> None:
    """``actual`` equals ``expected`` bit for bit: same type, shape, dtype and bytes.

    Floats: NaN matches NaN whatever its payload; every other value must have the same bits,
    so -0.0 differs from 0.0 (min/max keep the first of equal values, as the oracle does).
    """
    assert isinstance(actual, np.ndarray), type(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    dtype = expected.dtype
    if dtype in FLOAT_DTYPES:
        a32 = actual.astype(np.float64)
        e32 = expected.astype(np.float64)
        nan_a, nan_e = np.isnan(a32), np.isnan(e32)
        where = np.argwhere(nan_a != nan_e)
        assert not where.size, f"NaN mismatch at {where[:5].tolist()}:\n{actual}\n{expected}"
        same = (_float_bits(actual) == _float_bits(expected)).reshape(actual.shape) | nan_a
        where = np.argwhere(~same)
        assert not where.size, (
            f"values differ at {where[:5].tolist()}: "
            f"{[actual[tuple(w)] for w in where[:5]]} != {[expected[tuple(w)] for w in where[:5]]}"
        )
    elif dtype == np.longdouble:
        # 80-bit long double carries padding bytes: compare values.
        assert np.array_equal(actual, expected, equal_nan=True)
    else:
        a_bytes = np.ascontiguousarray(actual).tobytes()
        e_bytes = np.ascontiguousarray(expected).tobytes()
        if a_bytes != e_bytes:
            raise AssertionError(f"arrays differ:\n{actual!r}\n{expected!r}")


def _root_buffer(a: np.ndarray) -> np.ndarray:
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def snapshot(a: np.ndarray) -> bytes:
    """The bytes of the whole buffer ``a`` views (for "left untouched" checks)."""
    return np.array(_root_buffer(a), copy=True).tobytes()


def assert_unchanged(a: np.ndarray, snap: bytes) -> None:
    """``a`` and the whole buffer it views hold exactly the bytes they had at ``snapshot``."""
    assert np.array(_root_buffer(a), copy=True).tobytes() == snap, "buffer was modified"


def pytest_configure(config):
    # Hypothesis' failure report imports a module that warns on import; with warnings as errors
    # that would turn a readable test failure into an INTERNALERROR.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
    )


# Markers by place: `pytest -m "not spark"` runs the core suite on a machine without Java.
_MARKERS_BY_PATH = {
    "spark": "spark",
    "test_openvino_agreement.py": "openvino",
    "test_typing.py": "typing",
}


# The fixtures that start a JVM (a local session, a Connect server, a standalone cluster):
# the tests that use them, directly or through other fixtures, are marked "jvm".
_JVM_FIXTURES = {"spark", "connect_server", "standalone_cluster"}

# "slow": what `pytest -m "not slow"` (the README's fast loop) leaves out. Every test that
# starts a JVM (marked "jvm" here or by its module: seconds to start Spark, then Spark jobs),
# and these modules, each more than 5 s alone on the shared 2-core machine (pytest's own
# time, 2026-11-29):
_SLOW_MODULES = {
    "test_exact.py",  # 22 s: exact sums over every dtype, order and split, with hypothesis
    "test_fuzz.py",  # 11 s: malformed arguments to every op (250 examples per test)
    "test_large.py",  # 10 s: tensors of 4.5e9 elements (when 7 GB are free)
    "test_openvino_agreement.py",  # 7 s: OpenVINO's CPU plugin as a second opinion
    "test_properties.py",  # 33 s: hypothesis properties of every op and layout
    "test_range_fold.py",  # 7 s: 1-D histograms past the cache
    "test_sparse_paths.py",  # 10 s: few updates into long axes
    "test_threads.py",  # 8 s: the same bits at many thread counts
    "test_typing.py",  # 21 s: mypy and stubtest
}


def _cap_hypothesis_examples(item, limit: int) -> None:
    """Runs a hypothesis test with at most `limit` examples. A budget written in a test module
    (`@settings(max_examples=...)`) wins over any profile, so the "dev" profile lowers it here,
    in the settings Hypothesis keeps on each test (what `@given` and `@settings` set)."""
    test = getattr(item, "obj", None)
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if current is not None and current.max_examples > limit:
        test._hypothesis_internal_use_settings = settings(current, max_examples=limit)


def pytest_collection_modifyitems(config, items):
    profile = config.getoption("--hypothesis-profile", None) or os.environ.get(PROFILE_VARIABLE)
    # A long fuzzing run (README: Robustness) asks for its number of examples.
    cap = profile == "dev" and not os.environ.get("SCATTERKIT_FUZZ_EXAMPLES")
    for item in items:
        parts = item.path.parts
        for place, marker in _MARKERS_BY_PATH.items():
            if place in parts:
                item.add_marker(getattr(pytest.mark, marker))
        if _JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.jvm)
        if item.get_closest_marker("jvm") or item.path.name in _SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if cap:
            _cap_hypothesis_examples(item, DEV_EXAMPLES)


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator with a fixed seed: every run sees the same data."""
    return np.random.default_rng(20240607)


def same_at_thread_counts(call, same, counts=(1, 2, 3)):
    """``call()`` at each of `counts` threads in turn; ``same(result, first)`` checks each
    against the first, which it returns (``restore_num_threads`` puts the count back)."""
    import scatterkit as sk

    results = []
    for n in counts:
        sk.set_num_threads(n)
        results.append(call())
    for r in results[1:]:
        same(r, results[0])
    return results[0]


@pytest.fixture(autouse=True)
def restore_num_threads():
    """Puts the thread count back as it was, whatever the test did with it."""
    try:
        import scatterkit as sk
    except ImportError:  # only the oracle's own tests can run before the package is built
        yield
        return
    before = sk.get_num_threads()
    yield
    sk.set_num_threads(before)
    assert sk.get_num_threads() == before
