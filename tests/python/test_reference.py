"""Checks of the reference oracle itself against the examples of the specification.

If the oracle is wrong every property test is wrong with it, so it is pinned here to the
numbers printed in the seed documents and to a few hand-worked cases of docs/design.md section 2.
"""

import numpy as np
import pytest
from reference import (
    BFLOAT16,
    ref_scatter_elements_update,
    ref_scatter_nd_update,
    ref_scatter_update,
    ref_slice_scatter,
    slice_positions,
)


def test_reference_scatter_nd_example_1():
    out = ref_scatter_nd_update(
        np.array([1, 2, 3, 4, 5, 6, 7, 8]),
        np.array([[4], [3], [1], [7]]),
        np.array([9, 10, 11, 12]),
    )
    assert out.tolist() == [1, 11, 3, 10, 9, 6, 7, 12]


def test_reference_scatter_nd_example_2():
    block_a = [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]]
    block_b = [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]
    data = np.array([block_a, block_a, block_b, block_b])
    upd = np.array([[[5] * 4, [6] * 4, [7] * 4, [8] * 4], [[1] * 4, [2] * 4, [3] * 4, [4] * 4]])
    out = ref_scatter_nd_update(data, np.array([[0], [2]]), upd)
    assert out.tolist() == [upd[0].tolist(), block_a, upd[1].tolist(), block_b]


@pytest.mark.parametrize(
    ("data", "indices", "updates", "axis", "reduction", "use_init_val", "expected"),
    [
        (
            [2, 3, 4, 6],
            [1, 0, 0, -2, -1, 2],
            [10, 20, 30, 40, 70, 60],
            0,
            "sum",
            True,
            [52, 13, 104, 76],
        ),
        (
            [2, 3, 4, 6],
            [1, 0, 0, 2, 3, 2],
            [10, 20, 30, 40, 70, 60],
            0,
            "sum",
            False,
            [50, 10, 100, 70],
        ),
        (
            [[0] * 4] * 3,
            [[1, 2], [0, 3]],
            [[11, 12], [13, 14]],
            1,
            "none",
            True,
            [[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]],
        ),
        (
            [[1] * 4] * 3,
            [[1, 1], [0, 3]],
            [[11, 12], [13, 14]],
            1,
            "sum",
            True,
            [[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]],
        ),
        (
            [[2] * 4] * 3,
            [[1, 1], [0, 3]],
            [[11, 12], [13, 14]],
            1,
            "prod",
            True,
            [[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]],
        ),
    ],
    ids=["example1", "example2", "example3", "example4", "example5"],
)
def test_reference_scatter_elements_v12_examples(
    data, indices, updates, axis, reduction, use_init_val, expected
):
    for dtype in (np.int32, np.float32):
        out = ref_scatter_elements_update(
            np.array(data, dtype),
            np.array(indices),
            np.array(updates, dtype),
            axis,
            reduction=reduction,
            use_init_val=use_init_val,
        )
        assert out.dtype == dtype
        assert out.tolist() == expected


def test_reference_slice_scatter_examples():
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    out = ref_slice_scatter(data, np.array([[10, 20, 30, 40, 50]], np.float32), [0], [1], [1], [0])
    assert out.tolist() == [[10, 20, 30, 40, 50], [5, 6, 7, 8, 9]]
    out = ref_slice_scatter(
        data, np.array([[10, 20, 30], [40, 50, 60]], np.float32), [-25], [25], [2], [1]
    )
    assert out.tolist() == [[10, 1, 20, 3, 30], [40, 6, 50, 8, 60]]


def test_reference_slice_positions_clamping():
    assert slice_positions(-25, 25, 2, 5) == [0, 2, 4]
    assert slice_positions(2**63 - 1, -(2**63), -1, 4) == [3, 2, 1, 0]
    assert slice_positions(-100, -100, -1, 5) == [0]  # start clamps to 0, stop to -1
    assert slice_positions(7, 0, 1, 5) == []
    assert slice_positions(-1, -6, -2, 5) == [4, 2, 0]
    assert slice_positions(0, 5, 2**63 - 1, 5) == [0]
    assert slice_positions(4, 0, -(2**63), 5) == [4]
    assert slice_positions(0, 5, 1, 0) == []
    assert slice_positions(-1, 0, -1, 0) == []
    with pytest.raises(ValueError, match="step"):
        slice_positions(0, 1, 0, 3)


def test_reference_scatter_update_shapes():
    data = np.zeros((2, 3), np.int64)
    out = ref_scatter_update(data, np.array(1), np.array([7, 8]), 1)  # 0-D indices
    assert out.tolist() == [[0, 7, 0], [0, 8, 0]]
    out = ref_scatter_update(data, np.array([[2], [0]]), np.array([[[1], [2]], [[3], [4]]]), -1)
    assert out.tolist() == [[2, 0, 1], [4, 0, 3]]
    with pytest.raises(IndexError, match="index -1 is out of bounds for axis 1 with size 3"):
        ref_scatter_update(data, np.array([-1]), np.zeros((2, 1), np.int64), 1)


def test_reference_wrapping_and_identities():
    out = ref_scatter_elements_update(
        np.array([120, 5], np.int8),
        np.array([0, 0]),
        np.array([100, 100], np.int8),
        0,
        reduction="sum",
    )
    assert out.tolist() == [(120 + 200 + 128) % 256 - 128, 5]
    out = ref_scatter_elements_update(
        np.array([7, 7], np.uint8),
        np.array([1]),
        np.array([3], np.uint8),
        0,
        reduction="min",
        use_init_val=False,
    )
    assert out.tolist() == [7, 3]
    out = ref_scatter_elements_update(
        np.array([-7, 7], np.int64),
        np.array([0, 0, 1]),
        np.array([0, 1, -1], np.int64),
        0,
        reduction="mean",
    )
    assert out.tolist() == [-2, 3]  # floor(-6/3) = -2, floor(6/2) = 3
    out = ref_scatter_elements_update(
        np.array([-7, 7], np.int64),
        np.array([0, 0]),
        np.array([0, 2], np.int64),
        0,
        reduction="mean",
    )
    assert out.tolist() == [-2, 7]  # floor(-5/3) = -2 (truncation would give -1)
    out = ref_scatter_elements_update(
        np.array([-7, 7], np.int64),
        np.array([0, 0]),
        np.array([0, 2], np.int64),
        0,
        reduction="mean",
        use_init_val=False,
    )
    assert out.tolist() == [1, 7]
    big = np.iinfo(np.uint64).max
    out = ref_scatter_elements_update(
        np.array([big], np.uint64),
        np.array([0, 0]),
        np.array([big, big - 3], np.uint64),
        0,
        reduction="mean",
    )
    assert out.tolist() == [big - 1]  # exact: no wrap in the mean's accumulator


def test_reference_half_precision_accumulates_in_float32():
    out = ref_scatter_elements_update(
        np.array([2048], np.float16),
        np.array([0, 0]),
        np.array([1, 1], np.float16),
        0,
        reduction="sum",
    )
    assert out.tolist() == [2050.0]  # folding in float16 would stick at 2048
    out = ref_scatter_nd_update(
        np.array([256], BFLOAT16), np.array([[0], [0]]), np.array([1, 1], BFLOAT16), reduction="sum"
    )
    assert out.astype(np.float32).tolist() == [258.0]
    out = ref_scatter_elements_update(
        np.array([0], np.float16),
        np.array([0, 0, 0]),
        np.array([1, 1, 2], np.float16),
        0,
        reduction="mean",
    )
    assert out.tolist() == [1.0]


def test_reference_bool_and_nan_rules():
    data = np.array([True, False, True, False])
    idx = np.array([[0], [1], [1], [3]])
    upd = np.array([True, True, True, False])
    assert ref_scatter_nd_update(data, idx, upd, "sub").tolist() == [False, False, True, False]
    assert ref_scatter_nd_update(data, idx, upd, "prod").tolist() == [True, False, True, False]
    assert ref_scatter_nd_update(data, idx, upd, "max").tolist() == [True, True, True, False]
    out = ref_scatter_elements_update(
        data, np.array([1, 2]), np.array([True, False]), 0, reduction="min", use_init_val=False
    )
    assert out.tolist() == [True, True, False, False]
    out = ref_scatter_nd_update(
        np.array([1.0, np.nan]),
        np.array([[0], [0], [1]]),
        np.array([np.nan, 5.0, 0.0]),
        reduction="min",
    )
    assert np.isnan(out).all()
    with pytest.raises(TypeError, match="mean"):
        ref_scatter_elements_update(data, np.array([0]), np.array([True]), 0, reduction="mean")
