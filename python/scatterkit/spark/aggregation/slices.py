"""Slice updates in any layout, as the list arrays of the aggregate's type the folds read.

An event updates a slice (fewer coordinates than the tensor's rank) with an ``array<T>``
value, or with a tensor of the slice's shape in either tensor layout
(`core.element_types`): ``struct<values, shape>`` or ``struct<data, shape, dtype>``, whose
bytes are decoded here. Values convert to the aggregate's type only where the conversion
gives Spark's cast's bits (`cast_as_spark`); a column of another type must be cast first.

A null slice (or a tensor without values or data) stays null: skipped, as Spark's
aggregates skip nulls. A tensor that cannot be this slice (a null or other shape, bytes
that do not match the shape and dtype, a dtype the aggregate cannot take) is a problem of
its row (row -> message), for on_error.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.element_types import DATA, DTYPE, SHAPE, VALUES, cast_as_spark
from ..runtime.tensors import binary_element_dtype, struct_layout
from ..specs.agg_spec import AggSpec

Problems = dict  # dict[int, str]: row -> why its slice cannot be used
_INT32_MAX = 2**31 - 1


def slice_lists(spec: AggSpec, updates: pa.Array) -> tuple[pa.Array, Problems]:
    """`updates` as a list array of the aggregate's element type, and the rows that cannot
    be slices (null in the lists, or of the wrong length). A value column (the tensor's
    rank of coordinates) passes as is."""
    if isinstance(updates, pa.ChunkedArray):
        updates = updates.combine_chunks()
    if spec.k == len(spec.shape):
        return updates, {}
    lists, problems = _as_lists(spec, updates, f"updates {spec.updates!r}")
    return lists, {**_length_problems(spec, lists), **problems}


def _length_problems(spec: AggSpec, lists: pa.Array) -> Problems:
    """Rows whose (non-null) slice does not hold ``prod(shape[k:])`` values."""
    size = spec.slice_size
    lengths = np.asarray(pc.list_value_length(lists).fill_null(size), dtype=np.int64)
    return {
        int(row): f"updates {spec.updates!r} holds {lengths[row]} value(s); a slice of shape "
        f"{list(spec.shape[spec.k :])} takes {size}"
        for row in np.flatnonzero(lengths != size)
    }


def _as_lists(spec: AggSpec, updates: pa.Array, what: str) -> tuple[pa.Array, Problems]:
    """An array or tensor column's slices as lists, and the rows that cannot be slices."""
    if pa.types.is_list(updates.type) or pa.types.is_large_list(updates.type):
        return _cast_list(spec, updates, what), {}
    if not pa.types.is_struct(updates.type):
        raise TypeError(
            f"{what} must be an array or tensor column for {spec.k} index column(s) of a "
            f"rank-{len(spec.shape)} tensor, got {updates.type}"
        )
    names, layout = struct_layout(updates, what)
    content = updates.field(VALUES if layout == "arrays" else DATA)
    present = np.asarray(updates.is_valid()) & np.asarray(content.is_valid())  # else skipped
    problems = _shape_problems(spec, updates.field(SHAPE), present, what)
    if layout == "arrays":
        return _with_nulls(_cast_list(spec, content, what), present, problems), problems
    dtypes = updates.field(DTYPE) if DTYPE in names else None
    return _decode(spec, content, dtypes, present, problems, what), problems


def _cast_list(spec: AggSpec, values: pa.Array, what: str) -> pa.Array:
    """A list array with its values in the aggregate's type."""
    child = values.type.value_type
    target = pa.from_numpy_dtype(spec.element_dtype)
    if child == target:
        return values
    if not (
        pa.types.is_integer(child) or pa.types.is_floating(child) or pa.types.is_boolean(child)
    ) or not cast_as_spark(np.dtype(child.to_pandas_dtype()), spec.element_dtype):
        raise TypeError(
            f"{what} holds {child} values, which Spark's cast to {spec.dtype} may change: "
            f"cast the column first (F.col(...).cast('array<{spec.dtype}>'))"
        )
    large = pa.types.is_large_list(values.type)
    return values.cast(pa.large_list(target) if large else pa.list_(target), safe=False)


def _shape_problems(spec: AggSpec, shapes: pa.Array, present: np.ndarray, what: str) -> Problems:
    """Present rows whose shape is not the slice's."""
    slice_shape = list(spec.shape[spec.k :])
    lengths = np.asarray(pc.list_value_length(shapes).fill_null(-1), np.int64)
    ok = lengths == len(slice_shape)
    offsets = np.asarray(shapes.offsets, np.int64)
    flat = np.asarray(shapes.values.fill_null(-1), np.int64) if len(shapes.values) else None
    if flat is not None and ok.any():
        rows = np.flatnonzero(ok)
        at = offsets[rows][:, None] + np.arange(len(slice_shape))
        ok[rows] = (flat[at] == np.asarray(slice_shape, np.int64)).all(axis=1)
    problems: Problems = {}
    for row in np.flatnonzero(present & ~ok).tolist():
        found = shapes[row].as_py()
        problems[row] = (
            f"{what} has no shape"
            if found is None
            else f"{what} holds a tensor of shape {found}; a slice of shape {slice_shape} is needed"
        )
    return problems


def _decode(
    spec: AggSpec,
    data: pa.Array,
    dtypes: pa.Array | None,
    present: np.ndarray,
    problems: Problems,
    what: str,
) -> pa.Array:
    """Binary slices as a list array of the aggregate's type; adds each bad row's problem.
    The rows of each dtype decode with one gather of their bytes (a view when every row is
    good and of the aggregate's type)."""
    rows, size, target = len(data), spec.slice_size, spec.element_dtype
    width = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    offsets = np.frombuffer(
        data.buffers()[1], width, rows + 1, data.offset * np.dtype(width).itemsize
    ).astype(np.int64)
    lengths = np.diff(offsets)
    buffer = data.buffers()[2]
    raw = np.frombuffer(buffer, np.uint8) if buffer is not None else np.empty(0, np.uint8)
    names = (dtypes if dtypes is not None else pa.nulls(rows, pa.string())).fill_null("float32")
    usable = present.copy()
    usable[list(problems)] = False
    decoded = np.zeros(rows, bool)
    out: np.ndarray | None = None
    for name in pc.unique(names).to_pylist():
        of_name = usable & np.asarray(pc.equal(names, name))
        if not of_name.any():
            continue
        source = _dtype(name)
        if source is None or not cast_as_spark(source, target):
            kind = (
                "not a NumPy number or boolean dtype"
                if source is None
                else (f"which Spark's cast to {spec.dtype} may change")
            )
            problems.update(
                dict.fromkeys(
                    np.flatnonzero(of_name).tolist(), f"{what} holds {name} values, {kind}"
                )
            )
            continue
        takes = size * source.itemsize
        for row in np.flatnonzero(of_name & (lengths != takes)).tolist():
            problems[row] = (
                f"{what} holds {lengths[row]} byte(s); a slice of shape "
                f"{list(spec.shape[spec.k :])} of {source.name} takes {takes}"
            )
        of_name &= lengths == takes
        if of_name.all() and source == target:  # the common case: the bytes as they are
            out = raw[offsets[0] : offsets[-1]].view(target)
            decoded[:] = True
            break
        if out is None:
            out = np.zeros(rows * size, target)
        picked = np.flatnonzero(of_name)
        at = offsets[picked][:, None] + np.arange(takes)
        out.reshape(rows, size)[picked] = raw[at].view(source).reshape(len(picked), size)
        decoded[picked] = True
    if out is None:
        out = np.zeros(rows * size, target)
    ends = pa.array(np.arange(rows + 1, dtype=np.int64) * size)
    lists = pa.LargeListArray if rows * size > _INT32_MAX else pa.ListArray
    whole = lists.from_arrays(
        ends.cast(pa.int64() if lists is pa.LargeListArray else pa.int32()), pa.array(out)
    )
    return _with_nulls(whole, decoded, {})


def _dtype(name: str) -> np.dtype | None:
    """A binary tensor's dtype by its name, else None."""
    try:
        return binary_element_dtype(name)
    except TypeError:
        return None


def _with_nulls(values: pa.Array, keep: np.ndarray, problems: Problems) -> pa.Array:
    """`values` with the rows not kept, or with a problem, null."""
    mask = ~keep
    if problems:
        mask = mask.copy()
        mask[list(problems)] = True
    if not mask.any():
        return values
    return pc.if_else(pa.array(mask), pa.nulls(len(values), values.type), values)
