"""A 1-D histogram whose table is larger than the last-level cache partitions its updates.

Past the last-level cache (as sysconf reports it; 32 MB where it does not) the updates of a
histogram are first partitioned, stably, by range of bins (ops/elements/partition.hpp), and
each range is then folded while it stays in cache: every bin still sees its updates in C
order, so the bits are those of the C-order fold at any thread count, and a bad index
anywhere raises before anything is written.

The table is a lazily mapped array of zeros updated in place, so that only the pages of the
bins hit are touched; the hits fall in a few windows (the table's ends, both sides of a
range's edge, its middle), where the result is compared with the oracle's on those windows.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import assert_same
from reference import ref_scatter_elements_update

import scatterkit as sk

RANGE_BYTES = 1 << 20  # kPartitionRangeBytes: the bins of one range


def _last_level_cache_bytes() -> int:
    try:
        reported = os.sysconf("SC_LEVEL3_CACHE_SIZE")
    except (ValueError, OSError):
        reported = 0
    return reported if reported > 0 else 32 << 20


def _bins(dtype) -> int:
    """Bins past the last-level cache, the last range partial."""
    itemsize = np.dtype(dtype).itemsize
    return _last_level_cache_bytes() // itemsize + 3 * (RANGE_BYTES // itemsize) + 123


def _windows(bins: int, itemsize: int) -> np.ndarray:
    edge = RANGE_BYTES // itemsize
    starts = [0, edge - 1000, bins // 2, bins - 2000]
    return np.unique(np.concatenate([np.arange(s, s + 2000) for s in starts]))


def _case(dtype, index_dtype, n=60_003, seed=5):
    """A zero table with values in its windows, and n updates into the windows (a quarter of
    them into 8 hot bins, every 7th index negative), NaNs, -0 and +0 among the floats."""
    rng = np.random.default_rng(seed)
    bins = _bins(dtype)
    positions = _windows(bins, np.dtype(dtype).itemsize)
    data = np.zeros(bins, dtype)
    data[positions] = (rng.integers(-3, 4, positions.size) * 0.5).astype(dtype)
    data[positions[positions.size // 2]] = np.nan
    at = rng.integers(0, positions.size, n)
    hot = rng.random(n) < 0.25
    at[hot] = positions.size // 3 + rng.integers(0, 8, hot.sum())
    idx = positions[at]
    idx[::7] -= bins
    upd = (rng.integers(-1000, 1001, n) * 0.25).astype(dtype)
    upd[rng.random(n) < 0.1] = -0.0
    upd[rng.random(n) < 0.1] = 0.0
    upd[rng.random(n) < 0.001] = np.nan
    return data, positions, idx.astype(index_dtype), upd


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize(
    ("dtype", "reduction"), [(np.float32, "sum"), (np.float32, "max"), (np.float64, "min")]
)
@pytest.mark.parametrize("threads", [1, 2])
def test_partitioned_histogram_matches_c_order_fold(index_dtype, dtype, reduction, threads):
    data, positions, idx, upd = _case(dtype, index_dtype)
    compact = np.searchsorted(positions, np.where(idx < 0, idx + data.size, idx))
    expected = ref_scatter_elements_update(data[positions], compact, upd, 0, reduction=reduction)
    sk.set_num_threads(threads)
    res = sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction, out=data)
    assert res is data
    assert_same(data[positions], expected)
    # nothing outside the windows was written
    assert np.count_nonzero(data) == np.count_nonzero(data[positions])


@pytest.mark.parametrize("where", [0, 30_001, 60_002])
@pytest.mark.parametrize("threads", [1, 2])
def test_partitioned_histogram_bad_index_writes_nothing(where, threads):
    data, positions, idx, upd = _case(np.float32, np.int64)
    idx[where] = data.size
    before = data[positions].copy()
    sk.set_num_threads(threads)
    with pytest.raises(
        IndexError, match=f"index {data.size} is out of bounds .*at indices\\[{where}\\]"
    ):
        sk.scatter_elements_update(data, idx, upd, 0, reduction="sum", out=data)
    assert_same(data[positions], before)
