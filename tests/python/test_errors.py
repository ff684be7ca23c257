"""Bad inputs: the right exception type, a helpful message, and nothing written.

Every case is run three times: with ``out=None``, with a fresh ``out`` buffer and with
``out=data``; each time ``data`` (and the fresh ``out``) must keep every byte it had.  The bad
item is put last wherever the input has an order, so an implementation that wrote before it
validated would be caught.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from conftest import BFLOAT16, INDEX_DTYPES, STRUCT_DTYPE, assert_same, random_values
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import ref_scatter_elements_update, ref_scatter_nd_update, ref_scatter_update

import scatterkit as sk

U64_MAX = 2**64 - 1
I64_MIN = -(2**63)

su3 = sk.get_op("ScatterUpdate-3")
se3 = sk.get_op("ScatterElementsUpdate-3")
se12 = sk.get_op("ScatterElementsUpdate-12")
nd3 = sk.get_op("ScatterNDUpdate-3")
nd15 = sk.get_op("ScatterNDUpdate-15")
ss15 = sk.get_op("SliceScatter-15")


@dataclass
class Case:
    """``call(data, out)`` must raise ``exc`` matching ``match`` for this ``data``."""

    data: Callable[[], np.ndarray]
    call: Callable[[np.ndarray, object], object]
    exc: type
    match: str


def _f32(*shape):
    return lambda: np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 0.5


def _i32(*shape):
    return lambda: np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) - 3


def _ones(n, dtype=np.float32):
    return np.full(n, 9, dtype)


CASES = {
    # --- indices out of range ---------------------------------------------------------------
    "scatter_update-positive": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0, 4, 7]), np.ones((3, 3), np.float32), 1, out=out
        ),
        IndexError,
        "index 7 is out of bounds for axis 1 with size 5",
    ),
    "scatter_update-negative": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0, 1, -1]), np.ones((3, 3), np.float32), 1, out=out
        ),
        IndexError,
        "index -1 is out of bounds for axis 1 with size 5",
    ),
    "scatter_update-v3-negative": Case(
        _f32(4, 2),
        lambda d, out: su3(d, np.array([[1], [-4]]), np.ones((2, 1, 2), np.float32), 0, out=out),
        IndexError,
        "index -4 is out of bounds for axis 0 with size 4",
    ),
    "scatter_update-uint64-max": Case(
        _f32(4, 2),
        lambda d, out: sk.scatter_update(
            d, np.array([0, U64_MAX], np.uint64), np.ones((2, 2), np.float32), 0, out=out
        ),
        IndexError,
        f"index {U64_MAX} is out of bounds for axis 0 with size 4",
    ),
    "scatter_update-0d-data": Case(
        lambda: np.array(3.0, np.float32),
        lambda d, out: sk.scatter_update(d, np.array(0), np.float32(1), 0, out=out),
        ValueError,
        "data must have rank >= 1, got a 0-D tensor",
    ),
    "scatter_elements-0d-data": Case(
        lambda: np.array(3, np.int32),
        lambda d, out: sk.scatter_elements_update(d, np.array(0), np.int32(1), 0, out=out),
        ValueError,
        "data must have rank >= 1, got a 0-D tensor",
    ),
    "slice_scatter-0d-data": Case(
        lambda: np.array(3.0, np.float32),
        lambda d, out: sk.slice_scatter(d, np.float32(1), 0, 1, 1, 0, out=out),
        ValueError,
        "data must have rank >= 1, got a 0-D tensor",
    ),
    "scatter_update-0d-index": Case(
        _f32(4),
        lambda d, out: sk.scatter_update(d, np.array(4), np.float32(1), 0, out=out),
        IndexError,
        "index 4 is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-positive": Case(
        _i32(2, 5),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([[0, 1], [2, 7]]), np.ones((2, 2), np.int32), 1, out=out
        ),
        IndexError,
        "index 7 is out of bounds for axis 1 with size 5",
    ),
    "scatter_elements-negative-beyond": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([-4, 3, -5]), np.ones(3, np.int32), 0, reduction="sum", out=out
        ),
        IndexError,
        "index -5 is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-int64-min": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([1, I64_MIN], np.int64), np.ones(2, np.int32), 0, out=out
        ),
        IndexError,
        f"index {I64_MIN} is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-v3-negative": Case(
        _i32(4),
        lambda d, out: se3(d, np.array([0, 3, -1]), np.ones(3, np.int32), 0, out=out),
        IndexError,
        "index -1 is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-uint64-max": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([1, U64_MAX], np.uint64), np.ones(2, np.int32), 0, reduction="max", out=out
        ),
        IndexError,
        f"index {U64_MAX} is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-uint32-max": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([1, 2**32 - 1], np.uint32), np.ones(2, np.int32), 0, out=out
        ),
        IndexError,
        f"index {2**32 - 1} is out of bounds for axis 0 with size 4",
    ),
    "scatter_elements-uint8-max": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([1, 255], np.uint8), np.ones(2, np.int32), 0, out=out
        ),
        IndexError,
        "index 255 is out of bounds for axis 0 with size 4",
    ),
    "scatter_nd-positive": Case(
        _f32(8),
        lambda d, out: sk.scatter_nd_update(d, np.array([[4], [3], [8]]), _ones(3), out=out),
        IndexError,
        "index 8 is out of bounds for axis 0 with size 8",
    ),
    "scatter_nd-coordinate-checked-alone": Case(
        # (0, 5) is flat offset 5 < 6, but coordinate 1 is out of its axis of size 3.
        _f32(2, 3),
        lambda d, out: sk.scatter_nd_update(d, np.array([[1, 2], [0, 5]]), _ones(2), out=out),
        IndexError,
        "index 5 is out of bounds for axis 1 with size 3",
    ),
    "scatter_nd-negative-beyond": Case(
        _f32(2, 3),
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[-2, -3], [0, -4]]), _ones(2), reduction="sum", out=out
        ),
        IndexError,
        "index -4 is out of bounds for axis 1 with size 3",
    ),
    "scatter_nd-v3-negative": Case(
        _f32(2, 3),
        lambda d, out: nd3(d, np.array([[1, 2], [-1, 0]]), _ones(2), out=out),
        IndexError,
        "index -1 is out of bounds for axis 0 with size 2",
    ),
    "scatter_nd-uint64-max": Case(
        _f32(2, 3),
        lambda d, out: nd15(d, np.array([[1, 2], [1, U64_MAX]], np.uint64), _ones(2), out=out),
        IndexError,
        f"index {U64_MAX} is out of bounds for axis 1 with size 3",
    ),
    # --- shapes --------------------------------------------------------------------------------
    "scatter_update-updates-shape": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0, 1]), np.ones((2, 3), np.float32), 1, out=out
        ),
        ValueError,
        "updates shape",
    ),
    "scatter_update-0d-updates-for-1d-indices": Case(
        _f32(3),
        lambda d, out: sk.scatter_update(d, np.array([0, 1]), np.float32(1), 0, out=out),
        ValueError,
        "updates shape",
    ),
    "scatter_elements-updates-shape": Case(
        _i32(3, 3),
        lambda d, out: sk.scatter_elements_update(
            d, np.zeros((2, 2), np.int64), np.ones((2, 3), np.int32), 0, out=out
        ),
        ValueError,
        "updates shape",
    ),
    "scatter_elements-rank": Case(
        _i32(3, 3),
        lambda d, out: sk.scatter_elements_update(
            d, np.zeros(3, np.int64), np.ones(3, np.int32), 0, out=out
        ),
        ValueError,
        "rank",
    ),
    "scatter_elements-extent-exceeds": Case(
        _i32(3, 3),
        lambda d, out: sk.scatter_elements_update(
            d, np.zeros((2, 4), np.int64), np.ones((2, 4), np.int32), 0, out=out
        ),
        ValueError,
        "exceeds",
    ),
    "scatter_elements-v3-extent-exceeds": Case(
        _i32(3, 3),
        lambda d, out: se3(d, np.zeros((4, 2), np.int64), np.ones((4, 2), np.int32), 1, out=out),
        ValueError,
        "exceeds",
    ),
    "scatter_nd-updates-shape": Case(
        _f32(4, 4),
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0], [2]]), np.ones((2, 3), np.float32), out=out
        ),
        ValueError,
        "updates shape",
    ),
    "scatter_nd-0d-expected-two-elements": Case(
        _f32(4, 4),
        lambda d, out: sk.scatter_nd_update(d, np.array([1, 2]), np.ones(2, np.float32), out=out),
        ValueError,
        "updates shape",
    ),
    "scatter_nd-0d-indices": Case(
        _f32(4),
        lambda d, out: sk.scatter_nd_update(d, np.array(1), np.float32(1), out=out),
        ValueError,
        "indices",
    ),
    "scatter_nd-k-above-rank": Case(
        _f32(4, 4),
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0, 1, 2]]), np.ones(1, np.float32), out=out
        ),
        ValueError,
        "indices",
    ),
    "slice_scatter-updates-shape": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((2, 2), np.float32), -25, 25, 2, 1, out=out),
        ValueError,
        "updates shape",
    ),
    "slice_scatter-updates-shape-clamped-empty": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((2, 1), np.float32), 9, 20, 1, 1, out=out),
        ValueError,
        "updates shape",
    ),
    # --- axis ----------------------------------------------------------------------------------
    "scatter_update-axis-range": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(d, np.array([0]), np.ones((3, 1), np.float32), 2, out=out),
        ValueError,
        "axis",
    ),
    "scatter_update-axis-negative-range": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0]), np.ones((1, 5), np.float32), -3, out=out
        ),
        ValueError,
        "axis",
    ),
    "scatter_update-axis-two-elements": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0]), np.ones((1, 5), np.float32), np.array([0, 1]), out=out
        ),
        ValueError,
        "axis",
    ),
    "scatter_elements-axis-range": Case(
        _i32(3),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), 1, out=out
        ),
        ValueError,
        "axis",
    ),
    "scatter_elements-axis-two-elements": Case(
        _i32(3),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), [0, 0], out=out
        ),
        ValueError,
        "axis",
    ),
    "slice_scatter-axis-range": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((2, 5), np.float32), 0, 5, 1, 2, out=out),
        ValueError,
        "axis",
    ),
    "scatter_update-axis-bool": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0]), np.ones((3, 1), np.float32), True, out=out
        ),
        TypeError,
        "integer",
    ),
    "scatter_update-axis-float": Case(
        _f32(3, 5),
        lambda d, out: sk.scatter_update(
            d, np.array([0]), np.ones((3, 1), np.float32), 1.0, out=out
        ),
        TypeError,
        "integer",
    ),
    "scatter_elements-axis-float-array": Case(
        _i32(3),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), np.array([0.0]), out=out
        ),
        TypeError,
        "integer",
    ),
    "slice_scatter-axis-bool": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d, np.ones((1, 5), np.float32), 0, 1, 1, np.False_, out=out
        ),
        TypeError,
        "integer",
    ),
    "slice_scatter-start-float": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((1, 5), np.float32), 0.0, 1, 1, 0, out=out),
        TypeError,
        "integer",
    ),
    "slice_scatter-stop-bool-array": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d, np.ones((1, 5), np.float32), 0, np.array([True]), 1, 0, out=out
        ),
        TypeError,
        "integer",
    ),
    "slice_scatter-step-float": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((1, 5), np.float32), 0, 1, 1.5, 0, out=out),
        TypeError,
        "integer",
    ),
    # --- index dtypes --------------------------------------------------------------------------
    "scatter_update-float-indices": Case(
        _f32(4),
        lambda d, out: sk.scatter_update(d, np.array([1.0]), np.ones(1, np.float32), 0, out=out),
        TypeError,
        "integer",
    ),
    "scatter_elements-float-indices": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([1.0, 2.0]), np.ones(2, np.int32), 0, out=out
        ),
        TypeError,
        "integer",
    ),
    "scatter_elements-bool-indices": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([True, False]), np.ones(2, np.int32), 0, out=out
        ),
        TypeError,
        "integer",
    ),
    "scatter_nd-float-indices": Case(
        _f32(4),
        lambda d, out: sk.scatter_nd_update(d, np.array([[1.0]]), np.ones(1, np.float32), out=out),
        TypeError,
        "integer",
    ),
    # --- reductions ----------------------------------------------------------------------------
    "scatter_elements-mean-bool": Case(
        lambda: np.array([True, False, True]),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.array([True]), 0, reduction="mean", out=out
        ),
        TypeError,
        "mean",
    ),
    "scatter_elements-unknown-reduction": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), 0, reduction="add", out=out
        ),
        ValueError,
        "reduction",
    ),
    "scatter_elements-sub": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), 0, reduction="sub", out=out
        ),
        ValueError,
        "reduction",
    ),
    "scatter_nd-mean": Case(
        _f32(4),
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0]]), np.ones(1, np.float32), reduction="mean", out=out
        ),
        ValueError,
        "reduction",
    ),
    "scatter_nd-unknown-reduction": Case(
        _f32(4),
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0]]), np.ones(1, np.float32), reduction="SUM", out=out
        ),
        ValueError,
        "reduction",
    ),
    "scatter_elements-use-init-val-int": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(
            d, np.array([0]), np.ones(1, np.int32), 0, reduction="sum", use_init_val=1, out=out
        ),
        TypeError,
        "use_init_val",
    ),
    "scatter_elements-use-init-val-str": Case(
        _i32(4),
        lambda d, out: se12(
            d,
            np.array([0]),
            np.ones(1, np.int32),
            0,
            reduction="sum",
            use_init_val="false",
            out=out,
        ),
        TypeError,
        "use_init_val",
    ),
    # --- slice parameters ----------------------------------------------------------------------
    "slice_scatter-step-zero": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(d, np.ones((2, 0), np.float32), 0, 5, 0, 1, out=out),
        ValueError,
        "step",
    ),
    "slice_scatter-step-zero-in-sequence": Case(
        _f32(2, 5),
        lambda d, out: ss15(
            d, np.ones((1, 5), np.float32), [0, 0], [1, 5], [1, 0], [0, 1], out=out
        ),
        ValueError,
        "step",
    ),
    "slice_scatter-mixed-scalar-sequence": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d, np.ones((1, 2), np.float32), 0, [1, 2], [1, 1], [0, 1], out=out
        ),
        ValueError,
        "same length",
    ),
    "slice_scatter-unequal-lengths": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d, np.ones((1, 2), np.float32), [0, 0], [1, 2], [1, 1, 1], [0, 1], out=out
        ),
        ValueError,
        "same length",
    ),
    "slice_scatter-repeated-axes": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d, np.ones((2, 1), np.float32), [0, 1], [5, 2], [1, 1], [1, 1], out=out
        ),
        ValueError,
        "distinct",
    ),
    "slice_scatter-repeated-axes-negative-alias": Case(
        _f32(2, 5),
        lambda d, out: sk.slice_scatter(
            d,
            np.ones((1, 5), np.float32),
            np.array([0, 0]),
            np.array([1, 1]),
            np.array([1, 1]),
            np.array([0, -2]),
            out=out,
        ),
        ValueError,
        "distinct",
    ),
    # --- updates values and dtypes ------------------------------------------------------------
    "scatter_update-updates-float64-into-int32": Case(
        _i32(4),
        lambda d, out: sk.scatter_update(d, np.array([1]), np.array([1.5]), 0, out=out),
        TypeError,
        "cast",
    ),
    "scatter_elements-updates-float64-into-int32": Case(
        _i32(4),
        lambda d, out: sk.scatter_elements_update(d, np.array([1]), np.array([1.0]), 0, out=out),
        TypeError,
        "cast",
    ),
    "scatter_nd-updates-complex-into-float32": Case(
        _f32(4),
        lambda d, out: sk.scatter_nd_update(d, np.array([[1]]), np.array([1 + 1j]), out=out),
        TypeError,
        "cast",
    ),
    "slice_scatter-updates-float32-into-int8": Case(
        lambda: np.zeros(4, np.int8),
        lambda d, out: sk.slice_scatter(d, np.ones(4, np.float32), 0, 4, 1, 0, out=out),
        TypeError,
        "cast",
    ),
    "scatter_update-python-scalar-300-int8": Case(
        lambda: np.zeros(4, np.int8),
        lambda d, out: sk.scatter_update(d, np.array(2), 300, 0, out=out),
        ValueError,
        "out of range",
    ),
    "scatter_nd-python-list-300-int8": Case(
        lambda: np.zeros(4, np.int8),
        lambda d, out: sk.scatter_nd_update(d, np.array([[0], [1]]), [1, 300], out=out),
        ValueError,
        "out of range",
    ),
    "scatter_elements-python-list-negative-uint8": Case(
        lambda: np.zeros(4, np.uint8),
        lambda d, out: sk.scatter_elements_update(d, np.array([0, 1]), [1, -1], 0, out=out),
        ValueError,
        "out of range",
    ),
}

# Data of a dtype a reduction cannot use: every reduction is a TypeError naming "reduction".
NON_ARITHMETIC = {
    "complex64": lambda: np.array([1 + 2j, 3 - 1j, 0j], np.complex64),
    "complex128": lambda: np.array([1 + 2j, 3 - 1j, 0j], np.complex128),
    "struct": lambda: np.zeros(3, STRUCT_DTYPE),
    "datetime64": lambda: np.array([1, 2, 3], "datetime64[ns]"),
    "longdouble": lambda: np.array([1, 2, 3], np.longdouble),
    "bytes": lambda: np.array([b"ab", b"cd", b"ef"], "S5"),
}
for _name, _make in NON_ARITHMETIC.items():
    for _reduction in ("sum", "prod", "min", "max", "mean"):
        CASES[f"scatter_elements-{_reduction}-{_name}"] = Case(
            _make,
            lambda d, out, r=_reduction: sk.scatter_elements_update(
                d, np.array([0, 2]), d[:2].copy(), 0, reduction=r, out=out
            ),
            TypeError,
            "reduction",
        )
    for _reduction in ("sum", "sub", "prod", "min", "max"):
        CASES[f"scatter_nd-{_reduction}-{_name}"] = Case(
            _make,
            lambda d, out, r=_reduction: sk.scatter_nd_update(
                d, np.array([[0], [2]]), d[:2].copy(), reduction=r, out=out
            ),
            TypeError,
            "reduction",
        )

# --- generated: a bad index at every position, every extent off by one, every wrong type ---

I64_MAX = 2**63 - 1
# Three index ops over data of shape (3, 4, 5), each given its valid indices as a function of
# where the bad value goes: the bad value replaces element `at` of the flat index list.
_D345 = _f32(3, 4, 5)


def _su_call(indices):
    n = len(indices)
    return lambda d, out: sk.scatter_update(d, indices, np.ones((3, n, 5), np.float32), 1, out=out)


def _se_call(indices):
    idx = np.asarray(indices).reshape(3, 1, 3)
    return lambda d, out: sk.scatter_elements_update(
        d, idx, np.ones(idx.shape, np.float32), 1, reduction="sum", out=out
    )


def _nd_call(indices):
    # indices address axis 0 and 1; the bad value is put in the axis-1 column.
    column = np.asarray(indices)
    idx = np.stack([np.arange(len(column), dtype=column.dtype) % 3, column], axis=-1)
    return lambda d, out: sk.scatter_nd_update(
        d, idx, np.ones((len(column), 5), np.float32), out=out
    )


for _op, _make_call in (
    ("scatter_update", _su_call),
    ("scatter_elements", _se_call),
    ("scatter_nd", _nd_call),
):
    for _where, _at in (("first", 0), ("middle", 4), ("last", 8)):
        for _label, _bad, _dtype in (
            ("beyond", 4, np.int64),
            ("below-minus-dim", -5, np.int64),
            ("int64-max", I64_MAX, np.int64),
            ("int64-min", I64_MIN, np.int64),
            ("uint64-max", U64_MAX, np.uint64),
        ):
            _values = [1, 2, 3, 0, 1, 2, 3, 0, 1]
            _values[_at] = _bad
            CASES[f"{_op}-{_label}-at-{_where}"] = Case(
                _D345,
                _make_call(np.array(_values, _dtype)),
                IndexError,
                f"index {_bad} is out of bounds for axis 1 with size 4",
            )

# Index arrays that are not integers: a TypeError naming the dtype, for every index op.
_NON_INTEGER_INDICES = {
    "float": np.array([0.0, 1.0, 2.0]),
    "bool": np.array([True, False, True]),
    "object": np.array([0, 1, 2], object),
    "string": np.array(["0", "1", "2"]),
    "bytes": np.array([b"0", b"1", b"2"]),
    "complex": np.array([0j, 1j, 2j]),
    "datetime": np.array([0, 1, 2], "datetime64[s]"),
}
for _kind, _idx in _NON_INTEGER_INDICES.items():
    for _op, _call in (
        (
            "scatter_update",
            lambda i: (
                lambda d, out: sk.scatter_update(d, i, np.ones((3, 3, 5), np.float32), 1, out=out)
            ),
        ),
        (
            "scatter_elements",
            lambda i: (
                lambda d, out: sk.scatter_elements_update(
                    d, i.reshape(1, 1, 3), np.ones((1, 1, 3), np.float32), 2, out=out
                )
            ),
        ),
        (
            "scatter_nd",
            lambda i: (
                lambda d, out: sk.scatter_nd_update(
                    d, i.reshape(1, 3), np.ones(1, np.float32), out=out
                )
            ),
        ),
    ):
        CASES[f"{_op}-{_kind}-indices"] = Case(_D345, _call(_idx), TypeError, "indices must be")


# Updates one longer or shorter in each dimension, or of one rank more or less.
def _wrong_shapes(shape):
    for dim in range(len(shape)):
        for delta in (-1, 1):
            wrong = list(shape)
            wrong[dim] += delta
            yield f"dim{dim}{delta:+d}", tuple(wrong)
    yield "rank+1", (*shape, 1)
    yield "rank-1", shape[1:]


_EXPECTED_UPDATES = {
    "scatter_update": (
        (3, 2, 5),
        lambda u: lambda d, out: sk.scatter_update(d, np.array([0, 3]), u, 1, out=out),
    ),
    "scatter_nd": (
        (2, 4, 5),
        lambda u: lambda d, out: sk.scatter_nd_update(d, np.array([[0], [2]]), u, out=out),
    ),
    "slice_scatter": (
        (3, 2, 5),
        lambda u: lambda d, out: sk.slice_scatter(d, u, 0, 4, 2, 1, out=out),
    ),
    "scatter_elements": (
        (3, 2, 5),
        lambda u: (
            lambda d, out: sk.scatter_elements_update(
                d, np.zeros((3, 2, 5), np.int64), u, 1, out=out
            )
        ),
    ),
}
for _op, (_shape, _call) in _EXPECTED_UPDATES.items():
    for _label, _wrong in _wrong_shapes(_shape):
        CASES[f"{_op}-updates-{_label}"] = Case(
            _D345, _call(np.ones(_wrong, np.float32)), ValueError, "updates shape"
        )
# ScatterElements' indices may be smaller than data but never larger, in any dimension but
# the axis (docs/design.md section 2.4: indices.shape[d] <= data.shape[d] for d != axis).
for _dim in range(3):
    _ishape = [3, 4, 5]
    _ishape[_dim] += 1
    CASES[f"scatter_elements-indices-dim{_dim}-exceeds"] = Case(
        _D345,
        lambda d, out, s=tuple(_ishape), a=_dim: sk.scatter_elements_update(
            d, np.zeros(s, np.int64), np.ones(s, np.float32), (a + 1) % 3, out=out
        ),
        ValueError,
        "exceeds",
    )


def _se_one_update(**kwargs):
    """A ScatterElementsUpdate call that is valid but for its keyword arguments."""
    return lambda d, out: sk.scatter_elements_update(
        d, np.zeros((1, 1, 1), np.int64), np.ones((1, 1, 1), np.float32), 0, out=out, **kwargs
    )


# Attributes of the wrong type or form.
_BAD_ATTRIBUTES = {
    "scatter_update-axis-string": (
        lambda d, out: sk.scatter_update(d, [0], np.ones((3, 1, 5), np.float32), "1", out=out),
        TypeError,
        "axis must be an integer",
    ),
    "scatter_update-axis-none": (
        lambda d, out: sk.scatter_update(d, [0], np.ones((3, 1, 5), np.float32), None, out=out),
        TypeError,
        "axis must be an integer",
    ),
    "scatter_update-axis-beyond-int64": (
        lambda d, out: sk.scatter_update(d, [0], np.ones((3, 1, 5), np.float32), 2**70, out=out),
        ValueError,
        "axis",
    ),
    "scatter_elements-axis-empty-array": (
        lambda d, out: sk.scatter_elements_update(
            d,
            np.zeros((1, 1, 1), np.int64),
            np.ones((1, 1, 1), np.float32),
            np.array([], np.int64),
            out=out,
        ),
        ValueError,
        "axis must be a scalar",
    ),
    "slice_scatter-axis-negative-range": (
        lambda d, out: sk.slice_scatter(d, np.ones((3, 4, 5), np.float32), 0, 9, 1, -4, out=out),
        ValueError,
        "axis",
    ),
    "slice_scatter-start-string": (
        lambda d, out: sk.slice_scatter(d, np.ones((3, 4, 5), np.float32), "0", 9, 1, 1, out=out),
        TypeError,
        "start must be",
    ),
    "slice_scatter-stop-none": (
        lambda d, out: sk.slice_scatter(d, np.ones((3, 4, 5), np.float32), 0, None, 1, 1, out=out),
        TypeError,
        "stop must be",
    ),
    "slice_scatter-step-float-array": (
        lambda d, out: sk.slice_scatter(
            d, np.ones((3, 4, 5), np.float32), 0, 9, np.array([1.0]), 1, out=out
        ),
        TypeError,
        "step must be",
    ),
    "slice_scatter-start-2d": (
        lambda d, out: sk.slice_scatter(
            d, np.ones((3, 4, 5), np.float32), np.zeros((1, 1), np.int64), 9, 1, 1, out=out
        ),
        ValueError,
        "start must be",
    ),
    "slice_scatter-step-zero-array": (
        lambda d, out: sk.slice_scatter(
            d, np.ones((3, 4, 5), np.float32), 0, 9, np.array([0]), 1, out=out
        ),
        ValueError,
        "step",
    ),
    "scatter_elements-reduction-uppercase": (
        _se_one_update(reduction="SUM"),
        ValueError,
        "scatter_elements_update: unknown reduction 'SUM'",
    ),
    "scatter_elements-reduction-unknown-lists-its-own": (
        _se_one_update(reduction="add"),
        ValueError,
        r"unknown reduction 'add' \(expected one of none, sum, prod, min, max, mean\)",
    ),
    "scatter_nd-reduction-unknown-lists-its-own": (
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0]]), np.ones((1, 4, 5), np.float32), reduction="add", out=out
        ),
        ValueError,
        r"unknown reduction 'add' \(expected one of none, sum, sub, prod, min, max\)",
    ),
    "scatter_elements-reduction-none-object": (
        _se_one_update(reduction=None),
        TypeError,
        "reduction must be a string",
    ),
    "scatter_nd-reduction-int": (
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0]]), np.ones((1, 4, 5), np.float32), reduction=1, out=out
        ),
        TypeError,
        "reduction must be a string",
    ),
    "scatter_nd-reduction-empty": (
        lambda d, out: sk.scatter_nd_update(
            d, np.array([[0]]), np.ones((1, 4, 5), np.float32), reduction="", out=out
        ),
        ValueError,
        "unknown reduction",
    ),
    "scatter_elements-use-init-val-none": (
        _se_one_update(reduction="max", use_init_val=None),
        TypeError,
        "use_init_val must be a bool",
    ),
    "scatter_elements-use-init-val-array": (
        _se_one_update(reduction="max", use_init_val=np.array([True])),
        TypeError,
        "use_init_val must be a bool",
    ),
    "scatter_update-object-updates": (
        lambda d, out: sk.scatter_update(d, [0], np.ones((3, 1, 5), object), 1, out=out),
        TypeError,
        "cannot cast updates",
    ),
    "slice_scatter-string-updates": (
        lambda d, out: sk.slice_scatter(d, np.full((3, 4, 5), "x"), 0, 9, 1, 1, out=out),
        TypeError,
        "cannot cast updates",
    ),
    "slice_scatter-non-ascii-bytes-updates-into-str": (
        lambda d, out: sk.slice_scatter(
            d.astype("U3"), np.array([b"\xffa"] * 60, "S2").reshape(3, 4, 5), 0, 9, 1, 1, out=out
        ),
        ValueError,
        "cannot be cast to data dtype <U3",
    ),
    "scatter_nd-python-string-updates": (
        lambda d, out: sk.scatter_nd_update(d, [[0]], "x", out=out),
        TypeError,
        "updates cannot be converted",
    ),
}
for _name, (_call, _exc, _match) in _BAD_ATTRIBUTES.items():
    CASES[_name] = Case(_D345, _call, _exc, _match)

# Python lists NumPy cannot make one array of, or one integer dtype of.
CASES["scatter_update-ragged-updates-list"] = Case(
    _f32(3),
    lambda d, out: sk.scatter_update(d, [0, 1], [[1.0], 2.0], 0, out=out),
    ValueError,
    "scatter_update: updates is not a rectangular array",
)
CASES["scatter_nd-ragged-indices-list"] = Case(
    _f32(3, 4),
    lambda d, out: sk.scatter_nd_update(d, [[0], [1, 2]], [1.0, 2.0], out=out),
    ValueError,
    "scatter_nd_update: indices is not a rectangular array",
)
CASES["scatter_update-indices-list-past-int64-and-negative"] = Case(
    _f32(3),
    lambda d, out: sk.scatter_update(d, [2**63, -1], [1.0, 2.0], 0, out=out),
    IndexError,
    r"scatter_update: index 9223372036854775808 is out of bounds \(indices must fit in int64\)",
)
CASES["scatter_elements-indices-list-past-uint64"] = Case(
    _f32(3),
    lambda d, out: sk.scatter_elements_update(d, [0, 2**64], [1.0, 2.0], 0, out=out),
    IndexError,
    "index 18446744073709551616 is out of bounds",
)
CASES["scatter_update-indices-list-below-int64"] = Case(
    _f32(3),
    lambda d, out: sk.scatter_update(d, [0, -(2**64)], [1.0, 2.0], 0, out=out),
    IndexError,
    r"index -18446744073709551616 is out of bounds \(indices must fit in int64\)",
)
CASES["scatter_update-float-list-past-float32"] = Case(
    _f32(3),
    lambda d, out: sk.scatter_update(d, [0], [1e300], 0, out=out),
    ValueError,
    "scatter_update: updates value out of range for dtype float32",
)
CASES["slice_scatter-nested-start"] = Case(
    _f32(2, 5),
    lambda d, out: sk.slice_scatter(d, np.ones((2, 5), np.float32), [[0]], [5], [1], [1], out=out),
    ValueError,
    "slice_scatter: start must be a scalar or a 1-D sequence",
)
for _name, _empty in {"lists": lambda: [], "ranges": lambda: range(0)}.items():
    CASES[f"slice_scatter-empty-{_name}"] = Case(
        _f32(2, 5),
        lambda d, out, e=_empty: sk.slice_scatter(
            d, np.ones((2, 5), np.float32), e(), e(), e(), e(), out=out
        ),
        ValueError,
        r"scalars or sequences of the same length >= 1, got lengths \[0, 0, 0, 0\]",
    )
CASES["scatter_update-string-list-longer-than-dtype"] = Case(
    lambda: np.array(["ab", "cd"]),
    lambda d, out: sk.scatter_update(d, [0], ["xyz"], 0, out=out),
    ValueError,
    "scatter_update: updates value 'xyz' does not fit in dtype <U2",
)

CASES["scatter_update-str-list-longer-than-bytes-dtype"] = Case(
    lambda: np.array([b"ab", b"cd"]),
    lambda d, out: sk.scatter_update(d, [0, 1], ["abc", "x"], 0, out=out),
    ValueError,
    "scatter_update: updates value 'abc' does not fit in dtype |S2",
)
CASES["scatter_update-none-text-longer-than-bytes-dtype"] = Case(
    lambda: np.array([b"abc", b"def"]),
    lambda d, out: sk.scatter_update(d, [0, 1], [1, None], 0, out=out),
    ValueError,
    "scatter_update: updates value None does not fit in dtype |S3",
)

CASES["scatter_nd-0d-data"] = Case(
    lambda: np.array(3.0, np.float32),
    lambda d, out: sk.scatter_nd_update(d, np.zeros((1, 0), np.int64), np.float32(1), out=out),
    ValueError,
    "rank",
)


OBJECT_OPS = {
    "scatter_update": lambda d, out: sk.scatter_update(d, np.array([0]), d[:1].copy(), 0, out=out),
    "scatter_elements": lambda d, out: sk.scatter_elements_update(
        d, np.array([0]), d[:1].copy(), 0, out=out
    ),
    "scatter_nd": lambda d, out: sk.scatter_nd_update(d, np.array([[0]]), d[:1].copy(), out=out),
    "slice_scatter": lambda d, out: sk.slice_scatter(d, d[:1].copy(), 0, 1, 1, 0, out=out),
}
for _name, _call in OBJECT_OPS.items():
    CASES[f"{_name}-object-data"] = Case(
        lambda: np.array([1, "a", None], object),
        _call,
        TypeError,
        "data of dtype object holds Python objects",
    )


def _fresh_out(data: np.ndarray) -> np.ndarray:
    raw = np.full(data.nbytes, 0xA5, np.uint8)
    return raw.view(data.dtype).reshape(data.shape)


@pytest.mark.parametrize("out_mode", ["none", "fresh", "inplace"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_raises_and_writes_nothing(name, out_mode):
    case = CASES[name]
    data = case.data()
    before = data.copy()
    before_bytes = data.tobytes() if data.dtype != object else None
    out = None
    if out_mode == "fresh":
        out = np.zeros_like(data) if data.dtype == object else _fresh_out(data)
        out_before = out.copy()
    elif out_mode == "inplace":
        out = data
    with pytest.raises(case.exc, match=case.match):
        case.call(data, out)
    if data.dtype == object:
        assert data.tolist() == before.tolist()
    else:
        assert data.tobytes() == before_bytes, f"data modified: {before} -> {data}"
    if out_mode == "fresh" and data.dtype != object:
        assert out.tobytes() == out_before.tobytes(), "out modified"


# --- out= problems (cannot be combined with out=data) ---------------------------------------

OUT_CALLS = {
    "scatter_update": lambda d, out: sk.scatter_update(d, np.array([1]), d[:1].copy(), 0, out=out),
    "scatter_elements": lambda d, out: sk.scatter_elements_update(
        d, np.array([1]), d[:1].copy(), 0, reduction="sum", out=out
    ),
    "scatter_nd": lambda d, out: sk.scatter_nd_update(d, np.array([[1]]), d[:1].copy(), out=out),
    "slice_scatter": lambda d, out: sk.slice_scatter(d, d[:1].copy(), 1, 2, 1, 0, out=out),
}


def _bad_outs(data):
    readonly = np.zeros_like(data)
    readonly.flags.writeable = False
    return {
        "read-only": (readonly, ValueError, "read-only"),
        "shape-short": (np.zeros(data.size - 1, data.dtype), ValueError, "out shape"),
        "shape-2d": (np.zeros((1, data.size), data.dtype), ValueError, "out shape"),
        "dtype": (np.zeros(data.shape, np.float64), TypeError, "out dtype"),
        "dtype-byteswapped": (
            np.zeros(data.shape, data.dtype.newbyteorder()),
            TypeError,
            "out dtype",
        ),
        "list": ([0.0] * data.size, TypeError, "out must be"),
        "tuple": (tuple([0.0] * data.size), TypeError, "out must be"),
    }


@pytest.mark.parametrize(
    "kind", ["read-only", "shape-short", "shape-2d", "dtype", "dtype-byteswapped", "list", "tuple"]
)
@pytest.mark.parametrize("op", sorted(OUT_CALLS))
def test_bad_out_raises_and_writes_nothing(op, kind):
    data = np.arange(5, dtype=np.float32) + 1
    before = data.copy()
    out, exc, match = _bad_outs(data)[kind]
    out_before = np.array(out, copy=True)
    with pytest.raises(exc, match=match):
        OUT_CALLS[op](data, out)
    np.testing.assert_array_equal(data, before)
    np.testing.assert_array_equal(np.asarray(out), out_before)


@pytest.mark.parametrize("op", sorted(OUT_CALLS))
def test_read_only_data_in_place_is_rejected(op):
    data = np.arange(5, dtype=np.float32)
    data.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        OUT_CALLS[op](data, data)
    np.testing.assert_array_equal(data, np.arange(5, dtype=np.float32))


@pytest.mark.parametrize("op", sorted(OUT_CALLS))
def test_byteswapped_data_in_place_is_rejected(op):
    # out=data with data in non-native order: out must have the native dtype.
    data = np.arange(5, dtype=">f4")
    before = data.tobytes()
    with pytest.raises(TypeError, match="out dtype >f4 is not in native byte order"):
        OUT_CALLS[op](data, data)
    assert data.tobytes() == before


def test_ragged_data_list_names_the_op_and_argument():
    with pytest.raises(ValueError, match="scatter_update: data is not a rectangular array"):
        sk.scatter_update([[1.0, 2.0], [3.0]], [0], [[1.0, 1.0]], 0)


def test_string_list_that_fits_and_float_string_list():
    out = sk.scatter_update(np.array(["ab", "cd"]), [1], ["x"], 0)
    assert out.tolist() == ["ab", "x"]
    # A string where a number belongs stays a TypeError, a ragged list a ValueError.
    with pytest.raises(TypeError, match="updates cannot be converted to dtype float64"):
        sk.scatter_update(np.zeros(2), [0], ["x"], 0)


def test_private_core_checks_the_out_item_size():
    # _core is importable, so it checks every buffer itself.
    from scatterkit import _core

    data, out = np.zeros(3), np.zeros(3, np.float32)
    with pytest.raises(TypeError, match="out has 4-byte items, data 8-byte items"):
        _core.scatter_update(data, np.array([0]), np.ones(1), 0, out, "float64", True, "op")
    assert not out.any()


# --- keyword arguments a version does not have ----------------------------------------------


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("ScatterElementsUpdate-3", {"reduction": "sum"}),
        ("ScatterElementsUpdate-3", {"reduction": "none"}),
        ("ScatterElementsUpdate-3", {"use_init_val": True}),
        ("ScatterNDUpdate-3", {"reduction": "sum"}),
        ("ScatterNDUpdate-3", {"reduction": "none"}),
        ("ScatterUpdate-3", {"reduction": "none"}),
        ("ScatterNDUpdate-15", {"use_init_val": True}),
    ],
)
def test_v3_callable_rejects_reduction_kwargs(name, kwargs):
    op = sk.get_op(name)
    data = np.zeros(4, np.float32)
    idx = np.array([[1]]) if "ND" in name else np.array([1])
    args = (data, idx, np.ones(1, np.float32)) + (() if "ND" in name else (0,))
    with pytest.raises(TypeError):
        op(*args, **kwargs)
    assert not data.any()
    # and the same call without the keyword works
    assert op(*args)[1] == 1


@pytest.mark.parametrize("n", [True, np.True_, 2.0, "2"])
def test_set_num_threads_takes_integers_only(n):
    before = sk.get_num_threads()
    with pytest.raises(TypeError, match="set_num_threads: n must be an integer"):
        sk.set_num_threads(n)
    assert sk.get_num_threads() == before


@pytest.mark.parametrize("n", [0, -1, -(2**40)])
def test_set_num_threads_rejects_below_one(n):
    before = sk.get_num_threads()
    with pytest.raises(ValueError):
        sk.set_num_threads(n)
    assert sk.get_num_threads() == before


# --- validation happens before any write, also when the work is threaded ---------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_bad_last_index_in_large_threaded_input_writes_nothing(threads):
    sk.set_num_threads(threads)
    n = 300_000
    data = np.zeros(n, np.float32)
    idx = np.arange(n, dtype=np.int64)[::-1].copy()
    idx[-1] = n  # the very last index is the bad one
    upd = np.ones(n, np.float32)
    for call in (
        lambda: sk.scatter_elements_update(data, idx, upd, 0, reduction="sum", out=data),
        lambda: sk.scatter_update(data, idx, upd, 0, out=data),
        lambda: sk.scatter_nd_update(data, idx[:, None], upd, out=data),
    ):
        with pytest.raises(IndexError, match=f"index {n} is out of bounds for axis 0"):
            call()
        assert not data.any()


def test_bfloat16_mean_is_allowed_but_bool_mean_is_not():
    # The "mean" TypeError is about bool only: bfloat16 must not be caught by it.
    out = sk.scatter_elements_update(
        np.zeros(2, BFLOAT16), np.array([0, 0]), np.array([1, 2], BFLOAT16), 0, reduction="mean"
    )
    assert out.astype(np.float32).tolist() == [1.0, 0.0]
    with pytest.raises(TypeError, match="mean"):
        se12(np.zeros(2, bool), np.array([0]), np.array([True]), 0, reduction="mean")


# --- out-of-range indices anywhere: same verdict as the oracle, and nothing written ----------

_BOUNDS = re.compile(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)")


def _indices_maybe_out_of_range(rng, shape, size, dtype):
    """Mostly valid indices, some beyond either end, some at the dtype's extremes."""
    info = np.iinfo(dtype)
    lo, hi = max(-2 * size - 1, int(info.min)), min(2 * size + 1, int(info.max))
    values = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    extremes = np.array([info.min, info.max], dtype)
    return np.where(rng.random(shape) < 0.05, rng.choice(extremes, shape), values).astype(dtype)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_index_out_of_range_anywhere_matches_reference(data):
    draw = data.draw
    op = draw(st.sampled_from(["su3", "su", "se3", "se12", "nd3", "nd15"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    dtype = draw(st.sampled_from([np.dtype(np.int32), np.dtype(np.float64)]))
    values = random_values(rng, dtype, shape)
    axis = draw(st.integers(0, rank - 1))
    if op.startswith("su"):
        indices = _indices_maybe_out_of_range(
            rng, (draw(st.integers(0, 4)),), shape[axis], index_dtype
        )
        updates = random_values(rng, dtype, shape[:axis] + indices.shape + shape[axis + 1 :])
        fn = su3 if op == "su3" else sk.scatter_update
        kwargs = {}

        def ref():
            return ref_scatter_update(values, indices, updates, axis)

        def call(out):
            return fn(values, indices, updates, axis, out=out)

    elif op.startswith("se"):
        ishape = tuple(draw(st.integers(0, d)) for d in shape)
        indices = _indices_maybe_out_of_range(rng, ishape, shape[axis], index_dtype)
        updates = random_values(rng, dtype, ishape)
        kwargs = {} if op == "se3" else {"reduction": draw(st.sampled_from(["none", "sum", "max"]))}

        def ref():
            return ref_scatter_elements_update(
                values, indices, updates, axis, allow_negative=op != "se3", **kwargs
            )

        def call(out):
            return (se3 if op == "se3" else se12)(values, indices, updates, axis, out=out, **kwargs)

    else:
        k = draw(st.integers(1, rank))
        batch = (draw(st.integers(0, 4)),)
        columns = [_indices_maybe_out_of_range(rng, batch, shape[j], index_dtype) for j in range(k)]
        indices = np.stack(columns, axis=-1).astype(index_dtype)
        updates = random_values(rng, dtype, batch + shape[k:])
        kwargs = {} if op == "nd3" else {"reduction": draw(st.sampled_from(["none", "sub"]))}

        def ref():
            return ref_scatter_nd_update(
                values, indices, updates, allow_negative=op != "nd3", **kwargs
            )

        def call(out):
            return (nd3 if op == "nd3" else nd15)(values, indices, updates, out=out, **kwargs)

    try:
        expected = ref()
    except IndexError:
        expected = None
    out = random_values(rng, dtype, shape)
    out_before = out.tobytes()
    values_before = values.tobytes()
    if expected is None:
        with pytest.raises(IndexError) as info:
            call(out)
        match = _BOUNDS.search(str(info.value))
        assert match, str(info.value)
        bad, position, size = (int(g) for g in match.groups())
        # The message names a value that is really in indices and really out of range there.
        column = indices[..., position] if op.startswith("nd") else indices
        assert bad in column.astype(object).ravel().tolist()
        assert size == shape[position if op.startswith("nd") else axis]
        negative_ok = op in ("se12", "nd15")
        assert not (-size if negative_ok else 0) <= bad < size
        assert out.tobytes() == out_before
    else:
        assert call(out) is out
        assert_same(out, expected)
    assert values.tobytes() == values_before
