"""Tensor columns <-> `Ragged` rows, without copying the values.

A tensor column arrives from Spark in either layout (`core.element_types`): an Arrow
``struct<values: list<T>, shape: list<int>>`` (or a plain ``list<T>``, a 1-D tensor per
row, or two separate list columns), or ``struct<data: binary, shape: list<int>, dtype:
string>``. Its values are read as a NumPy view of the Arrow buffer (the child values, or
the binary data), its offsets widened to int64: exactly the layout `run_batch` takes. A
row that cannot be used (a null tensor, a null element, a null or missing shape, bytes
that do not match the shape and dtype) is reported as a problem for that row, never raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._batch import Ragged
from ..core.element_types import DATA, DTYPE, ERROR, SHAPE, VALUES, layout_of

Problems = dict  # dict[int, str]: row -> why it cannot be used (rows absent are fine)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class TensorRows:
    """The tensors of one column in one batch, with per-row problems."""

    ragged: Ragged
    problems: Problems

    @property
    def rows(self) -> int:
        return self.ragged.rows


@dataclass(frozen=True)
class _List:
    """A list array's values (a view), rebased int64 offsets and per-row problems."""

    values: np.ndarray
    offsets: np.ndarray
    problems: Problems


def _flat(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def _numeric_view(child: pa.Array, what: str) -> np.ndarray:
    """The child's values as a NumPy array: a zero-copy view unless they are booleans."""
    kind = child.type
    if pa.types.is_boolean(kind):  # bit-packed in Arrow: one byte per value in NumPy
        return pc.fill_null(child, False).to_numpy(zero_copy_only=False)
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        raise TypeError(f"{what}: tensor values must be numbers or booleans, got {kind}")
    dtype = np.dtype(kind.to_pandas_dtype())
    data = child.buffers()[1]
    if len(child) == 0 or data is None:
        return np.empty(0, dtype)
    # A view of the data buffer whatever the validity bitmap says: rows holding a null
    # element are reported as problems, so the values under the nulls are never used.
    return np.frombuffer(data, dtype, count=len(child), offset=child.offset * dtype.itemsize)


def _validity(array: pa.Array) -> np.ndarray:
    if array.null_count == 0:
        return np.ones(len(array), np.bool_)
    return array.is_valid().to_numpy(zero_copy_only=False)


def _read_list(array: pa.Array, what: str) -> _List:
    """Values view, offsets and problems of a list (or large list) array, slices included."""
    if not (pa.types.is_list(array.type) or pa.types.is_large_list(array.type)):
        raise TypeError(f"{what}: expected an array column, got {array.type}")
    offsets = array.offsets.to_numpy()  # already accounts for the array's own slice offset
    lo, hi = int(offsets[0]), int(offsets[-1])
    child = array.values.slice(lo, hi - lo)
    rebased = offsets.astype(np.int64) - lo
    problems: Problems = {}
    if child.null_count:
        nulls = np.zeros(len(child) + 1, np.int64)
        np.cumsum(child.is_null().to_numpy(zero_copy_only=False), out=nulls[1:])
        per_row = nulls[rebased[1:]] - nulls[rebased[:-1]]
        for r in np.flatnonzero(per_row).tolist():
            problems[r] = f"{what} holds {per_row[r]} null element(s)"
    for r in np.flatnonzero(~_validity(array)).tolist():
        problems[r] = f"{what} is null"
    return _List(_numeric_view(child, what), rebased, problems)


def _merge(*sources: Problems) -> Problems:
    """One problem per row: the first source that has one wins."""
    merged: Problems = {}
    for source in reversed(sources):
        merged.update(source)
    return merged


def _shape_values(shape: _List) -> np.ndarray:
    return np.require(shape.values, dtype=np.int64, requirements=["C"])


def read_split(values: pa.Array, shape: pa.Array | None, what: str) -> TensorRows:
    """Tensors from a values list column and a shape list column (None: 1-D rows)."""
    vals = _read_list(_flat(values), what if shape is None else f"{what} values")
    if shape is None:
        lengths = np.diff(vals.offsets)
        ragged = Ragged(vals.values, vals.offsets, lengths, np.arange(len(lengths) + 1))
        return TensorRows(ragged, vals.problems)
    shape = _flat(shape)
    if not (pa.types.is_list(shape.type) or pa.types.is_large_list(shape.type)) or not (
        pa.types.is_integer(shape.type.value_type)
    ):
        raise TypeError(f"{what}: the shape must be an array of integers, got {shape.type}")
    shp = _read_list(shape, f"{what} shape")
    ragged = Ragged(vals.values, vals.offsets, _shape_values(shp), shp.offsets)
    return TensorRows(ragged, _merge(vals.problems, shp.problems))


def read_tensor(
    array: pa.Array | pa.ChunkedArray, what: str, dtype: np.dtype | None = None
) -> TensorRows:
    """Tensors from a tensor struct column (either layout) or a plain list column (1-D).

    `dtype` is the element type binary tensors must hold (default: the first row's); a row
    of another dtype is a problem of that row."""
    array = _flat(array)
    if not pa.types.is_struct(array.type):
        return read_split(array, None, what)
    names, layout = struct_layout(array, what)
    # StructArray.field applies the struct's own offset and length to the child.
    if layout == "binary":
        dtypes = array.field(DTYPE) if DTYPE in names else None
        rows = read_binary(array.field(DATA), array.field(SHAPE), dtypes, what, dtype)
    else:
        rows = read_split(array.field(VALUES), array.field(SHAPE), what)
    if array.null_count:
        nulls = {r: f"{what} is null" for r in np.flatnonzero(~_validity(array)).tolist()}
        rows = TensorRows(rows.ragged, _merge(nulls, rows.problems))
    return rows


def struct_layout(array: pa.StructArray, what: str) -> tuple[list[str], str]:
    """A tensor struct's field names and layout; TypeError if it is not a tensor struct."""
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    layout = layout_of(names)
    if layout is None:
        raise TypeError(
            f"{what}: a tensor struct needs fields 'values' and 'shape' (or 'data', 'shape' "
            f"and 'dtype'), got {sorted(names)}"
        )
    return names, layout


def _binary_dtype(dtypes: pa.Array | None, wanted: np.dtype | None, what: str) -> np.dtype:
    """The element type of a binary column: `wanted`, or the first row's, else float32."""
    if wanted is not None:
        return np.dtype(wanted)
    if dtypes is not None:
        for name in dtypes.drop_null().unique().to_pylist()[:1]:
            try:
                return binary_element_dtype(name)
            except TypeError:
                break
    return np.dtype(np.float32)


def binary_element_dtype(name: str) -> np.dtype:
    """The NumPy dtype a binary tensor's dtype name gives; TypeError if it is not a
    little-endian number or boolean dtype."""
    try:
        found = np.dtype(name)
    except TypeError:
        raise TypeError(f"{name!r} is not a NumPy dtype name") from None
    if found.kind not in "biuf" or found.byteorder == ">":
        raise TypeError(f"{name!r} is not a little-endian number or boolean dtype")
    return found.newbyteorder("<") if found.byteorder == "=" else found


def read_binary(
    data: pa.Array,
    shape: pa.Array,
    dtypes: pa.Array | None,
    what: str,
    dtype: np.dtype | None = None,
) -> TensorRows:
    """Tensors from binary data, shape and dtype name columns (the binary layout).

    The values are a view of the binary column's data buffer where every row's bytes are
    whole elements (the usual case); otherwise the good rows are copied out."""
    element = _binary_dtype(dtypes, dtype, what)
    data = _flat(data)
    if not (pa.types.is_binary(data.type) or pa.types.is_large_binary(data.type)):
        raise TypeError(f"{what}: the data of a binary tensor must be binary, got {data.type}")
    shp = _read_list(_flat(shape), f"{what} shape")
    shapes = _shape_values(shp)
    offsets = _binary_offsets(data)
    lengths = np.diff(offsets)
    problems: Problems = dict(shp.problems)
    for r in np.flatnonzero(~_validity(data)).tolist():
        problems.setdefault(r, f"{what} data is null")
    if dtypes is not None:  # each distinct name checked once, not each row's
        names = _flat(dtypes)
        for name in names.drop_null().unique().to_pylist():
            if _dtype_name(name) != element.name:
                rows = pc.equal(names, name).fill_null(False).to_numpy(zero_copy_only=False)
                for r in np.flatnonzero(rows).tolist():
                    problems.setdefault(r, f"{what} holds {name} values, not {element.name}")
    sizes = _row_sizes(shapes, shp.offsets)
    expected = sizes * element.itemsize
    for r in np.flatnonzero((lengths != expected) & _validity(data)).tolist():
        shape_r = shapes[shp.offsets[r] : shp.offsets[r + 1]].tolist()
        problems.setdefault(
            r,
            f"{what} holds {lengths[r]} byte(s); shape {shape_r} of {element.name} "
            f"takes {expected[r]}",
        )
    buffer = data.buffers()[2]
    base = offsets - offsets[0]
    whole = not problems and not (base % element.itemsize).any()
    if whole and buffer is not None and len(data):
        start = int(offsets[0])
        values = np.frombuffer(
            buffer, element, count=int(base[-1]) // element.itemsize, offset=start
        )
        return TensorRows(Ragged(values, base // element.itemsize, shapes, shp.offsets), problems)
    # Some rows are bad (or misaligned): copy the good rows' bytes, bad rows empty.
    good = np.ones(len(lengths), bool)
    good[list(problems)] = False
    counts = np.where(good, sizes, 0)
    element_offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(counts, out=element_offsets[1:])
    raw = np.frombuffer(buffer, np.uint8) if buffer is not None else np.empty(0, np.uint8)
    pieces = [raw[offsets[r] : offsets[r + 1]] for r in np.flatnonzero(good).tolist()]
    joined = np.concatenate(pieces) if pieces else np.empty(0, np.uint8)
    values = joined.view(element) if len(joined) else np.empty(0, element)
    return TensorRows(Ragged(values, element_offsets, shapes, shp.offsets), problems)


def _binary_offsets(data: pa.Array) -> np.ndarray:
    """A binary array's byte offsets (its own slice applied), as int64."""
    width = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    buffer = data.buffers()[1]
    if buffer is None:
        return np.zeros(len(data) + 1, np.int64)
    raw = np.frombuffer(buffer, width, count=len(data) + 1, offset=data.offset * width(0).itemsize)
    return raw.astype(np.int64)


def _dtype_name(name: str) -> str:
    try:
        return binary_element_dtype(name).name
    except TypeError:
        return name


def _row_sizes(shapes: np.ndarray, shape_offsets: np.ndarray) -> np.ndarray:
    """Elements per row: the product of each row's shape (1 for a 0-D tensor)."""
    sizes = np.ones(len(shape_offsets) - 1, np.int64)
    ranked = np.diff(shape_offsets) > 0
    if ranked.any():
        # Each ranked row's dimensions run from its offset to the next ranked row's (0-D
        # rows between take none), the last one's to the end of its dimensions.
        lo, hi = int(shape_offsets[0]), int(shape_offsets[-1])
        dims = np.asarray(shapes[lo:hi], np.int64)
        sizes[ranked] = np.multiply.reduceat(dims, shape_offsets[:-1][ranked] - lo)
    return sizes


def constant_rows(rows: int, shape: Sequence[int], dtype: np.dtype, fill: object) -> TensorRows:
    """The same constant tensor in every row (e.g. the zeros an aggregation starts from)."""
    size = int(np.prod(shape, dtype=np.int64))
    values = np.full(rows * size, fill, dtype=dtype)
    offsets = np.arange(rows + 1, dtype=np.int64) * size
    shapes = np.tile(np.asarray(shape, np.int64), rows)
    shape_offsets = np.arange(rows + 1, dtype=np.int64) * len(shape)
    return TensorRows(Ragged(values, offsets, shapes, shape_offsets), {})


def _without_rows(
    offsets: np.ndarray, flat: np.ndarray, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``offsets`` and ``flat`` with the rows where ``keep`` is False made empty."""
    lengths = np.diff(offsets) * keep
    kept = np.zeros(len(offsets), np.int64)
    np.cumsum(lengths, out=kept[1:])
    return kept, flat[offsets[0] : offsets[-1]][np.repeat(keep, np.diff(offsets))]


def _offsets32(offsets: np.ndarray, what: str) -> pa.Array:
    if len(offsets) and int(offsets[-1]) > _INT32_MAX:
        raise ValueError(
            f"{what}: a batch holds more than 2**31 - 1 elements; lower "
            "spark.sql.execution.arrow.maxRecordsPerBatch / maxBytesPerBatch"
        )
    return pa.array(offsets.astype(np.int32))


def tensor_array(
    values: np.ndarray,
    like: Ragged,
    valid: np.ndarray,
    errors: Sequence[str | None] | None = None,
    layout: str = "arrays",
) -> pa.StructArray:
    """A tensor struct column in `layout` from output values laid out as ``like`` (data's
    rows).

    Rows where ``valid`` is False are null. With ``errors`` the struct gets a last field
    ``error`` holding each row's message: the struct itself then stays non-null (its other
    fields are null on failed rows) so that the message survives.
    """
    values_offsets, shape_offsets = like.offsets, like.shape_offsets
    shapes = like.shapes
    invalid = None
    if not valid.all():
        # Null rows hold no elements: the Parquet writers of pyarrow 16-23 refuse null lists of
        # non-zero length, and the values under a null are not meant to be read anyway.
        values_offsets, values = _without_rows(values_offsets, values, valid)
        shape_offsets, shapes = _without_rows(shape_offsets, shapes, valid)
        invalid = pa.array(~valid)
    shape_offsets = _offsets32(shape_offsets, SHAPE)
    shapes = pa.array(np.require(shapes, dtype=np.int32))
    row_mask = None if errors is None else invalid  # with errors, the fields carry the nulls
    if layout == "binary":
        fields, names = _binary_fields(values, values_offsets, valid, row_mask), [DATA]
    else:
        offsets = _offsets32(values_offsets, VALUES)
        fields, names = (
            [pa.ListArray.from_arrays(offsets, pa.array(values), mask=row_mask)],
            [VALUES],
        )
    fields.append(pa.ListArray.from_arrays(shape_offsets, shapes, mask=row_mask))
    names.append(SHAPE)
    if layout == "binary":
        dtype = pa.array([values.dtype.name] * len(valid), pa.string())
        fields.append(
            dtype if row_mask is None else pc.if_else(row_mask, pa.scalar(None, pa.string()), dtype)
        )
        names.append(DTYPE)
    if errors is None:
        return pa.StructArray.from_arrays(fields, names=names, mask=invalid)
    fields.append(pa.array(list(errors), pa.string()))
    return pa.StructArray.from_arrays(fields, names=[*names, ERROR])


def _binary_fields(
    values: np.ndarray, offsets: np.ndarray, valid: np.ndarray, mask: pa.Array | None
) -> list[pa.Array]:
    """The data field: each row's values as little-endian bytes, in one buffer (no copy
    where the values are already contiguous little-endian)."""
    flat = np.ascontiguousarray(values[offsets[0] : offsets[-1]])
    if flat.dtype.byteorder == ">":
        flat = flat.astype(flat.dtype.newbyteorder("<"))
    byte_offsets = (offsets - offsets[0]) * flat.dtype.itemsize
    arrow_offsets = _offsets32(byte_offsets, DATA)
    validity = None
    if mask is not None:
        validity = pa.array(valid).buffers()[1]
    data = pa.Array.from_buffers(
        pa.binary(),
        len(valid),
        [validity, arrow_offsets.buffers()[1], pa.py_buffer(flat.view(np.uint8))],
        null_count=int((~valid).sum()) if mask is not None else 0,
    )
    return [data]
