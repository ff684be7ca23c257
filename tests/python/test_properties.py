"""Property tests: every op x dtype x index dtype x reduction against the reference oracle.

Hypothesis draws shapes (dims 0..5, rank 0..4), duplicate and negative indices, empty tensors,
0-D indices and updates, clamped and huge slice parameters, and the memory layout of every
input (strided views, transposes, negative strides, non-native byte order, read-only,
unaligned).  Each case is run with ``out=None``, with a fresh ``out`` buffer (contiguous,
strided or unaligned) and in place with ``out=data``, and compared bit for bit with the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    BFLOAT16,
    INDEX_DTYPES,
    MOVEMENT_DTYPES,
    REDUCIBLE_DTYPES,
    assert_same,
    assert_unchanged,
    dtype_id,
    random_indices,
    random_values,
    snapshot,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    ELEMENTS_REDUCTIONS,
    ND_REDUCTIONS,
    native_dtype,
    ref_scatter_elements_update,
    ref_scatter_nd_update,
    ref_scatter_update,
    ref_slice_scatter,
    slice_positions,
)

import scatterkit as sk

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

INPUT_LAYOUTS = (
    "contiguous",
    "strided",
    "transposed",
    "reversed",
    "byteswapped",
    "readonly",
    "unaligned",
)
OUT_MODES = ("none", "fresh", "fresh_strided", "fresh_unaligned", "inplace")
IN_PLACE_LAYOUTS = ("contiguous", "strided", "transposed", "reversed", "unaligned")

few = settings(max_examples=30, deadline=None)
some = settings(max_examples=60, deadline=None)


# --------------------------------------------------------------------------------------------
# layouts


def _can_swap(dtype: np.dtype) -> bool:
    return dtype != BFLOAT16 and dtype.newbyteorder() != dtype


def with_layout(value: np.ndarray, layout: str, rng: np.random.Generator):
    """An array equal to ``value`` with the given memory layout, and a check that the part of
    its buffer outside the array's own elements is never written."""
    value = np.asarray(value)

    def nothing_outside():
        return None

    if layout == "strided":
        big = random_values(rng, value.dtype, tuple(2 * d + 1 for d in value.shape))
        view_index = (Ellipsis, *tuple(slice(1, None, 2) for _ in value.shape))
        view = big[view_index]
        view[...] = value
        mask = np.ones(big.shape, bool)
        mask[view_index] = False
        outside = big[mask].tobytes()

        def check_outside():
            assert big[mask].tobytes() == outside, "wrote outside the strided view"

        return view, check_outside
    if layout == "transposed" and value.ndim >= 2:
        return np.ascontiguousarray(value.T).T, nothing_outside
    if layout == "reversed" and value.ndim:
        flipped = np.flip(value).copy()
        return np.flip(flipped), nothing_outside
    if layout == "byteswapped" and _can_swap(value.dtype):
        swapped = value.astype(value.dtype.newbyteorder())
        assert not swapped.dtype.isnative or swapped.dtype.names is not None
        return swapped, nothing_outside
    if layout == "unaligned":
        # one byte past an aligned start: kernels must not assume alignment
        raw = bytearray(value.nbytes + 1)
        arr = np.frombuffer(raw, value.dtype, count=value.size, offset=1).reshape(value.shape)
        arr[...] = value
        assert arr.dtype.alignment == 1 or not arr.flags.aligned or value.size == 0
        return arr, nothing_outside
    copy = value.copy()
    if layout == "readonly":
        copy.flags.writeable = False
    return copy, nothing_outside


layouts = st.sampled_from(INPUT_LAYOUTS)
out_modes = st.sampled_from(OUT_MODES)
seeds = st.integers(0, 2**32 - 1)


def run_and_compare(call, data_value, expected, *, data_layout, out_mode, rng):
    """Calls ``call(data, out=...)`` in the given mode and checks the result and the inputs."""
    if out_mode == "inplace":
        layout = data_layout if data_layout in IN_PLACE_LAYOUTS else "contiguous"
        data, check_outside = with_layout(data_value, layout, rng)
        result = call(data, out=data)
        assert result is data
        assert_same(np.asarray(data), expected)
        check_outside()
        return
    data, check_data_outside = with_layout(data_value, data_layout, rng)
    before = snapshot(data)
    if out_mode == "none":
        result = call(data, out=None)
        assert result is not data
        assert not np.shares_memory(result, data)
        assert result.dtype.isnative or result.dtype.names is not None
        assert_same(result, expected)
    else:
        out_value = random_values(rng, native_dtype(data_value.dtype), data_value.shape)
        layout = {"fresh_strided": "strided", "fresh_unaligned": "unaligned"}.get(
            out_mode, "contiguous"
        )
        out, check_out_outside = with_layout(out_value, layout, rng)
        result = call(data, out=out)
        assert result is out
        assert_same(np.asarray(out), expected)
        check_out_outside()
    assert_unchanged(data, before)
    check_data_outside()


def _dims(draw, rank, lo=0, hi=5):
    return tuple(draw(st.integers(lo, hi)) for _ in range(rank))


def _axis_argument(draw, axis: int):
    """``axis`` as a Python int, NumPy scalar, 0-D array or 1-element 1-D array."""
    form = draw(st.sampled_from(("int", "scalar", "0d", "1elem")))
    dtypes = [d for d in INDEX_DTYPES if np.iinfo(d).min <= axis]
    dtype = draw(st.sampled_from(dtypes))
    if form == "int":
        return axis
    if form == "scalar":
        return dtype.type(axis)
    if form == "0d":
        return np.array(axis, dtype)
    return np.array([axis], dtype)


# --------------------------------------------------------------------------------------------
# ScatterElementsUpdate


def _elements_case(draw, dtype, index_dtype=None):
    rank = draw(st.integers(1, 4))
    shape = _dims(draw, rank)
    axis = draw(st.integers(-rank, rank - 1))
    a = axis % rank
    ishape = [draw(st.integers(0, d)) for d in shape]
    ishape[a] = draw(st.integers(0, 6)) if shape[a] else 0
    if index_dtype is None:
        index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    rng = np.random.default_rng(draw(seeds))
    data = random_values(rng, dtype, shape)
    indices = random_indices(rng, ishape, shape[a], index_dtype, allow_negative=True)
    updates = random_values(rng, dtype, ishape)
    return rng, data, indices, updates, axis


ELEMENT_CASES = [
    (r, d)
    for r in ELEMENTS_REDUCTIONS
    for d in REDUCIBLE_DTYPES
    if not (r == "mean" and d == np.bool_)
]
ELEMENT_CASES += [("none", d) for d in MOVEMENT_DTYPES]


@pytest.mark.parametrize(
    ("reduction", "dtype"), ELEMENT_CASES, ids=[f"{r}-{dtype_id(d)}" for r, d in ELEMENT_CASES]
)
@few
@given(st.data())
def test_scatter_elements_update_matches_reference(reduction, dtype, data):
    draw = data.draw
    rng, values, indices, updates, axis = _elements_case(draw, dtype)
    use_init_val = draw(st.booleans())
    expected = ref_scatter_elements_update(
        values, indices, updates, axis, reduction=reduction, use_init_val=use_init_val
    )
    idx, _ = with_layout(indices, draw(layouts), rng)
    upd, _ = with_layout(updates, draw(layouts), rng)
    axis_arg = _axis_argument(draw, axis)

    def call(d, out):
        return sk.scatter_elements_update(
            d, idx, upd, axis_arg, reduction=reduction, use_init_val=use_init_val, out=out
        )

    run_and_compare(
        call,
        values,
        expected,
        data_layout=draw(layouts),
        out_mode=draw(out_modes),
        rng=rng,
    )


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dtype", [np.dtype(np.int16), np.dtype(np.float32)], ids=dtype_id)
@few
@given(st.data())
def test_scatter_elements_update_every_index_dtype(dtype, index_dtype, data):
    draw = data.draw
    rng, values, indices, updates, axis = _elements_case(draw, dtype, index_dtype)
    reduction = draw(st.sampled_from(("none", "sum", "max")))
    expected = ref_scatter_elements_update(values, indices, updates, axis, reduction=reduction)
    idx, _ = with_layout(indices, draw(layouts), rng)
    result = sk.scatter_elements_update(values, idx, updates, axis, reduction=reduction)
    assert_same(result, expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@few
@given(st.data())
def test_scatter_elements_update_v3_matches_reference(dtype, data):
    draw = data.draw
    rank = draw(st.integers(1, 4))
    shape = _dims(draw, rank)
    axis = draw(st.integers(-rank, rank - 1))
    ishape = [draw(st.integers(0, d)) for d in shape]
    ishape[axis % rank] = draw(st.integers(0, 6)) if shape[axis % rank] else 0
    rng = np.random.default_rng(draw(seeds))
    values = random_values(rng, dtype, shape)
    indices = random_indices(
        rng, ishape, shape[axis % rank], draw(st.sampled_from(INDEX_DTYPES)), allow_negative=False
    )
    updates = random_values(rng, dtype, ishape)
    expected = ref_scatter_elements_update(values, indices, updates, axis, allow_negative=False)
    op = sk.get_op("ScatterElementsUpdate-3")

    def call(d, out):
        return op(d, indices, updates, axis, out=out)

    run_and_compare(
        call, values, expected, data_layout=draw(layouts), out_mode=draw(out_modes), rng=rng
    )


@pytest.mark.parametrize("reduction", ["sum", "sub", "prod", "min", "max", "mean"])
@pytest.mark.parametrize(
    "dtype",
    [
        np.dtype(np.bool_),
        np.dtype(np.int8),
        np.dtype(np.int64),
        np.dtype(np.uint64),
        np.dtype(np.float16),
        BFLOAT16,
        np.dtype(np.float32),
    ],
    ids=dtype_id,
)
@few
@given(st.data())
def test_heavy_duplicates_fold_in_c_order(dtype, reduction, data):
    # Many updates on few targets: the fold order, wrapping, exact integer means and
    # half-precision accumulation all show up in the result.
    draw = data.draw
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 40))
    size = draw(st.integers(1, 3))
    values = random_values(rng, dtype, (size, 2))
    updates = random_values(rng, dtype, (n, 2), special=draw(st.booleans()))
    use_nd = reduction == "sub" or (reduction != "mean" and draw(st.booleans()))
    if use_nd:
        indices = random_indices(rng, (n, 1), size, np.int64, allow_negative=True)
        expected = ref_scatter_nd_update(values, indices, updates, reduction=reduction)
        result = sk.scatter_nd_update(values, indices, updates, reduction=reduction)
        assert_same(result, expected)
        return
    indices = random_indices(rng, (n, 2), size, np.int64, allow_negative=True)
    use_init_val = draw(st.booleans())
    if reduction == "mean" and dtype == np.bool_:
        with pytest.raises(TypeError, match="mean"):
            sk.scatter_elements_update(values, indices, updates, 0, reduction="mean")
        return
    expected = ref_scatter_elements_update(
        values, indices, updates, 0, reduction=reduction, use_init_val=use_init_val
    )
    result = sk.scatter_elements_update(
        values, indices, updates, 0, reduction=reduction, use_init_val=use_init_val
    )
    assert_same(result, expected)


# --------------------------------------------------------------------------------------------
# ScatterNDUpdate


def _nd_case(draw, dtype, allow_negative, index_dtype=None):
    rank = draw(st.integers(1, 4))
    shape = _dims(draw, rank)
    k = draw(st.sampled_from((0, rank, draw(st.integers(0, rank)))))
    batch = _dims(draw, draw(st.integers(0, 2)), hi=4)
    if any(shape[j] == 0 for j in range(k)) and int(np.prod(batch)) != 0:
        batch = (0, *batch[1:])
    if index_dtype is None:
        index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    rng = np.random.default_rng(draw(seeds))
    values = random_values(rng, dtype, shape)
    columns = [random_indices(rng, batch, shape[j], index_dtype, allow_negative) for j in range(k)]
    indices = np.stack(columns, axis=-1) if k else np.zeros((*batch, 0), index_dtype)
    indices = indices.astype(index_dtype)
    ushape = batch + shape[k:]
    if ushape == () and draw(st.booleans()):
        ushape = draw(st.sampled_from(((1,), (1, 1), (1, 1, 1))))  # 0-D expected: 1 element
    updates = random_values(rng, dtype, ushape)
    return rng, values, indices, updates


ND_CASES = [(r, d) for r in ND_REDUCTIONS for d in REDUCIBLE_DTYPES]
ND_CASES += [("none", d) for d in MOVEMENT_DTYPES]


@pytest.mark.parametrize(
    ("reduction", "dtype"), ND_CASES, ids=[f"{r}-{dtype_id(d)}" for r, d in ND_CASES]
)
@few
@given(st.data())
def test_scatter_nd_update_matches_reference(reduction, dtype, data):
    draw = data.draw
    rng, values, indices, updates = _nd_case(draw, dtype, allow_negative=True)
    expected = ref_scatter_nd_update(values, indices, updates, reduction=reduction)
    idx, _ = with_layout(indices, draw(layouts), rng)
    upd, _ = with_layout(updates, draw(layouts), rng)

    def call(d, out):
        return sk.scatter_nd_update(d, idx, upd, reduction=reduction, out=out)

    run_and_compare(
        call,
        values,
        expected,
        data_layout=draw(layouts),
        out_mode=draw(out_modes),
        rng=rng,
    )


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dtype", [np.dtype(np.uint8), np.dtype(np.float64)], ids=dtype_id)
@few
@given(st.data())
def test_scatter_nd_update_every_index_dtype(dtype, index_dtype, data):
    draw = data.draw
    rng, values, indices, updates = _nd_case(draw, dtype, True, index_dtype)
    reduction = draw(st.sampled_from(("none", "sum", "sub")))
    expected = ref_scatter_nd_update(values, indices, updates, reduction=reduction)
    idx, _ = with_layout(indices, draw(layouts), rng)
    assert_same(sk.scatter_nd_update(values, idx, updates, reduction=reduction), expected)


@pytest.mark.parametrize("version", ["ScatterNDUpdate-3", "ScatterNDUpdate-15"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@few
@given(st.data())
def test_scatter_nd_update_versions_match_reference(dtype, version, data):
    draw = data.draw
    v3 = version.endswith("-3")
    rng, values, indices, updates = _nd_case(draw, dtype, allow_negative=not v3)
    expected = ref_scatter_nd_update(values, indices, updates, allow_negative=not v3)
    op = sk.get_op(version)

    def call(d, out):
        return op(d, indices, updates, out=out)

    run_and_compare(
        call, values, expected, data_layout=draw(layouts), out_mode=draw(out_modes), rng=rng
    )


# --------------------------------------------------------------------------------------------
# ScatterUpdate


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@some
@given(st.data())
def test_scatter_update_matches_reference(dtype, data):
    draw = data.draw
    rank = draw(st.integers(1, 4))
    shape = _dims(draw, rank)
    axis = draw(st.integers(-rank, rank - 1))
    size = shape[axis % rank]
    ishape = _dims(draw, draw(st.integers(0, 2)), hi=3)
    if size == 0 and int(np.prod(ishape)) != 0:
        ishape = (0,)
    index_dtype = draw(st.sampled_from(INDEX_DTYPES))
    rng = np.random.default_rng(draw(seeds))
    values = random_values(rng, dtype, shape)
    indices = random_indices(rng, ishape, size, index_dtype, allow_negative=False)
    a = axis % rank
    updates = random_values(rng, dtype, shape[:a] + ishape + shape[a + 1 :])
    expected = ref_scatter_update(values, indices, updates, axis)
    idx, _ = with_layout(indices, draw(layouts), rng)
    upd, _ = with_layout(updates, draw(layouts), rng)
    axis_arg = _axis_argument(draw, axis)
    op = draw(st.sampled_from((sk.scatter_update, sk.get_op("ScatterUpdate-3"))))

    def call(d, out):
        return op(d, idx, upd, axis_arg, out=out)

    run_and_compare(
        call, values, expected, data_layout=draw(layouts), out_mode=draw(out_modes), rng=rng
    )


# --------------------------------------------------------------------------------------------
# SliceScatter

slice_bounds = st.one_of(
    st.integers(-8, 8),
    st.sampled_from((INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, INT64_MIN + 1, INT64_MAX - 1)),
    st.sampled_from((2**64 - 1, 2**70, -(2**70))),  # beyond int64: clamped all the same
)
slice_steps = st.one_of(
    st.integers(-7, 7).filter(bool),
    st.sampled_from((INT64_MIN, INT64_MAX, INT32_MIN, INT32_MAX, 2**40, -(2**40))),
    st.sampled_from((2**64 - 1, 2**70, -(2**70))),
)


def _param_argument(draw, values: list[int], scalar: bool):
    """``values`` as slice_scatter accepts them: scalars in any form, or sequences."""
    fits = [d for d in INDEX_DTYPES if all(np.iinfo(d).min <= v <= np.iinfo(d).max for v in values)]
    if not fits:  # only Python ints hold these values
        return draw(st.sampled_from((values[0], list(values)))) if scalar else list(values)
    dtype = draw(st.sampled_from(fits))
    if scalar:
        (v,) = values
        form = draw(st.sampled_from(("int", "scalar", "0d", "1elem", "list")))
        return {
            "int": v,
            "scalar": dtype.type(v),
            "0d": np.array(v, dtype),
            "1elem": np.array([v], dtype),
            "list": [v],
        }[form]
    return draw(st.sampled_from((list(values), np.array(values, dtype), tuple(values))))


def _slice_case(draw, dtype):
    rank = draw(st.integers(1, 4))
    shape = _dims(draw, rank)
    n = draw(st.integers(1, rank))
    axes = draw(st.permutations(range(rank)))[:n]
    axes = [a - rank if draw(st.booleans()) else a for a in axes]
    starts = [draw(slice_bounds) for _ in axes]
    stops = [draw(slice_bounds) for _ in axes]
    steps = [draw(slice_steps) for _ in axes]
    positions = [list(range(d)) for d in shape]
    for a, s0, s1, st_ in zip(axes, starts, stops, steps):
        positions[a] = slice_positions(s0, s1, st_, shape[a])
    ushape = tuple(len(p) for p in positions)
    rng = np.random.default_rng(draw(seeds))
    values = random_values(rng, dtype, shape)
    updates = random_values(rng, dtype, ushape)
    scalar = n == 1 and draw(st.booleans())
    args = [_param_argument(draw, p, scalar) for p in (starts, stops, steps, axes)]
    return rng, values, updates, (starts, stops, steps, axes), args


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
@some
@given(st.data())
def test_slice_scatter_matches_reference(dtype, data):
    draw = data.draw
    rng, values, updates, params, args = _slice_case(draw, dtype)
    expected = ref_slice_scatter(values, updates, *params)
    upd, _ = with_layout(updates, draw(layouts), rng)
    op = draw(st.sampled_from((sk.slice_scatter, sk.get_op("SliceScatter-15"))))

    def call(d, out):
        return op(d, upd, *args, out=out)

    run_and_compare(
        call, values, expected, data_layout=draw(layouts), out_mode=draw(out_modes), rng=rng
    )


@some
@given(st.data())
def test_slice_scatter_agrees_with_numpy_basic_slicing_for_small_params(data):
    # Where OpenVINO's clamping coincides with Python's (|start|, |stop| <= dim), the result is
    # plain NumPy slice assignment.
    draw = data.draw
    dim = draw(st.integers(1, 6))
    start, stop = draw(st.integers(-dim, dim - 1)), draw(st.integers(-dim, dim))
    step = draw(st.integers(-4, 4).filter(bool))
    values = np.arange(dim * 2, dtype=np.int32).reshape(2, dim)
    sl = slice(start, stop, step)
    target = values[:, sl]
    updates = -1 - np.arange(target.size, dtype=np.int32).reshape(target.shape)
    expected = values.copy()
    expected[:, sl] = updates
    assert_same(sk.slice_scatter(values, updates, start, stop, step, 1), expected)
