"""Tensor columns' facts: element types (Spark SQL names, NumPy dtypes, Arrow types) and
the two layouts of a tensor column, with their field names (the one place for both).

- ``arrays``: ``struct<values: array<T>, shape: array<int>>``, Spark SQL's own types: SQL
  functions read and write it, and Spark converts it element by element;
- ``binary``: ``struct<data: binary, shape: array<int>, dtype: string>``, the tensor's
  C-order little-endian bytes, its shape and its NumPy dtype name ("float32"): Spark moves
  the bytes as one value, and any reader decodes a row without guessing.

A column written with ``on_error="keep"`` has a third (fourth) field, ``error``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from .options import LAYOUTS

# Spark's simple type names (DataType.simpleString) for the element types a tensor may hold.
_SPARK_TO_NUMPY: dict[str, np.dtype] = {
    "boolean": np.dtype(np.bool_),
    "tinyint": np.dtype(np.int8),
    "smallint": np.dtype(np.int16),
    "int": np.dtype(np.int32),
    "bigint": np.dtype(np.int64),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
}
# Friendly aliases accepted wherever an element type is named.
_ALIASES = {
    "bool": "boolean",
    "byte": "tinyint",
    "int8": "tinyint",
    "short": "smallint",
    "int16": "smallint",
    "integer": "int",
    "int32": "int",
    "long": "bigint",
    "int64": "bigint",
    "float32": "float",
    "double64": "double",
    "float64": "double",
}

ELEMENT_TYPES: tuple[str, ...] = tuple(_SPARK_TO_NUMPY)

VALUES, SHAPE, ERROR = "values", "shape", "error"  # the arrays layout (and the error)
DATA, DTYPE = "data", "dtype"  # the binary layout's bytes and NumPy dtype name

_SPARK_TYPES: dict[str, T.DataType] = {
    "boolean": T.BooleanType(),
    "tinyint": T.ByteType(),
    "smallint": T.ShortType(),
    "int": T.IntegerType(),
    "bigint": T.LongType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
}


def element_type(name: str) -> str:
    """The canonical Spark name ("float", "double", "int", ...) of an element type name."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _SPARK_TO_NUMPY:
        raise ValueError(
            f"unsupported tensor element type {name!r}; expected one of {list(ELEMENT_TYPES)}"
        )
    return key


def numpy_dtype(spark_name: str) -> np.dtype:
    """The NumPy dtype of a Spark element type name."""
    return _SPARK_TO_NUMPY[element_type(spark_name)]


def spark_name(dtype: np.dtype | pa.DataType) -> str:
    """The Spark element type name of a NumPy dtype or an Arrow type."""
    if isinstance(dtype, pa.DataType):
        dtype = np.dtype(dtype.to_pandas_dtype())
    dtype = np.dtype(dtype)
    for name, candidate in _SPARK_TO_NUMPY.items():
        if candidate == dtype:
            return name
    raise ValueError(f"no Spark element type for dtype {dtype}")


def spark_type(name: str) -> T.DataType:
    """The Spark type of an element type name."""
    return _SPARK_TYPES[element_type(name)]


def cast_as_spark(source: np.dtype, target: np.dtype) -> bool:
    """Whether a plain cast (NumPy's, or pyarrow's unchecked one) of `source` values to
    `target` gives the bits of Spark's cast: one that keeps every value (the same type,
    integers to wider integers), or any number to a float (both round to nearest)."""
    source, target = np.dtype(source), np.dtype(target)
    return bool(np.can_cast(source, target, "safe")) or (
        target.kind == "f" and source.kind in "biuf"
    )


def check_layout(layout: str) -> str:
    """`layout` if it is one of LAYOUTS, else ValueError."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def tensor_struct(
    element: str, *, with_error: bool = False, layout: str = "arrays"
) -> T.StructType:
    """The Spark type of a tensor column of `element` values in `layout`."""
    shape = T.StructField(SHAPE, T.ArrayType(T.IntegerType(), True), True)
    if check_layout(layout) == "binary":
        fields = [
            T.StructField(DATA, T.BinaryType(), True),
            shape,
            T.StructField(DTYPE, T.StringType(), True),
        ]
    else:
        values = T.ArrayType(_SPARK_TYPES[element_type(element)], True)
        fields = [T.StructField(VALUES, values, True), shape]
    if with_error:
        fields.append(T.StructField(ERROR, T.StringType(), True))
    return T.StructType(fields)


def layout_of(struct_fields: set[str] | list[str]) -> str | None:
    """The layout a tensor struct's field names make ("arrays", "binary"), or None."""
    names = set(struct_fields)
    if {DATA, SHAPE} <= names:
        return "binary"
    if {VALUES, SHAPE} <= names:
        return "arrays"
    return None
