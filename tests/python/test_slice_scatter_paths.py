"""slice_scatter's two kernels (fused single pass for blocks >= 64 bytes, copy then
scatter otherwise) against NumPy slice assignment, for in-range slices where the
OpenVINO clamping rule and Python's agree."""

import numpy as np
import pytest

import scatterkit as sk

CASES = [
    # shape, starts, stops, steps, axes
    ((6, 7, 9), [1], [6], [2], [0]),  # one block per (i): 7*9 elements
    ((6, 7, 9), [5], [0], [-2], [0]),
    ((6, 7, 9), [0, 6], [6, 0], [3, -3], [0, 1]),  # two sliced axes, fused blocks of 9
    ((6, 7, 9), [2], [9], [3], [2]),  # last axis sliced: the copy-then-scatter path
    ((40, 3, 16), [1, 0], [39, 3], [4, 1], [0, 1]),
    ((2, 300), [0], [300], [1], [1]),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128])
@pytest.mark.parametrize(("shape", "starts", "stops", "steps", "axes"), CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_slice_scatter_matches_numpy_slicing(
    rng, dtype, shape, starts, stops, steps, axes, threads
):
    sk.set_num_threads(threads)
    data = (rng.random(shape) * 100).astype(dtype)
    index = [slice(None)] * len(shape)
    for start, stop, step, axis in zip(starts, stops, steps, axes):
        index[axis] = slice(start, stop if stop >= 0 or step > 0 else None, step)
    expected = data.copy()
    updates = (rng.random(expected[tuple(index)].shape) * 100).astype(dtype)
    expected[tuple(index)] = updates
    got = sk.slice_scatter(data, updates, starts, stops, steps, axes)
    assert np.array_equal(got, expected)
    buffer = np.empty_like(data)
    assert sk.slice_scatter(data, updates, starts, stops, steps, axes, out=buffer) is buffer
    assert np.array_equal(buffer, expected)
    inplace = data.copy()
    sk.slice_scatter(inplace, updates, starts, stops, steps, axes, out=inplace)
    assert np.array_equal(inplace, expected)


def test_slice_scatter_large_fused_threads_identical(rng):
    data = rng.random((300, 256, 10, 4), dtype=np.float32)
    updates = rng.random((300, 128, 10, 4), dtype=np.float32)
    sk.set_num_threads(1)
    one = sk.slice_scatter(data, updates, 0, 256, 2, 1)
    sk.set_num_threads(2)
    two = sk.slice_scatter(data, updates, 0, 256, 2, 1)
    expected = data.copy()
    expected[:, ::2] = updates
    assert np.array_equal(one, expected) and one.tobytes() == two.tobytes()
