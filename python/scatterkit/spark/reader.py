"""Tensor columns of Parquet files into NumPy, for the tools that consume them (PyTorch, JAX,
NumPy): pyarrow only, no Spark.

>>> from scatterkit.spark import read_tensors
>>> spend = read_tensors("out/", "spend")   # (rows, 24, 16) float32  # doctest: +SKIP

Both layouts are read (`core.element_types`); the binary layout's bytes become the array's
memory without a copy where the file's rows sit in one buffer.
"""

from __future__ import annotations

import os
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .core.element_types import DATA, DTYPE, SHAPE, VALUES, layout_of

Tensors = Union[np.ndarray, "list[np.ndarray | None]"]


def read_tensors(
    path: str | os.PathLike[str],
    column: str,
    *,
    filesystem: Any = None,
    stack: bool = True,
) -> Tensors:
    """The tensors of `column` in the Parquet file or directory at `path`.

    When every row holds a tensor of one shape and dtype (and `stack`), one array of shape
    ``(rows, *shape)``: binary tensors are a view of the bytes read (no copy) when they
    come in one piece, arrays tensors a view of the values. Otherwise a list with one
    array (or None, for a null tensor or a row kept in error) per row, in file order.

    Raises ValueError for a column that is not a tensor column, or a binary tensor whose
    bytes do not match its shape and dtype (naming the row).
    """
    table = pq.read_table(path, columns=[column], filesystem=filesystem)
    if column not in table.column_names:
        raise ValueError(f"no column {column!r} in {os.fspath(path)!r}")
    chunks = table.column(column).chunks
    if not chunks:
        return np.empty((0,), np.float32) if stack else []
    kind = chunks[0].type
    if pa.types.is_struct(kind) and layout_of([f.name for f in kind]) == "binary":
        return _binary(chunks, column, stack)
    if pa.types.is_struct(kind) and layout_of([f.name for f in kind]) == "arrays":
        return _arrays(chunks, column, stack)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _arrays([pa.StructArray.from_arrays([c], [VALUES]) for c in chunks], column, stack)
    raise ValueError(f"column {column!r} is not a tensor column: {kind}")


def _uniform_shape(chunk: pa.StructArray) -> tuple[int, ...] | None:
    """The one shape every row of a chunk has (no null row), else None."""
    if chunk.null_count or len(chunk) == 0:
        return None
    if chunk.type.get_field_index(SHAPE) < 0:  # a plain list: 1-D tensors
        lengths = np.diff(chunk.field(VALUES).offsets.to_numpy())
        return (int(lengths[0]),) if (lengths == lengths[0]).all() else None
    shapes = chunk.field(SHAPE)
    if shapes.null_count:
        return None
    ranks = np.diff(shapes.offsets.to_numpy())
    if not (ranks == ranks[0]).all():
        return None
    dims = shapes.flatten().to_numpy(zero_copy_only=False).reshape(len(chunk), int(ranks[0]))
    if not (dims == dims[0]).all():
        return None
    return tuple(int(d) for d in dims[0])


def _stacked(views: list[np.ndarray], rows: int, shape: tuple[int, ...]) -> np.ndarray:
    flat = views[0] if len(views) == 1 else np.concatenate(views)
    return flat.reshape((rows, *shape))


def _binary(chunks: list[pa.Array], column: str, stack: bool) -> Tensors:
    if stack:  # one shape and dtype everywhere: a view of each chunk's bytes, no row loop
        views, rows, first = [], 0, None
        for chunk in chunks:
            shape, data = _uniform_shape(chunk), chunk.field(DATA)
            names = chunk.field(DTYPE).unique().to_pylist()
            if shape is None or data.null_count or len(names) != 1 or names[0] is None:
                break
            dtype = np.dtype(names[0]).newbyteorder("<")
            if first not in (None, (shape, dtype)):
                break
            first, count = (shape, dtype), int(np.prod(shape, dtype=np.int64))
            offsets = _offsets(data)
            if not (np.diff(offsets) == count * dtype.itemsize).all():
                break  # a row's bytes do not match: the row loop names it
            views.append(np.frombuffer(data.buffers()[2], dtype, len(chunk) * count, offsets[0]))
            rows += len(chunk)
        else:
            if first is not None:
                return _stacked(views, rows, first[0])
    return _binary_rows(chunks, column)


def _offsets(data: pa.Array) -> np.ndarray:
    width = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    return np.frombuffer(
        data.buffers()[1], width, count=len(data) + 1, offset=data.offset * np.dtype(width).itemsize
    ).astype(np.int64)


def _binary_rows(chunks: list[pa.Array], column: str) -> list[np.ndarray | None]:
    rows: list[np.ndarray | None] = []
    for chunk in chunks:
        for item in chunk.to_pylist():
            if item is None or item[DATA] is None or item[SHAPE] is None or item[DTYPE] is None:
                rows.append(None)
                continue
            dtype, shape = np.dtype(item[DTYPE]).newbyteorder("<"), tuple(item[SHAPE])
            size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if len(item[DATA]) != size:
                raise ValueError(
                    f"{column}: row {len(rows)} holds {len(item[DATA])} byte(s); shape "
                    f"{list(shape)} of {dtype.name} takes {size}"
                )
            rows.append(np.frombuffer(item[DATA], dtype).reshape(shape))
    return rows


def _arrays(chunks: list[pa.Array], column: str, stack: bool) -> Tensors:
    if stack:
        views, rows, first = [], 0, None
        for chunk in chunks:
            shape, values = _uniform_shape(chunk), chunk.field(VALUES)
            if shape is None or values.null_count or values.values.null_count:
                break
            if first not in (None, shape):
                break
            first, count = shape, int(np.prod(shape, dtype=np.int64))
            offsets = values.offsets.to_numpy()
            if not (np.diff(offsets) == count).all():
                break
            flat = values.values.to_numpy(zero_copy_only=False)
            views.append(flat[offsets[0] : offsets[-1]])
            rows += len(chunk)
        else:
            if first is not None:
                return _stacked(views, rows, first)
    rows_out: list[np.ndarray | None] = []
    for chunk in chunks:
        shapes = chunk.field(SHAPE).to_pylist() if chunk.type.get_field_index(SHAPE) >= 0 else None
        for r, item in enumerate(chunk.field(VALUES).to_pylist()):
            valid = chunk[r].is_valid and item is not None
            shape = None if shapes is None else shapes[r]
            if not valid or (shapes is not None and shape is None):
                rows_out.append(None)
                continue
            array = np.asarray(item, chunk.field(VALUES).type.value_type.to_pandas_dtype())
            if shape is not None:
                if array.size != int(np.prod(shape, dtype=np.int64)):
                    raise ValueError(
                        f"{column}: row {len(rows_out)} holds {array.size} value(s) for shape "
                        f"{list(shape)}"
                    )
                array = array.reshape(shape)
            rows_out.append(array)
    return rows_out
