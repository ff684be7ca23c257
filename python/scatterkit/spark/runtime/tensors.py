"""Tensor columns <-> `Ragged` rows, without copying the values.

A tensor column arrives from Spark as an Arrow ``struct<values: list<T>, shape: list<int>>``
(or as a plain ``list<T>``, a 1-D tensor per row, or as two separate list columns). Its
values are read as a NumPy view of the Arrow child buffer, its offsets widened to int64:
exactly the layout `run_batch` takes. A row that cannot be used (a null tensor, a null
element, a null or missing shape) is reported as a problem for that row, never raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._batch import Ragged

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


def read_tensor(array: pa.Array | pa.ChunkedArray, what: str) -> TensorRows:
    """Tensors from a tensor struct column (values, shape) or a plain list column (1-D)."""
    array = _flat(array)
    if not pa.types.is_struct(array.type):
        return read_split(array, None, what)
    names = {array.type.field(i).name for i in range(array.type.num_fields)}
    if not {"values", "shape"} <= names:
        raise TypeError(
            f"{what}: a tensor struct needs fields 'values' and 'shape', got {sorted(names)}"
        )
    # StructArray.field applies the struct's own offset and length to the child.
    rows = read_split(array.field("values"), array.field("shape"), what)
    if array.null_count:
        nulls = {r: f"{what} is null" for r in np.flatnonzero(~_validity(array)).tolist()}
        rows = TensorRows(rows.ragged, _merge(nulls, rows.problems))
    return rows


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
) -> pa.StructArray:
    """A tensor struct column from output values laid out as ``like`` (data's rows).

    Rows where ``valid`` is False are null. With ``errors`` the struct gets a third
    field ``error`` holding each row's message: the struct itself then stays non-null
    (its ``values`` and ``shape`` are null on failed rows) so that the message survives.
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
    offsets = _offsets32(values_offsets, "values")
    shape_offsets = _offsets32(shape_offsets, "shape")
    shapes = pa.array(np.require(shapes, dtype=np.int32))
    if errors is None:
        fields = [
            pa.ListArray.from_arrays(offsets, pa.array(values)),
            pa.ListArray.from_arrays(shape_offsets, shapes),
        ]
        return pa.StructArray.from_arrays(fields, names=["values", "shape"], mask=invalid)
    fields = [
        pa.ListArray.from_arrays(offsets, pa.array(values), mask=invalid),
        pa.ListArray.from_arrays(shape_offsets, shapes, mask=invalid),
        pa.array(list(errors), pa.string()),
    ]
    return pa.StructArray.from_arrays(fields, names=["values", "shape", "error"])
