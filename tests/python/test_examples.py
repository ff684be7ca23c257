"""Every numeric example of the specification, with the values printed in the seed documents.

Plus small hand-worked examples for ScatterUpdate-3 (0-D, 1-D and N-D indices) and the 3-D
formula of ScatterElementsUpdate-3.  Expected values are literal, not computed by the oracle.
"""

import numpy as np
import pytest
from conftest import BFLOAT16

import scatterkit as sk

# Dtypes that hold every value of the examples exactly (264 rules out the 8-bit ones).
EXAMPLE_DTYPES = [
    np.int16,
    np.int32,
    np.int64,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    BFLOAT16,
    np.float32,
    np.float64,
]
EXAMPLE_IDS = [np.dtype(t).name for t in EXAMPLE_DTYPES]


def assert_values(result, expected, dtype):
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(result.astype(np.float64), np.array(expected, np.float64))


# --- ScatterNDUpdate-3 ----------------------------------------------------------------------

ND_EXAMPLE_1 = dict(
    data=[1, 2, 3, 4, 5, 6, 7, 8],
    indices=[[4], [3], [1], [7]],
    updates=[9, 10, 11, 12],
    output=[1, 11, 3, 10, 9, 6, 7, 12],
)
_A = [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]]
_B = [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]
_U0 = [[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]]
_U1 = [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]]
ND_EXAMPLE_2 = dict(
    data=[_A, _A, _B, _B],
    indices=[[0], [2]],
    updates=[_U0, _U1],
    output=[_U0, _A, _U1, _B],
)


@pytest.mark.parametrize("example", [ND_EXAMPLE_1, ND_EXAMPLE_2], ids=["example1", "example2"])
@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
@pytest.mark.parametrize(
    "op",
    [sk.scatter_nd_update, sk.get_op("ScatterNDUpdate-3"), sk.get_op("ScatterNDUpdate-15")],
    ids=["top-level", "v3", "v15"],
)
def test_scatter_nd_update_spec_examples(op, dtype, example):
    data = np.array(example["data"], dtype)
    before = data.copy()
    for index_dtype in (np.int32, np.int64):
        out = op(
            data, np.array(example["indices"], index_dtype), np.array(example["updates"], dtype)
        )
        assert_values(out, example["output"], dtype)
    np.testing.assert_array_equal(data, before)


def test_scatter_nd_update_example_1_in_place():
    data = np.array(ND_EXAMPLE_1["data"], np.float32)
    out = sk.scatter_nd_update(
        data,
        np.array(ND_EXAMPLE_1["indices"]),
        np.array(ND_EXAMPLE_1["updates"], np.float32),
        out=data,
    )
    assert out is data
    assert data.tolist() == ND_EXAMPLE_1["output"]


# --- ScatterElementsUpdate-12 ---------------------------------------------------------------

SE12_EXAMPLES = {
    "example1": dict(
        data=[2, 3, 4, 6],
        indices=[1, 0, 0, -2, -1, 2],
        updates=[10, 20, 30, 40, 70, 60],
        axis=[0],
        reduction="sum",
        use_init_val=True,
        output=[52, 13, 104, 76],
    ),
    "example2": dict(
        data=[2, 3, 4, 6],
        indices=[1, 0, 0, 2, 3, 2],
        updates=[10, 20, 30, 40, 70, 60],
        axis=[0],
        reduction="sum",
        use_init_val=False,
        output=[50, 10, 100, 70],
    ),
    "example3": dict(
        data=[[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        indices=[[1, 2], [0, 3]],
        updates=[[11, 12], [13, 14]],
        axis=[1],
        reduction="none",
        use_init_val=True,
        output=[[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]],
    ),
    "example4": dict(
        data=[[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]],
        indices=[[1, 1], [0, 3]],
        updates=[[11, 12], [13, 14]],
        axis=[1],
        reduction="sum",
        use_init_val=True,
        output=[[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]],
    ),
    "example5": dict(
        data=[[2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2]],
        indices=[[1, 1], [0, 3]],
        updates=[[11, 12], [13, 14]],
        axis=[1],
        reduction="prod",
        use_init_val=True,
        output=[[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]],
    ),
}


@pytest.mark.parametrize("name", sorted(SE12_EXAMPLES))
@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
@pytest.mark.parametrize(
    "op",
    [sk.scatter_elements_update, sk.get_op("ScatterElementsUpdate-12")],
    ids=["top-level", "v12"],
)
def test_scatter_elements_update_v12_spec_examples(op, dtype, name):
    ex = SE12_EXAMPLES[name]
    data = np.array(ex["data"], dtype)
    before = data.copy()
    for index_dtype in (np.int8, np.int32, np.int64):
        out = op(
            data,
            np.array(ex["indices"], index_dtype),
            np.array(ex["updates"], dtype),
            np.array(ex["axis"], np.int32),
            reduction=ex["reduction"],
            use_init_val=ex["use_init_val"],
        )
        assert_values(out, ex["output"], dtype)
    np.testing.assert_array_equal(data, before)


def test_scatter_elements_update_v12_example_1_negative_indices_rejected_by_v3():
    ex = SE12_EXAMPLES["example1"]
    v3 = sk.get_op("ScatterElementsUpdate-3")
    with pytest.raises(IndexError, match="index -2 is out of bounds for axis 0 with size 4"):
        v3(np.array(ex["data"]), np.array(ex["indices"]), np.array(ex["updates"]), 0)


def test_scatter_elements_update_v3_example_3():
    ex = SE12_EXAMPLES["example3"]
    v3 = sk.get_op("ScatterElementsUpdate-3")
    out = v3(
        np.array(ex["data"], np.int32),
        np.array(ex["indices"]),
        np.array(ex["updates"], np.int32),
        np.array([1]),
    )
    assert out.dtype == np.int32
    assert out.tolist() == ex["output"]


def test_scatter_elements_update_v12_example_4_in_place():
    ex = SE12_EXAMPLES["example4"]
    data = np.array(ex["data"], np.int32)
    out = sk.scatter_elements_update(
        data,
        np.array(ex["indices"]),
        np.array(ex["updates"], np.int32),
        1,
        reduction="sum",
        out=data,
    )
    assert out is data
    assert data.tolist() == ex["output"]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scatter_elements_update_v3_3d_formula(axis):
    # output[indices[i][j][k]][j][k] = updates[i][j][k] (axis 0), and likewise for axes 1, 2,
    # written out literally for a (2, 3, 4) data tensor and a (2, 2, 3) indices tensor whose
    # index values are distinct along the axis (so the spec's undefined order is not involved).
    data = np.arange(24, dtype=np.int64).reshape(2, 3, 4) * -1
    indices_by_axis = {
        0: [[[1, 0, 1], [0, 1, 0]], [[0, 1, 0], [1, 0, 1]]],
        1: [[[2, 0, 1], [0, 1, 2]], [[1, 2, 0], [2, 0, 1]]],
        2: [[[3, 0, 1], [2, 1, 0]], [[0, 3, 2], [1, 2, 3]]],
    }
    a = axis % 3
    indices = np.array(indices_by_axis[a])
    updates = 100 + np.arange(12).reshape(2, 2, 3)
    expected = data.copy()
    for i in range(2):
        for j in range(2):
            for k in range(3):
                v = indices[i][j][k]
                if a == 0:
                    expected[v][j][k] = updates[i][j][k]
                elif a == 1:
                    expected[i][v][k] = updates[i][j][k]
                else:
                    expected[i][j][v] = updates[i][j][k]
    for op in (sk.get_op("ScatterElementsUpdate-3"), sk.scatter_elements_update):
        out = op(data, indices, updates, axis)
        np.testing.assert_array_equal(out, expected)


def test_scatter_elements_update_v3_3d_hand_values():
    data = np.zeros((2, 2, 2), np.int32)
    indices = np.array([[[1, 0]], [[0, 0]]])  # shape (2, 1, 2), axis 2
    updates = np.array([[[5, 6]], [[7, 8]]], np.int32)
    out = sk.get_op("ScatterElementsUpdate-3")(data, indices, updates, 2)
    # [0][0][1]=5, [0][0][0]=6, [1][0][0]=7 then 8 (C order: last write wins)
    assert out.tolist() == [[[6, 5], [0, 0]], [[8, 0], [0, 0]]]


# --- ScatterUpdate-3 ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
def test_scatter_update_0d_indices(dtype):
    data = np.zeros((3, 2), dtype)
    for op in (sk.scatter_update, sk.get_op("ScatterUpdate-3")):
        out = op(data, np.array(1), np.array([7, 8], dtype), 0)  # data[1, ...] = updates[...]
        assert_values(out, [[0, 0], [7, 8], [0, 0]], dtype)


@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
def test_scatter_update_1d_indices(dtype):
    data = np.ones((4, 2), dtype)
    out = sk.scatter_update(data, np.array([3, 0]), np.array([[1, 2], [3, 4]], dtype), 0)
    assert_values(out, [[3, 4], [1, 1], [1, 1], [1, 2]], dtype)


def test_scatter_update_nd_indices_axis_1():
    # out[i, indices[m, n]] = updates[i, m, n]
    data = np.zeros((2, 5), np.int32)
    indices = np.array([[4, 0], [2, 1]])
    updates = (10 + np.arange(8)).reshape(2, 2, 2).astype(np.int32)
    out = sk.scatter_update(data, indices, updates, np.array([1]))
    assert out.tolist() == [[11, 13, 12, 0, 10], [15, 17, 16, 0, 14]]


def test_scatter_update_nd_indices_axis_0():
    # data[indices[i, j], ...] = updates[i, j, ...]
    data = np.zeros((4, 3), np.float32)
    indices = np.array([[3], [1]])
    updates = np.array([[[1, 2, 3]], [[4, 5, 6]]], np.float32)
    out = sk.scatter_update(data, indices, updates, 0)
    assert out.tolist() == [[0, 0, 0], [4, 5, 6], [0, 0, 0], [1, 2, 3]]


def test_scatter_update_spec_layer_shapes_scaled_down():
    # The spec's layer: data [1000, 256, 10, 15], indices [125, 20], axis [1],
    # updates [1000, 125, 20, 10, 15]; here each dim is cut down, the structure kept.
    rng = np.random.default_rng(3)
    data = rng.normal(size=(6, 9, 2, 3)).astype(np.float32)
    indices = rng.permutation(9)[:6].reshape(3, 2)
    updates = rng.normal(size=(6, 3, 2, 2, 3)).astype(np.float32)
    out = sk.scatter_update(data, indices, updates, np.array([1], np.int64))
    expected = data.copy()
    for m in range(3):
        for n in range(2):
            expected[:, indices[m, n], :, :] = updates[:, m, n, :, :]
    np.testing.assert_array_equal(out, expected)


def test_scatter_update_negative_index_is_error():
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 0 with size 3"):
        sk.scatter_update(np.zeros(3), np.array([-1]), np.array([1.0]), 0)


# --- SliceScatter-15 ------------------------------------------------------------------------

SLICE_DATA = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
@pytest.mark.parametrize(
    "op", [sk.slice_scatter, sk.get_op("SliceScatter-15")], ids=["top-level", "v15"]
)
def test_slice_scatter_example_1_fill_slice_over_axis_0(op, dtype):
    data = np.array(SLICE_DATA, dtype)
    one = np.array([1], np.int32)
    out = op(
        data,
        np.array([[10, 20, 30, 40, 50]], dtype),
        np.array([0], np.int32),
        one,
        one,
        np.array([0], np.int32),
    )
    assert_values(out, [[10, 20, 30, 40, 50], [5, 6, 7, 8, 9]], dtype)


@pytest.mark.parametrize("dtype", EXAMPLE_DTYPES, ids=EXAMPLE_IDS)
@pytest.mark.parametrize(
    "op", [sk.slice_scatter, sk.get_op("SliceScatter-15")], ids=["top-level", "v15"]
)
def test_slice_scatter_example_2_every_second_value_clamped(op, dtype):
    data = np.array(SLICE_DATA, dtype)
    out = op(
        data,
        np.array([[10, 20, 30], [40, 50, 60]], dtype),
        np.array([-25], np.int32),
        np.array([25], np.int32),
        np.array([2], np.int32),
        np.array([1], np.int32),
    )
    assert_values(out, [[10, 1, 20, 3, 30], [40, 6, 50, 8, 60]], dtype)
