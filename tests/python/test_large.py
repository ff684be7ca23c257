"""Tensors past 2**31 (and 2**32) elements are addressed correctly.

A uint8 tensor of 4.5e9 elements: np.zeros maps it lazily, so the in-place calls touch only
the pages they write, and reads of untouched pages see the shared zero page. One
out-of-place call writes a whole 4.5 GB copy. Needs about 7 GB of free memory; skipped (with
the reason) on machines with less.
"""

from __future__ import annotations

import numpy as np
import pytest

import scatterkit as sk

N = 4_500_000_000
ROWS, COLS = 3, N // 3
# Positions on both sides of the 32-bit signed and unsigned limits, and the last one.
FAR = np.array([2**31 - 1, 2**31, 2**32 - 1, 2**32 + 7, N - 1], np.int64)


def _available_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(
        _available_bytes() < 7 * 2**30, reason="needs 7 GB of free memory for 4.5e9-element tensors"
    ),
]


@pytest.fixture
def zeros():
    data = np.zeros(N, np.uint8)
    yield data
    del data


def _assert_written_only(a: np.ndarray, positions) -> None:
    """Exactly `positions` of `a` are nonzero (a count, not a 4.5 GB index list)."""
    positions = sorted(set(int(p) for p in positions))
    assert np.count_nonzero(a) == len(positions)
    assert a[positions].all()


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64])
def test_scatter_update_far_positions(zeros, index_dtype):
    upd = np.arange(1, len(FAR) + 1, dtype=np.uint8)
    assert sk.scatter_update(zeros, FAR.astype(index_dtype), upd, 0, out=zeros) is zeros
    _assert_written_only(zeros, FAR.tolist())
    assert zeros[FAR].tolist() == upd.tolist()


def test_scatter_update_rows_past_2gb_with_int32_indices(zeros):
    data = zeros.reshape(ROWS, COLS)
    idx = np.array([COLS - 1, 7], np.int32)
    upd = np.array([[1, 2], [3, 4], [5, 6]], np.uint8)
    sk.scatter_update(data, idx, upd, 1, out=data)
    expected = [7, COLS - 1, COLS + 7, 2 * COLS - 1, 2 * COLS + 7, N - 1]
    _assert_written_only(zeros, expected)
    assert zeros[expected].tolist() == [2, 1, 4, 3, 6, 5]


@pytest.mark.parametrize("reduction", ["none", "sum", "max", "mean"])
def test_scatter_elements_far_positions(zeros, reduction):
    idx = np.concatenate([FAR, FAR[-1:]])  # the last target twice
    upd = np.array([1, 2, 3, 4, 10, 20], np.uint8)
    # Without the initial zeros, so that a mean keeps every value (the last: mean of 10, 20).
    sk.scatter_elements_update(
        zeros, idx, upd, 0, reduction=reduction, use_init_val=False, out=zeros
    )
    last = {"none": 20, "sum": 30, "max": 20, "mean": 15}[reduction]
    _assert_written_only(zeros, FAR.tolist())
    assert zeros[FAR].tolist() == [1, 2, 3, 4, last]


def test_scatter_elements_lines_past_2gb(zeros):
    data = zeros.reshape(ROWS, COLS)
    idx = np.array([[COLS - 1], [0], [COLS - 2]], np.int64)
    sk.scatter_elements_update(data, idx, np.array([[1], [2], [3]], np.uint8), 1, out=data)
    _assert_written_only(zeros, [COLS - 1, COLS, N - 2])


def test_scatter_nd_far_positions(zeros):
    idx = FAR[:, None]
    sk.scatter_nd_update(zeros, idx, np.arange(1, 6, dtype=np.uint8), reduction="sum", out=zeros)
    assert zeros[FAR].tolist() == [1, 2, 3, 4, 5]
    data = zeros.reshape(ROWS, COLS)
    sk.scatter_nd_update(data, np.array([[2, COLS - 3]]), np.array([9], np.uint8), out=data)
    _assert_written_only(zeros, sorted([*FAR.tolist(), N - 3]))


def test_slice_scatter_far_positions(zeros):
    sk.slice_scatter(zeros, np.array([1, 2, 3], np.uint8), N - 7, N, 3, 0, out=zeros)
    _assert_written_only(zeros, [N - 7, N - 4, N - 1])
    # A negative step as long as a row: the last column, then the first.
    data = zeros.reshape(ROWS, COLS)
    upd = np.array([[4, 5], [6, 7], [8, 9]], np.uint8)
    sk.slice_scatter(data, upd, -1, -(2**40), -(COLS - 1), 1, out=data)
    firsts, lasts = [r * COLS for r in range(ROWS)], [r * COLS + COLS - 1 for r in range(ROWS)]
    _assert_written_only(zeros, sorted({*firsts, *lasts, N - 7, N - 4}))
    assert zeros[lasts].tolist() == [4, 6, 8] and zeros[firsts].tolist() == [5, 7, 9]


def test_out_of_place_copy_of_4gb(zeros):
    out = sk.scatter_update(zeros, np.array([N - 1, 2**31 + 1]), np.array([7, 9], np.uint8), 0)
    assert out.shape == (N,) and out is not zeros
    _assert_written_only(out, [2**31 + 1, N - 1])
    assert not zeros.any()
