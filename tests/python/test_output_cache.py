"""Results of 1 MiB and more take recycled memory (set_output_cache / output_cache_info)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from reference import ref_scatter_elements_update

import scatterkit as sk

MiB = 1 << 20
LARGE = (64, 128, 32)  # 1 MiB of float32: the smallest recycled size, in a 2 MiB block
SMALL = (64, 128, 31)


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts from an empty cache with the default limit, and leaves one."""
    sk.set_output_cache(0)
    sk.set_output_cache(1 << 30)
    yield
    sk.set_output_cache(0)
    sk.set_output_cache(1 << 30)


def inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape, dtype=np.float32)
    indices = rng.integers(-shape[0], shape[0], (3, 8, 8))
    updates = rng.standard_normal(indices.shape, dtype=np.float32)
    return data, indices, updates


def scatter(shape, seed=0):
    data, indices, updates = inputs(shape, seed)
    got = sk.scatter_elements_update(data, indices, updates, 0, reduction="sum")
    want = ref_scatter_elements_update(data, indices, updates, 0, reduction="sum")
    np.testing.assert_array_equal(got, want)
    return got


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def counts() -> tuple[int, int]:
    info = sk.output_cache_info()
    return info["hits"], info["misses"]


def test_a_freed_result_is_reused_by_the_next_of_its_size():
    hits, misses = counts()
    first = scatter(LARGE, seed=1)
    where = address(first)
    assert counts() == (hits, misses + 1)
    del first
    info = sk.output_cache_info()
    assert info["cached_blocks"] == 1 and info["cached_bytes"] == 2 * MiB
    second = scatter(LARGE, seed=2)  # checked against the reference: no stale values
    assert address(second) == where
    assert counts() == (hits + 1, misses + 1)
    assert sk.output_cache_info()["cached_blocks"] == 0


def test_results_alive_together_never_share_memory():
    a = scatter(LARGE, seed=1)
    a_copy = a.copy()
    b = scatter(LARGE, seed=2)
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, a_copy)


def test_a_view_keeps_the_memory_of_its_result():
    view = scatter(LARGE, seed=1)[3]
    kept = view.copy()
    other = scatter(LARGE, seed=2)
    assert not np.shares_memory(view, other)
    np.testing.assert_array_equal(view, kept)


def test_recycled_results_are_ordinary_writeable_aligned_arrays():
    r = scatter(LARGE)
    assert r.shape == LARGE and r.dtype == np.float32
    assert r.flags.c_contiguous and r.flags.writeable and r.flags.aligned
    assert address(r) % (2 * MiB) == 0  # huge-page aligned
    r[0, 0, 0] = 42.0
    back = pickle.loads(pickle.dumps(r))
    np.testing.assert_array_equal(back, r)
    assert sk.scatter_elements_update(r, [[[0]]], [[[1.0]]], 0, out=r) is r  # usable as out=


def test_small_results_are_plain_numpy_arrays():
    before = counts()
    r = scatter(SMALL)
    assert r.base is None and r.flags.owndata
    assert counts() == before


def test_sizes_share_a_block_within_a_two_mib_class_only():
    first = scatter((64, 128, 65))  # 2 MiB + 32 KiB: a 4 MiB block
    where = address(first)
    del first
    assert address(scatter((64, 128, 127))) == where  # same class
    other = scatter((64, 128, 129))  # 6 MiB class: a new block
    assert address(other) != where


def test_the_limit_drops_the_least_recently_freed_blocks():
    sk.set_output_cache(4 * MiB)
    results = [scatter(LARGE, seed=s) for s in range(3)]
    newest = {address(r) for r in results[1:]}
    while results:  # freed oldest first: the first freed is dropped
        del results[0]
    info = sk.output_cache_info()
    assert (info["cached_blocks"], info["cached_bytes"]) == (2, 4 * MiB)
    hits, misses = counts()
    again = [scatter(LARGE, seed=s) for s in range(2)]
    assert {address(r) for r in again} == newest
    assert counts() == (hits + 2, misses)


def test_zero_limit_frees_everything_and_keeps_nothing():
    r = scatter(LARGE)
    sk.set_output_cache(0)
    del r  # released straight back to the system
    info = sk.output_cache_info()
    assert (info["limit"], info["cached_bytes"], info["cached_blocks"]) == (0, 0, 0)
    r = scatter(LARGE)  # still recycled-capable: allocated fresh
    del r
    assert sk.output_cache_info()["cached_blocks"] == 0


def test_a_failed_call_returns_its_output_to_the_cache():
    data, indices, updates = inputs(LARGE)
    indices[2, 1, 2] = LARGE[0]
    with pytest.raises(IndexError):
        sk.scatter_elements_update(data, indices, updates, 0)
    assert sk.output_cache_info()["cached_blocks"] == 1


def test_strided_in_place_goes_through_a_recycled_temporary():
    # out=data that is not contiguous is updated through a temporary copy: recycled too, and
    # an error leaves data as it was.
    base = np.arange(2 * 64 * 128 * 32, dtype=np.float32).reshape(64, 128, 64)
    data = base[:, :, ::2]
    want = ref_scatter_elements_update(data, [[[3]]], [[[-1.0]]], 0, reduction="sum")
    hits, misses = counts()
    assert (
        sk.scatter_elements_update(data, [[[3]]], [[[-1.0]]], 0, reduction="sum", out=data) is data
    )
    np.testing.assert_array_equal(data, want)
    assert counts() == (hits, misses + 1)
    before = base.copy()
    with pytest.raises(IndexError):
        sk.scatter_elements_update(data, [[[3, 64]]], [[[1.0, 1.0]]], 0, reduction="sum", out=data)
    np.testing.assert_array_equal(base, before)
    assert counts() == (hits + 1, misses + 1)


@pytest.mark.parametrize("dtype", [object, [("a", "f8"), ("b", "O")]])
def test_recycled_memory_is_never_handed_out_as_python_objects(dtype):
    # Recycled bytes read as PyObject pointers would crash; the private entry point
    # is importable, so it refuses such dtypes itself.
    from scatterkit import _core

    sk.slice_scatter(np.ones(2**18, np.uint64), np.zeros(1, np.uint64), 0, 1, 1, 0)  # to the cache
    with pytest.raises(TypeError, match="holds Python objects"):
        _core.empty_output(np.dtype(dtype), [2**18])


@pytest.mark.parametrize("bad", [-1, -(2**70)])
def test_set_output_cache_rejects_negative_sizes(bad):
    with pytest.raises(ValueError, match="set_output_cache: max_bytes must be >= 0"):
        sk.set_output_cache(bad)


@pytest.mark.parametrize("bad", [1.5, "1", True, None])
def test_set_output_cache_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="set_output_cache: max_bytes must be an integer"):
        sk.set_output_cache(bad)


def test_huge_limits_are_clamped():
    sk.set_output_cache(2**80)
    assert sk.output_cache_info()["limit"] == 2**63 - 1


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_results_alive_at_interpreter_exit_are_harmless():
    done = run_python(
        """
        import numpy as np, scatterkit as sk
        zeros, ones = np.zeros((1024, 1024, 2), np.float32), np.ones((1, 1024, 2), np.float32)
        kept = sk.scatter_update(zeros, [0], ones, 0)
        freed = sk.scatter_update(zeros, [1], ones, 0)
        del freed
        print(sk.output_cache_info()["cached_blocks"], float(kept.sum()))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "2048.0"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_allocates_and_frees_results():
    done = run_python(
        """
        import os, numpy as np, scatterkit as sk
        zeros = np.zeros((1024, 1024, 2), np.float32)
        r = sk.scatter_update(zeros, [0], np.ones((1, 1024, 2), np.float32), 0)
        del r  # the parent's cache holds a block when it forks
        pid = os.fork()
        if pid == 0:
            a = sk.scatter_update(zeros, [1], np.full((1, 1024, 2), 3, np.float32), 0)
            b = sk.scatter_update(zeros, [2], np.full((1, 1024, 2), 5, np.float32), 0)
            sums = (float(a.sum()), float(b.sum()))
            ok = sums == (6144.0, 10240.0) and not np.shares_memory(a, b)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), sk.output_cache_info()["cached_blocks"])
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1"]


def range_fold(bins: int, n: int, seed: int) -> None:
    """A 1-D histogram past the cache (it writes its updates out to scratch), checked."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(bins, dtype=np.float32)
    indices = rng.integers(-bins, bins, n)
    updates = rng.standard_normal(n, dtype=np.float32)
    got = sk.scatter_elements_update(data, indices, updates, 0, reduction="sum")
    np.add.at(data, indices, updates)
    np.testing.assert_array_equal(got, data)


def test_a_histogram_keeps_its_scratch_for_the_next_call():
    bins = 1 << 22  # 16 MiB of float32: past the cache, so it goes by ranges
    range_fold(bins, 1 << 20, seed=1)  # 8 MiB of entries
    assert sk.output_cache_info()["scratch_bytes"] == 8 * MiB
    range_fold(bins, 1 << 17, seed=2)  # fewer updates, in the same memory: no stale entries
    range_fold(bins, 3 << 19, seed=3)  # more: a new block, kept in place of the first
    assert sk.output_cache_info()["scratch_bytes"] == 12 * MiB


def test_the_limit_bounds_the_kept_scratch_too():
    sk.set_output_cache(4 * MiB)
    range_fold(1 << 22, 1 << 20, seed=1)
    assert sk.output_cache_info()["scratch_bytes"] == 0
    sk.set_output_cache(1 << 30)
    range_fold(1 << 22, 1 << 20, seed=1)
    assert sk.output_cache_info()["scratch_bytes"] == 8 * MiB
    sk.set_output_cache(0)  # frees it
    assert sk.output_cache_info()["scratch_bytes"] == 0
