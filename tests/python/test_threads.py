"""Thread-count independence: 1 and 2 threads give bit-identical results on large inputs.

The inputs are big enough (millions of elements) to be split across threads, with heavy
duplicate indices so that the fold order of every target matters.  Each result is also
checked against a vectorised NumPy formula that applies updates in the same C order
(``ufunc.at`` is unbuffered and walks its indices in order).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings

import numpy as np
import pytest
from conftest import BFLOAT16, assert_same

import scatterkit as sk

N_DATA = 2_000_000
N_UPD = 4_000_000


def both_thread_counts(call):
    """``call()`` with 1 thread and with 2 threads; asserts the two agree bit for bit."""
    sk.set_num_threads(1)
    assert sk.get_num_threads() == 1
    one = call()
    sk.set_num_threads(2)
    assert sk.get_num_threads() == 2
    two = call()
    assert_same(two, one)
    return one


def last_writer(indices: np.ndarray, n_targets: int):
    """(targets, position of the last update to each target) for 1-D ``indices``."""
    rev = indices[::-1]
    targets, first_in_rev = np.unique(rev, return_index=True)
    assert targets.size <= n_targets
    return targets, indices.size - 1 - first_in_rev


@pytest.fixture(scope="module")
def heavy():
    """Data, indices with heavy duplicates (few hot targets plus a uniform spread)."""
    rng = np.random.default_rng(99)
    hot = rng.integers(0, 64, N_UPD // 2)
    spread = rng.integers(0, N_DATA, N_UPD - N_UPD // 2)
    indices = np.empty(N_UPD, np.int64)
    indices[0::2], indices[1::2] = hot, spread
    values = rng.normal(0.0, 1000.0, N_UPD)
    data = rng.normal(0.0, 1000.0, N_DATA)
    return data, indices, values


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scatter_elements_float_sum_is_thread_count_independent(heavy, dtype):
    data, indices, values = heavy
    data, values = data.astype(dtype), values.astype(dtype)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 0, reduction="sum")
    )
    expected = data.copy()
    np.add.at(expected, indices, values)  # C order, own type
    assert_same(result, expected)


def test_scatter_elements_float_mean_is_thread_count_independent(heavy):
    data, indices, values = heavy
    data, values = data.astype(np.float32), values.astype(np.float32)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 0, reduction="mean")
    )
    sums = data.copy()
    np.add.at(sums, indices, values)
    counts = np.bincount(indices, minlength=N_DATA) + 1
    expected = np.where(counts > 1, sums / counts.astype(np.float32), data)
    assert_same(result, expected)


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16], ids=["float16", "bfloat16"])
def test_scatter_elements_half_sum_accumulates_in_float32_at_any_thread_count(heavy, dtype):
    data, indices, values = heavy
    data, values = data.astype(dtype), (values / 100).astype(dtype)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 0, reduction="sum")
    )
    acc = data.astype(np.float32)
    np.add.at(acc, indices, values.astype(np.float32))
    assert_same(result, acc.astype(dtype))


def test_scatter_elements_float16_mean_without_init(heavy):
    data, indices, values = heavy
    data, values = data.astype(np.float16), (values / 100).astype(np.float16)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(
            data, indices, values, 0, reduction="mean", use_init_val=False
        )
    )
    acc = np.zeros(N_DATA, np.float32)
    np.add.at(acc, indices, values.astype(np.float32))
    counts = np.bincount(indices, minlength=N_DATA)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (acc / counts.astype(np.float32)).astype(np.float16)
    assert_same(result, np.where(counts > 0, mean, data))


def test_scatter_elements_integer_mean_floor_is_thread_count_independent(heavy):
    data, indices, values = heavy
    data, values = data.astype(np.int32), values.astype(np.int32)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 0, reduction="mean")
    )
    sums = data.astype(np.int64)
    np.add.at(sums, indices, values.astype(np.int64))
    counts = np.bincount(indices, minlength=N_DATA) + 1
    assert_same(result, np.floor_divide(sums, counts).astype(np.int32))


@pytest.mark.parametrize("reduction", ["prod", "min", "max"])
def test_scatter_elements_int_reductions_are_thread_count_independent(heavy, reduction):
    data, indices, values = heavy
    data, values = data.astype(np.int64), values.astype(np.int64)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 0, reduction=reduction)
    )
    expected = data.copy()
    {"prod": np.multiply, "min": np.minimum, "max": np.maximum}[reduction].at(
        expected, indices, values
    )  # int64 multiply wraps like two's complement
    assert_same(result, expected)


def test_scatter_elements_none_last_write_wins_at_any_thread_count(heavy):
    data, indices, values = heavy
    values = values.astype(np.float64)
    result = both_thread_counts(lambda: sk.scatter_elements_update(data, indices, values, 0))
    targets, last = last_writer(indices, N_DATA)
    expected = data.copy()
    expected[targets] = values[last]
    assert_same(result, expected)


def test_scatter_elements_axis_1_float32_sum_is_thread_count_independent():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(2000, 1000)).astype(np.float32)
    indices = rng.integers(-50, 50, (2000, 1500))
    values = rng.normal(size=(2000, 1500)).astype(np.float32)
    result = both_thread_counts(
        lambda: sk.scatter_elements_update(data, indices, values, 1, reduction="sum")
    )
    expected = data.copy()
    rows = np.broadcast_to(np.arange(2000)[:, None], indices.shape)
    np.add.at(expected, (rows, indices % 1000), values)
    assert_same(result, expected)


def test_scatter_elements_in_place_threaded(heavy):
    data, indices, values = heavy

    def call():
        buf = data.copy()
        out = sk.scatter_elements_update(buf, indices, values, 0, reduction="sum", out=buf)
        assert out is buf
        return buf

    expected = data.copy()
    np.add.at(expected, indices, values)
    assert_same(both_thread_counts(call), expected)


@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "max"])
def test_scatter_nd_slabs_are_thread_count_independent(reduction):
    rng = np.random.default_rng(11)
    data = rng.normal(size=(20_000, 100))
    indices = rng.integers(0, 20_000, (40_000, 1))
    indices[::3] = rng.integers(0, 8, (len(indices[::3]), 1))  # hot rows
    values = rng.normal(size=(40_000, 100))
    result = both_thread_counts(
        lambda: sk.scatter_nd_update(data, indices, values, reduction=reduction)
    )
    expected = data.copy()
    rows = indices[:, 0]
    if reduction == "none":
        targets, last = last_writer(rows, data.shape[0])
        expected[targets] = values[last]
    else:
        ufunc = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "max": np.maximum}
        ufunc[reduction].at(expected, rows, values)
    assert_same(result, expected)


def test_scatter_nd_elementwise_float16_sum(heavy):
    data, indices, values = heavy
    data, values = data.astype(np.float16), (values / 100).astype(np.float16)
    result = both_thread_counts(
        lambda: sk.scatter_nd_update(data, indices[:, None], values, reduction="sum")
    )
    acc = data.astype(np.float32)
    np.add.at(acc, indices, values.astype(np.float32))
    assert_same(result, acc.astype(np.float16))


def test_scatter_update_is_thread_count_independent():
    rng = np.random.default_rng(12)
    data = rng.normal(size=(300, 10_000)).astype(np.float32)
    indices = rng.integers(0, 10_000, 20_000)
    indices[::2] = rng.integers(0, 10, 10_000)
    values = rng.normal(size=(300, 20_000)).astype(np.float32)
    result = both_thread_counts(lambda: sk.scatter_update(data, indices, values, 1))
    targets, last = last_writer(indices, data.shape[1])
    expected = data.copy()
    expected[:, targets] = values[:, last]
    assert_same(result, expected)


def test_slice_scatter_is_thread_count_independent():
    rng = np.random.default_rng(13)
    data = rng.normal(size=(1000, 3000))
    updates = rng.normal(size=(334, 1000))
    result = both_thread_counts(
        lambda: sk.slice_scatter(data, updates, [-1, 10**12], [-(10**12), 0], [-3, -3], [0, 1])
    )
    expected = data.copy()
    expected[::-3, :0:-3] = updates
    assert_same(result, expected)


def test_movement_dtype_complex128_threaded():
    rng = np.random.default_rng(14)
    data = (rng.normal(size=N_DATA) + 1j * rng.normal(size=N_DATA)).astype(np.complex128)
    indices = rng.integers(-N_DATA, N_DATA, N_DATA)
    values = (rng.normal(size=N_DATA) * 1j).astype(np.complex128)
    result = both_thread_counts(lambda: sk.scatter_elements_update(data, indices, values, 0))
    targets, last = last_writer(indices % N_DATA, N_DATA)
    expected = data.copy()
    expected[targets] = values[last]
    assert_same(result, expected)


def test_forked_child_runs_threaded_ops_without_hanging(heavy):
    # Spark's Python workers fork a process whose OpenMP pool is already running.
    data, indices, values = heavy
    expected = data.copy()
    np.add.at(expected, indices, values)
    sk.set_num_threads(2)
    assert_same(sk.scatter_elements_update(data, indices, values, 0, reduction="sum"), expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
        pid = os.fork()
    if pid == 0:  # child: must not deadlock in the OpenMP runtime
        code = 1
        try:
            sk.set_num_threads(2)
            res = sk.scatter_elements_update(data, indices, values, 0, reduction="sum")
            code = 0 if res.tobytes() == expected.tobytes() else 3
        except BaseException:
            code = 2
        finally:
            sys.stdout.flush()
            os._exit(code)
    deadline = time.monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("forked child hung in a threaded op")
        time.sleep(0.05)
    assert os.WIFEXITED(status), status
    assert os.WEXITSTATUS(status) == 0, "child computed a wrong result or raised"
