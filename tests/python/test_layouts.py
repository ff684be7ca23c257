"""Aliasing and layout are handled, not rejected.

Every case is checked against the oracle run on plain C-contiguous native copies of the
same inputs: byte-swapped, strided, reversed, zero-size and overlapping arrays must give
exactly the answer their values call for.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_same
from reference import (
    ref_scatter_elements_update,
    ref_scatter_nd_update,
    ref_scatter_update,
    ref_slice_scatter,
)

import scatterkit as sk


def _plain(a):
    """A C-contiguous, native-order copy: what the oracle is given."""
    a = np.asarray(a)
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="))) if a.ndim else a.copy()


# name: (function, oracle, data, builder(data) -> (args after data, keyword args))
def _cases():
    d = np.arange(4 * 6 * 5, dtype=np.float64).reshape(4, 6, 5)
    return {
        "scatter_update": (
            sk.scatter_update,
            ref_scatter_update,
            d,
            lambda idx, upd: ((idx, upd, 1), {}),
            np.array([4, 0, 4]),
            np.arange(4 * 3 * 5, dtype=np.float64).reshape(4, 3, 5) - 100,
        ),
        "scatter_elements_update": (
            sk.scatter_elements_update,
            ref_scatter_elements_update,
            d,
            lambda idx, upd: ((idx, upd, 1), {"reduction": "sum"}),
            np.array([[[5, 0, 5, 1, 2]] * 3] * 4).astype(np.int64),
            np.arange(4 * 3 * 5, dtype=np.float64).reshape(4, 3, 5) - 100,
        ),
        "scatter_nd_update": (
            sk.scatter_nd_update,
            ref_scatter_nd_update,
            d,
            lambda idx, upd: ((idx, upd), {"reduction": "max"}),
            np.array([[3, 1], [0, 5], [3, 1]]),
            np.arange(3 * 5, dtype=np.float64).reshape(3, 5) * 7.0,
        ),
    }


LAYOUTS = {
    "big-endian": lambda a: a.astype(a.dtype.newbyteorder(">")),
    "little-endian": lambda a: a.astype(a.dtype.newbyteorder("<")),
    "reversed": lambda a: np.flip(np.flip(a).copy()),
    "fortran": lambda a: np.asfortranarray(a),
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
    "unaligned": lambda a: _unaligned(a),
}


def _unaligned(a: np.ndarray) -> np.ndarray:
    raw = np.zeros(a.nbytes + 1, np.uint8)[1:]
    view = raw.view(a.dtype).reshape(a.shape)
    view[...] = a
    assert not view.flags.aligned or a.dtype.itemsize == 1
    return view


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("which", ["data", "indices", "updates"])
@pytest.mark.parametrize("op", sorted(_cases()))
def test_any_layout_of_any_input_gives_the_plain_answer(op, which, layout):
    fn, oracle, data, build, idx, upd = _cases()[op]
    args, kwargs = build(_plain(idx), _plain(upd))
    expected = oracle(_plain(data), *args, **kwargs)
    inputs = {"data": data, "indices": idx, "updates": upd}
    inputs[which] = LAYOUTS[layout](inputs[which])
    snapshots = {k: np.array(v, copy=True) for k, v in inputs.items()}
    args, kwargs = build(inputs["indices"], inputs["updates"])
    result = fn(inputs["data"], *args, **kwargs)
    assert result.dtype.isnative and result.flags.c_contiguous
    assert_same(result, expected)
    for key, value in inputs.items():  # and nothing given was written
        np.testing.assert_array_equal(value, snapshots[key])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_slice_scatter_any_layout(layout):
    data = np.arange(30.0).reshape(5, 6)
    upd = -np.arange(15.0).reshape(5, 3)
    expected = ref_slice_scatter(data, upd, 5, -8, -2, 1)
    for d, u in ((LAYOUTS[layout](data), upd), (data, LAYOUTS[layout](upd))):
        assert_same(sk.slice_scatter(d, u, 5, -8, -2, 1), expected)


# --- inputs that are views of the output ------------------------------------------------


def test_indices_viewing_data_in_place_are_read_before_writing():
    # indices are the first row of data itself; writing row 0 must not change which rows the
    # later indices name.
    pristine = np.array([[2, 1, 0], [10, 11, 12], [20, 21, 22]], np.int64)
    expected = ref_scatter_update(pristine, pristine[0].copy(), pristine[::-1].copy() * 0 + 7, 0)
    data = pristine.copy()
    assert sk.scatter_update(data, data[0], np.full((3, 3), 7, np.int64), 0, out=data) is data
    assert_same(data, expected)


def test_scatter_elements_indices_and_updates_viewing_data_in_place():
    pristine = np.array([[1, 0, 2], [0, 2, 1], [5, 6, 7]], np.int64)
    idx, upd = pristine[:2].copy(), pristine[1:].copy()
    expected = ref_scatter_elements_update(pristine, idx, upd, 1, reduction="sum")
    data = pristine.copy()
    sk.scatter_elements_update(data, data[:2], data[1:], 1, reduction="sum", out=data)
    assert_same(data, expected)


def test_scatter_nd_indices_viewing_data_in_place():
    pristine = np.array([[1, 0], [0, 1], [1, 1]], np.int64)
    idx = pristine[:, :1].copy()  # rows named by data's first column
    expected = ref_scatter_nd_update(pristine, idx, pristine[::-1, :].copy(), reduction="sum")
    data = pristine.copy()
    sk.scatter_nd_update(data, data[:, :1], data[::-1, :], reduction="sum", out=data)
    assert_same(data, expected)


def test_out_partially_overlapping_data():
    # out and data are windows of one buffer shifted by one element: the result is computed
    # from data as it was.
    buffer = np.arange(10.0)
    data, out = buffer[0:8], buffer[2:10]
    expected = ref_slice_scatter(data.copy(), [-1.0, -2.0], 0, 8, 4, 0)
    sk.slice_scatter(data, [-1.0, -2.0], 0, 8, 4, 0, out=out)
    assert_same(out, expected)


# --- zero-size dimensions -----------------------------------------------------------------


@pytest.mark.parametrize(
    "shape", [(0,), (0, 3), (3, 0), (2, 0, 4)], ids=lambda s: "x".join(map(str, s))
)
def test_zero_size_data(shape):
    data = np.zeros(shape, np.float32)
    axis = len(shape) - 1
    empty_idx = np.zeros((*shape[:axis], 0, *shape[axis + 1 :]), np.int64)
    res = sk.scatter_elements_update(data, empty_idx, empty_idx.astype(np.float32), axis)
    assert res.shape == shape
    res = sk.scatter_update(
        data, np.zeros(0, np.int64), np.zeros(empty_idx.shape, np.float32), axis
    )
    assert res.shape == shape
    res = sk.scatter_nd_update(data, np.zeros((0, 1), np.int64), np.zeros((0, *shape[1:])))
    assert res.shape == shape
    res = sk.slice_scatter(data, np.zeros(empty_idx.shape, np.float32), 0, 0, 1, axis)
    assert res.shape == shape


def test_zero_size_updates_leave_data_as_it_was():
    data = np.arange(12.0).reshape(3, 4)
    assert_same(sk.scatter_update(data, np.zeros((2, 0), np.int64), np.zeros((3, 2, 0)), 1), data)
    assert_same(
        sk.scatter_elements_update(data, np.zeros((3, 0), np.int64), np.zeros((3, 0)), 1), data
    )
    assert_same(sk.scatter_nd_update(data, np.zeros((0, 2), np.int64), np.zeros(0)), data)
    assert_same(sk.slice_scatter(data, np.zeros((3, 0)), 2, 2, 1, 1), data)
    assert_same(sk.slice_scatter(data, np.zeros((0, 4)), 9, 20, 1, 0), data)


def test_zero_size_trailing_dimension_with_nonempty_indices():
    # Slabs of zero bytes: every index is still checked, nothing is written.
    data = np.zeros((4, 0), np.float32)
    res = sk.scatter_update(data, np.array([3, 1]), np.zeros((2, 0), np.float32), 0)
    assert res.shape == (4, 0)
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        sk.scatter_update(data, np.array([4]), np.zeros((1, 0), np.float32), 0)
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        sk.scatter_nd_update(data, np.array([[4]]), np.zeros((1, 0), np.float32))
