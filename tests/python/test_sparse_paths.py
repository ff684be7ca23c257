"""Few indices into a long axis: the kernels switch from per-target tables to sorting.

A table over every target of an axis of 10^9 elements would need gigabytes for three
updates, so past 65,536 targets (and more than four targets per update) ScatterUpdate keeps
its last writers in a sorted list and the table-based ScatterElements reductions (mean,
float16/bfloat16 sums) sort the updates of a block by target. These tests run both paths
on the same updates, with duplicates, and compare them with the oracle.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import BFLOAT16, assert_same
from reference import ref_scatter_elements_update, ref_scatter_update

import scatterkit as sk

LONG = 300_000  # beyond the 65,536-target table limit
SHORT = 1_000  # within it


def _assert_reference_at_1_and_2_threads(data, idx, upd, reduction, use_init_val):
    """ScatterElementsUpdate along axis 1 equals the oracle at 1 and 2 threads."""
    expected = ref_scatter_elements_update(
        data, idx, upd, 1, reduction=reduction, use_init_val=use_init_val
    )
    for threads in (1, 2):
        sk.set_num_threads(threads)
        res = sk.scatter_elements_update(
            data, idx, upd, 1, reduction=reduction, use_init_val=use_init_val
        )
        assert_same(res, expected)


def _indices(rng, n, size):
    idx = rng.integers(-size, size, n)
    idx[n // 2 :] = idx[: n - n // 2]  # every index twice: order decides the result
    return idx


@pytest.mark.parametrize("size", [SHORT, LONG])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_update_last_writer_wins_on_any_axis_length(size, in_place, threads):
    sk.set_num_threads(threads)
    rng = np.random.default_rng(size)
    data = rng.random((3, size, 2)).astype(np.float32)
    idx = _indices(rng, 40, size) % size  # ScatterUpdate-3 has no negative indices
    upd = rng.random((3, 40, 2)).astype(np.float32)
    expected = ref_scatter_update(data, idx, upd, 1)
    out = data.copy() if in_place else None
    res = sk.scatter_update(out if in_place else data, idx, upd, 1, out=out)
    assert_same(res, expected)


@pytest.mark.parametrize("size", [SHORT, LONG])
@pytest.mark.parametrize(
    ("dtype", "reduction"),
    [(np.float32, "mean"), (np.float16, "sum"), (BFLOAT16, "prod"), (np.int32, "mean")],
    ids=["f32-mean", "f16-sum", "bf16-prod", "i32-mean"],
)
@pytest.mark.parametrize("use_init_val", [True, False])
def test_scatter_elements_table_reductions_on_any_axis_length(size, dtype, reduction, use_init_val):
    rng = np.random.default_rng(7)
    data = (rng.integers(-8, 9, (2, size)) / 4).astype(dtype)
    idx = np.stack([_indices(rng, 60, size) for _ in range(2)])
    upd = (rng.integers(-8, 9, idx.shape) / 4).astype(dtype)
    _assert_reference_at_1_and_2_threads(data, idx, upd, reduction, use_init_val)


def test_sparse_updates_allocate_little():
    # A 200 MB axis hit three times: with a per-target table of 8-16 bytes per target this
    # would allocate gigabytes; the sorted paths need a few bytes per update.
    if os.environ.get("SCATTERKIT_SANITIZED"):
        pytest.skip("AddressSanitizer's allocator pads and quarantines: peak memory says nothing")
    resource = pytest.importorskip("resource")
    data = np.zeros(200_000_000, np.uint8)
    idx = np.array([199_999_999, 5, 199_999_999])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sk.scatter_update(data, idx, np.array([1, 2, 3], np.uint8), 0, out=data)
    sk.scatter_elements_update(
        data, idx, np.array([4, 5, 6], np.uint8), 0, reduction="mean", out=data
    )
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert data[5] == 3 and data[199_999_999] == 4  # mean(3, 4, 6) rounds down
    assert grown_mb < 100, f"peak memory grew by {grown_mb:.0f} MB"


# --- many updates into few targets: validation fused into the fold ---------------------------
# When the indices outweigh data four to one, the in-place reductions fold into a scratch copy
# of data, checking each index as they read it, and copy the result out only if all were valid.


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("reduction", ["sum", "prod", "min", "max"])
@pytest.mark.parametrize("use_init_val", [True, False])
def test_histogram_matches_reference(index_dtype, reduction, use_init_val):
    rng = np.random.default_rng(11)
    bins = 50
    data = rng.integers(-3, 4, (2, bins)).astype(np.int32)
    low = 0 if index_dtype == np.uint64 else -bins
    idx = rng.integers(low, bins, (2, 2000)).astype(index_dtype)
    upd = rng.integers(-3, 4, idx.shape).astype(np.int32)
    _assert_reference_at_1_and_2_threads(data, idx, upd, reduction, use_init_val)


@pytest.mark.parametrize(
    ("index_dtype", "bad"),
    [(np.int64, 50), (np.int64, -51), (np.int32, 2**31 - 1), (np.uint64, 2**64 - 1)],
)
@pytest.mark.parametrize("where", [0, 999, 1999])
@pytest.mark.parametrize("target", ["new", "out", "strided out", "in place"])
def test_histogram_bad_index_writes_nothing(index_dtype, bad, where, target):
    # A new result (and the temporary behind a strided out) is folded into directly, since
    # it is dropped on an error; data and the caller's out never are.
    data = np.arange(50, dtype=np.float32)
    data_before = data.copy()
    idx = (np.arange(2000) % 50).astype(index_dtype)
    idx[where] = bad
    out = {
        "new": None,
        "out": np.full(50, -7.0, np.float32),
        "strided out": np.full(100, -7.0, np.float32)[::2],
        "in place": data,
    }[target]
    out_before = None if out is None else out.copy()
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds .*at indices\\[{where}\\]"):
        sk.scatter_elements_update(
            data, idx, np.ones(2000, np.float32), 0, reduction="sum", out=out
        )
    assert_same(data, data_before)
    if out is not None:
        assert_same(out, out_before)


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16])
@pytest.mark.parametrize("reduction", ["min", "max"])
def test_half_histogram_min_max_fused(dtype, reduction):
    # 16-bit min/max fold on the output (rounding per update is exact), so histograms of
    # them take the fused path too: the oracle's result, and a bad index writes nothing.
    rng = np.random.default_rng(3)
    data = rng.standard_normal(50).astype(dtype)
    idx = rng.integers(-50, 50, 4000)
    upd = rng.standard_normal(4000).astype(dtype)
    upd[rng.random(4000) < 0.01] = np.nan
    expected = ref_scatter_elements_update(data, idx, upd, 0, reduction=reduction)
    assert_same(sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction), expected)
    idx[2500] = 50
    out = data.copy()
    with pytest.raises(IndexError, match="at indices\\[2500\\]"):
        sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction, out=out)
    assert_same(out, data)


# With fewer lines than threads, the reductions that merge exactly (integer sum and prod,
# min, max) split each line between threads, each folding into a table of its own, and merge
# the tables in order. 100,000 updates into 500 bins is enough work for two threads.
SPLIT_UPDATES, SPLIT_BINS = 100_000, 500


def _zero_tie_pool(dtype, reduction):
    """Float values whose extreme for min or max is zero of either sign: targets end on a tie
    between -0 and +0, which the first in C order wins."""
    others = [-1.0, -2.0] if reduction == "max" else [1.0, 2.0]
    return np.array([0.0, -0.0, *others], dtype)


def _split_values(dtype, reduction, rng, n):
    if dtype == np.bool_:
        return rng.random(n) < 0.3
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, n).astype(dtype)
    # Zero ties in every bin, and rare NaNs, which many bins meet only in a later part.
    values = rng.choice(_zero_tie_pool(dtype, reduction), n)
    values[rng.random(n) < 0.002] = np.nan
    return values


@pytest.mark.parametrize(
    ("dtype", "reduction"),
    [
        (np.float32, "max"),
        (np.float32, "min"),
        (np.float64, "max"),
        (np.int32, "sum"),
        (np.int64, "prod"),
        (np.uint8, "sum"),
        (np.bool_, "sum"),
    ],
)
def test_histogram_split_between_threads_matches_reference(dtype, reduction):
    rng = np.random.default_rng(21)
    data = _split_values(dtype, reduction, rng, SPLIT_BINS)
    idx = rng.integers(-SPLIT_BINS, SPLIT_BINS, SPLIT_UPDATES)
    upd = _split_values(dtype, reduction, rng, SPLIT_UPDATES)
    expected = ref_scatter_elements_update(data, idx, upd, 0, reduction=reduction)
    for threads in (1, 2, 3):
        sk.set_num_threads(threads)
        res = sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction)
        assert_same(res, expected)


@pytest.mark.parametrize("where", [0, SPLIT_UPDATES // 2 + 1, SPLIT_UPDATES - 1])
@pytest.mark.parametrize("in_place", [False, True])
def test_histogram_split_bad_index_writes_nothing(where, in_place):
    sk.set_num_threads(2)
    data = np.arange(SPLIT_BINS, dtype=np.int64)
    idx = np.arange(SPLIT_UPDATES) % SPLIT_BINS
    idx[where] = SPLIT_BINS
    out = data if in_place else np.full(SPLIT_BINS, -7, np.int64)
    before = out.copy()
    with pytest.raises(IndexError, match=f"at indices\\[{where}\\]"):
        sk.scatter_elements_update(
            data, idx, np.ones(SPLIT_UPDATES, np.int64), 0, reduction="max", out=out
        )
    assert_same(out, before)


@pytest.mark.parametrize("bad", [2**63 - 1, -(2**63), 2**62])
def test_histogram_huge_index_on_a_strided_axis_raises(bad):
    # The fold fetches targets ahead of validating their index: on an axis whose stride is
    # 1000 elements, the offset of a huge index must not overflow (UBSan checks this).
    data = np.zeros((4, 1000), np.float32)
    idx = np.zeros((20_000, 1), np.int64)
    idx[100, 0] = bad
    with pytest.raises(IndexError, match="at indices\\[100, 0\\]"):
        sk.scatter_elements_update(data, idx, np.ones((20_000, 1), np.float32), 0, reduction="sum")
    assert not data.any()


def test_histogram_v3_rejects_negative_index():
    se3 = sk.get_op("ScatterElementsUpdate-3")
    idx = np.zeros(1000, np.int64)
    idx[500] = -1
    data = np.zeros(10, np.float32)
    with pytest.raises(IndexError, match="negative indices are not allowed"):
        se3(data, idx, np.ones(1000, np.float32), 0, out=data)
    assert not data.any()


@pytest.mark.parametrize("dtype", [np.float16, BFLOAT16, np.float32, np.float64])
@pytest.mark.parametrize(("reduction", "extreme"), [("min", np.inf), ("max", -np.inf)])
@pytest.mark.parametrize("shape", [(4,), (1000,)], ids=["few lines", "histogram"])
def test_min_max_without_init_start_from_infinity(dtype, reduction, extreme, shape):
    # use_init_val=False starts a targeted float element at the reduction's identity, which is
    # an infinity, not the type's largest finite value: updates that are all that infinity
    # leave it there.
    data = np.full(shape, 5, dtype)
    idx = np.arange(100_000) % 3
    upd = np.full(idx.shape, extreme, dtype)
    for threads in (1, 2):
        sk.set_num_threads(threads)
        out = sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction, use_init_val=False)
        assert out[:3].astype(np.float64).tolist() == [extreme] * 3
        assert (out[3:] == 5).all()


# Two NaNs that differ in sign and payload, per float dtype (quiet, so no conversion changes
# them). bfloat16's differ in sign only: ml_dtypes, which the oracle converts with, drops
# payloads.
_TWO_NANS = {
    np.dtype(np.float16): (0x7E01, 0xFE0F),
    BFLOAT16: (0x7FC0, 0xFFC0),
    np.dtype(np.float32): (0x7FC00001, 0xFFC00ABC),
    np.dtype(np.float64): (0x7FF8000000000001, 0xFFF8000000000ABC),
}

# (data shape, updates, targets hit): the kernel paths a min/max fold can take.
_MIN_MAX_PATHS = {
    # indices of data's shape along axis 0: lines folded in place (fused for float16)
    "lines": ((64, 32), None, 64),
    "sparse": ((20_000,), 2_000, 100),  # in place: the indices do not outweigh data
    "histogram": ((500,), 20_000, 500),  # fused into a scratch copy
    "split histogram": ((SPLIT_BINS,), SPLIT_UPDATES, SPLIT_BINS),
}


@pytest.mark.parametrize("dtype", list(_TWO_NANS), ids=str)
@pytest.mark.parametrize("reduction", ["min", "max"])
@pytest.mark.parametrize("path", list(_MIN_MAX_PATHS))
def test_min_max_keep_the_first_nan_and_the_first_zero_bit_for_bit(dtype, reduction, path):
    # assert_same lets NaN match any NaN; here the exact bits show that of two NaNs (or of -0
    # and +0) the first in C order stays, on every path and for any thread count.
    rng = np.random.default_rng(5)
    shape, n, hit = _MIN_MAX_PATHS[path]
    count = int(np.prod(shape)) if n is None else n
    bits = np.dtype(f"u{dtype.itemsize}")
    nan_a, nan_b = (np.array(b, bits).view(dtype) for b in _TWO_NANS[dtype])
    # Targets end on zero ties, except where NaNs go: into every second target (every second
    # line along axis 0), several each.
    pool = _zero_tie_pool(dtype, reduction)
    data = rng.choice(pool, shape)
    upd = rng.choice(pool, count)
    if n is None:
        idx = rng.integers(0, hit, shape)
        upd = upd.reshape(shape)
        takes_nans = np.arange(shape[1]) % 2 == 0
    else:
        idx = rng.integers(0, hit, n)
        takes_nans = idx % 2 == 0
    nans = takes_nans & (rng.random(upd.shape) < 0.2)
    upd[nans] = np.where(rng.random(upd.shape) < 0.5, nan_a, nan_b)[nans]
    expected = ref_scatter_elements_update(data, idx, upd, 0, reduction=reduction)
    signs = np.signbit(expected[expected == 0].astype(np.float64))
    assert signs.any() and not signs.all(), "no ties between zeros of both signs"
    assert np.isnan(expected.astype(np.float64)).any(), "no target met a NaN"
    for threads in (1, 2):
        sk.set_num_threads(threads)
        res = sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction)
        assert res.view(bits).tolist() == expected.view(bits).tolist(), threads
        if n is not None:
            nd = sk.scatter_nd_update(data, idx[:, None], upd, reduction=reduction)
            assert nd.view(bits).tolist() == expected.view(bits).tolist(), threads
