"""Large outputs are written with streaming stores through a line-staging writer:
pieces that do not line up with cache lines, outputs that start mid-line and
thread ranges that meet mid-line must still give exact results."""

import numpy as np
import pytest

import scatterkit as sk

BIG = 3_000_000  # float32 elements: 12 MB, above the streaming threshold


def _offset_view(n: int, offset: int) -> np.ndarray:
    # A C-contiguous float32 array starting `offset` elements into a 64-byte-aligned buffer.
    base = np.zeros(n + 64, np.float32)
    return base[offset : offset + n]


@pytest.mark.parametrize("slab", [1, 7, 16, 150])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 3])
def test_scatter_update_large_outputs_exact(rng, slab, threads, offset):
    sk.set_num_threads(threads)
    rows = BIG // slab
    data = rng.random((rows, slab), dtype=np.float32)
    indices = rng.integers(0, rows, rows // 3)
    updates = rng.random((indices.size, slab), dtype=np.float32)
    expected = data.copy()
    expected[indices] = updates  # NumPy: last write wins as well
    out = _offset_view(data.size, offset).reshape(data.shape)
    assert sk.scatter_update(data, indices, updates, 0, out=out) is out
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 5])
def test_slice_scatter_and_copy_large_outputs_exact(rng, threads, offset):
    sk.set_num_threads(threads)
    data = rng.random((1000, 37, 9), dtype=np.float32)  # blocks of 36 bytes and 333 elements
    updates = rng.random((1000, 12, 9), dtype=np.float32)
    expected = data.copy()
    expected[:, 1::3] = updates
    out = _offset_view(data.size, offset).reshape(data.shape)
    sk.slice_scatter(data, updates, 1, 37, 3, 1, out=out)
    assert np.array_equal(out, expected)
    # A plain copy of data plus a few element updates: parallel_copy's streamed ranges.
    idx = rng.integers(0, 1000, (3, 37, 9))
    upd = rng.random((3, 37, 9), dtype=np.float32)
    got = sk.scatter_elements_update(data, idx, upd, 0, out=out)
    want = data.copy()
    for p in np.ndindex(idx.shape):
        want[idx[p], p[1], p[2]] = upd[p]
    assert np.array_equal(got, want)
