"""Element types: Spark SQL names, NumPy dtypes and Arrow types of tensor values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

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


def tensor_ddl(element: str, *, with_error: bool = False) -> str:
    """DDL of a tensor column: ``struct<values: array<T>, shape: array<int>>``.

    With ``with_error`` the struct carries a third field, ``error`` (a string).
    """
    fields = f"values: array<{element_type(element)}>, shape: array<int>"
    if with_error:
        fields += ", error: string"
    return f"struct<{fields}>"


def tensor_struct(element: str, *, with_error: bool = False) -> T.StructType:
    """The Spark type of a tensor column (see `tensor_ddl`)."""
    fields = [
        T.StructField("values", T.ArrayType(_SPARK_TYPES[element_type(element)], True), True),
        T.StructField("shape", T.ArrayType(T.IntegerType(), True), True),
    ]
    if with_error:
        fields.append(T.StructField("error", T.StringType(), True))
    return T.StructType(fields)
