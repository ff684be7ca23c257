"""The fold by ranges: a 1-D histogram whose table is past the cache (16 MB and more).

Its updates are written out by range of bins before each range is folded in cache
(cpp/include/scatterkit/ops/elements/ranges.hpp); on one thread, updates mostly on a few ranges
fold in place instead. Either way it must give the bits of the C-order fold
(``ufunc.at`` walks its indices in order) at any thread count, wrap negative indices, and
leave ``out`` untouched when an index is bad, which it finds before writing anything.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_same, same_at_thread_counts
from reference import ref_scatter_elements_update

import scatterkit as sk

# Past the strategy's 16 MB in float32, and not a whole number of ranges.
BINS = (1 << 22) + 1001
UPDATES = 400_000


def histogram_inputs(bins: int, n: int, dtype, hot: float = 0.0, seed: int = 5):
    """Data, indices and updates; some indices negative, and many updates per target bin.

    The targets are 4,096 bins a fixed step apart, so every range gets its share, except for
    the share `hot` of the updates, on 64 bins: with half or three quarters of them there, one
    thread folds in place instead, and two threads or more fetch their entries' lines ahead as
    they write them out.
    """
    rng = np.random.default_rng(seed)
    step = bins // 4096
    indices = rng.integers(0, 4096, n) * step + rng.integers(0, 3, n)
    on_hot = rng.random(n) < hot
    indices[on_hot] = rng.integers(0, 64, int(on_hot.sum()))
    negative = rng.random(n) < 0.1
    indices[negative] -= bins
    data = rng.normal(0.0, 100.0, bins).astype(dtype)
    updates = rng.normal(0.0, 100.0, n).astype(dtype)
    return data, indices, updates


def at_every_thread_count(call):
    """``call()`` at 1, 2 and 3 threads; asserts the results agree bit for bit."""
    return same_at_thread_counts(call, assert_same)


HOT_SHARES = pytest.mark.parametrize("hot", [0.0, 0.5, 0.75], ids=["spread", "half hot", "hot"])


@HOT_SHARES
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_sums_have_the_bits_of_the_c_order_fold(dtype, index_dtype, hot):
    bins = BINS if dtype == np.float32 else BINS // 2  # both 16 MB and more
    data, indices, updates = histogram_inputs(bins, UPDATES, dtype, hot)
    indices = indices.astype(index_dtype)
    result = at_every_thread_count(
        lambda: sk.scatter_elements_update(data, indices, updates, 0, reduction="sum")
    )
    expected = data.copy()
    np.add.at(expected, indices, updates)  # C order, in the data's type
    assert_same(result, expected)


@pytest.mark.parametrize("shift", [0, 1, 4, 17])
def test_out_at_any_offset_in_its_page_gets_the_same_bits(shift):
    # Each range's scratch takes out's offset in its page (ranges.hpp, at_page_offset_of).
    data, indices, updates = histogram_inputs(BINS, UPDATES, np.float32, seed=11)
    out = np.empty(BINS + shift, np.float32)[shift:]
    result = at_every_thread_count(
        lambda: sk.scatter_elements_update(
            data, indices, updates, 0, reduction="sum", out=out
        ).copy()
    )
    expected = data.copy()
    np.add.at(expected, indices, updates)
    assert_same(result, expected)


@pytest.mark.parametrize("hot", [0.0, 0.75], ids=["spread", "hot"])
@pytest.mark.parametrize("reduction", ["max", "min"])
def test_min_and_max_keep_the_oracles_nans_and_signed_zeros(reduction, hot):
    # Few updates, for the pure-Python oracle: still one per 64 bins, so this call goes by
    # ranges, or hot, on one thread, folds in place.
    n = BINS // 60
    data, indices, updates = histogram_inputs(BINS, n, np.float32, hot, seed=8)
    step = BINS // 4096  # the targets' spacing (histogram_inputs)
    data[: 64 * step : step] = 0.0
    data[1 : 200 * step : step] = np.nan
    updates[::7] = np.nan
    updates[1::11] = -0.0
    result = at_every_thread_count(
        lambda: sk.scatter_elements_update(data, indices, updates, 0, reduction=reduction)
    )
    assert_same(result, ref_scatter_elements_update(data, indices, updates, 0, reduction))


def test_exact_max_gives_one_thread_bits():
    # Exact max orders -0 below +0, so the parts' merge order cannot show in the bits.
    data, indices, updates = histogram_inputs(BINS, UPDATES, np.float32)
    updates[::5] = -0.0
    updates[1::5] = 0.0
    data[::3] = -0.0
    at_every_thread_count(
        lambda: sk.scatter_elements_update(data, indices, updates, 0, reduction="max", exact=True)
    )


@pytest.mark.parametrize(
    "dtype, reduction, ufunc, start",
    [(np.int32, "sum", np.add, 2**31 - 5), (np.int64, "prod", np.multiply, 3)],
    ids=["int32-sum", "int64-prod"],
)
def test_integer_folds_wrap_as_numpy_does(dtype, reduction, ufunc, start):
    bins = BINS * 4 // np.dtype(dtype).itemsize  # 16 MB and more
    _, indices, _ = histogram_inputs(bins, UPDATES, np.float32)
    data = np.full(bins, start, dtype)
    updates = (np.arange(UPDATES) % 7 + 1).astype(dtype)
    result = at_every_thread_count(
        lambda: sk.scatter_elements_update(data, indices, updates, 0, reduction=reduction)
    )
    expected = data.copy()
    ufunc.at(expected, indices, updates)
    assert_same(result, expected)


def test_out_and_in_place_give_the_returned_bits():
    sk.set_num_threads(2)
    data, indices, updates = histogram_inputs(BINS, UPDATES, np.float32)
    returned = sk.scatter_elements_update(data, indices, updates, 0, reduction="sum")
    out = np.empty_like(data)
    assert sk.scatter_elements_update(data, indices, updates, 0, reduction="sum", out=out) is out
    assert_same(out, returned)
    in_place = data.copy()
    sk.scatter_elements_update(in_place, indices, updates, 0, reduction="sum", out=in_place)
    assert_same(in_place, returned)


@pytest.mark.parametrize("threads", [1, 2])
@HOT_SHARES
@pytest.mark.parametrize("bad", [BINS, -BINS - 1])
def test_a_bad_index_anywhere_leaves_out_untouched(bad, hot, threads):
    sk.set_num_threads(threads)  # hot on one thread: the in-place fold
    data, indices, updates = histogram_inputs(BINS, UPDATES, np.float32, hot)
    indices[UPDATES - 3] = bad  # late: the other updates would already be folded
    for out_is_data in (False, True):
        out = data.copy() if out_is_data else np.full_like(data, 7.0)
        before = out.copy()
        with pytest.raises(IndexError, match=str(bad)):
            sk.scatter_elements_update(
                out if out_is_data else data, indices, updates, 0, reduction="sum", out=out
            )
        assert_same(out, before)
