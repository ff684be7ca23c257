"""The job's plan: a spec checked against the input schema, before any task runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..core.cluster import on_cluster
from ..core.element_types import (
    DATA,
    DTYPE,
    ELEMENT_TYPES,
    SHAPE,
    VALUES,
    layout_of,
    numpy_dtype,
    spark_name,
    tensor_struct,
)
from ..core.errors import EngineUnavailable, InputFileError, SpecError
from ..runtime.reading import first_fields
from ..runtime.steps import BatchPlan, dry_run
from ..runtime.storage import Location
from ..specs.job_spec import JobSpec, Step, TensorInput

_INTEGER_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def _element_of_array(dtype: T.DataType, where: str) -> str:
    if not isinstance(dtype, T.ArrayType):
        raise SpecError(f"{where}: expected an array column, got {dtype.simpleString()}")
    name = dtype.elementType.simpleString()
    try:
        numpy_dtype(name)
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None
    return name


def _check_shape(dtype: T.DataType, where: str) -> None:
    if not (isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, _INTEGER_TYPES)):
        raise SpecError(
            f"{where}: a shape must be an array of integers, got {dtype.simpleString()}"
        )


def is_binary_tensor(dtype: T.DataType) -> bool:
    """Whether a column's type is a tensor struct in the binary layout."""
    return isinstance(dtype, T.StructType) and layout_of(dtype.names) == "binary"


def tensor_element(dtype: T.DataType, where: str, binary: str | None = None) -> str:
    """The element type of a tensor column: a struct in either layout, or a plain array.
    A binary tensor's element type is not in the schema: `binary` gives it (see
    `binary_elements`)."""
    if isinstance(dtype, T.StructType):
        fields = {f.name: f.dataType for f in dtype.fields}
        layout = layout_of(list(fields))
        if layout is None:
            raise SpecError(
                f"{where}: a tensor struct needs fields 'values' and 'shape' "
                "(or 'data', 'shape' and 'dtype')"
            )
        _check_shape(fields[SHAPE], f"{where}.{SHAPE}")
        if layout == "arrays":
            return _element_of_array(fields[VALUES], f"{where}.{VALUES}")
        if not isinstance(fields[DATA], T.BinaryType):
            raise SpecError(f"{where}.{DATA}: expected binary, got {fields[DATA].simpleString()}")
        if binary is None:
            raise SpecError(f"{where}: holds no row to tell its binary tensors' element type")
        return binary
    return _element_of_array(dtype, where)


def binary_elements(
    df: DataFrame, columns: Sequence[str], source: Location | None = None
) -> dict[str, str]:
    """The element type (a Spark name) of each binary tensor column in `columns`, read off
    its first non-null row (columns without one are left out): with the input's `source`,
    from its files with pyarrow (`reading.first_fields`, in this process on a local
    master); else, or where pyarrow cannot read them, one small Spark job for the first row
    of all of them and one more per column null there."""
    if source is not None and columns:
        try:
            read = on_cluster(df.sparkSession, first_fields, source, list(columns), DTYPE)
        except (EngineUnavailable, InputFileError, FileNotFoundError, OSError):
            pass  # Spark's reader says what it makes of the input
        else:
            return {c: _element_name(c, read[c]) for c in columns if c in read}
    names = [F.col(f"`{c}`.{DTYPE}").alias(f"d{i}") for i, c in enumerate(columns)]
    first = df.select(*names).limit(1).first() if columns else None
    if first is None:  # no rows at all
        return {}
    found = {}
    for i, column in enumerate(columns):
        name = first[f"d{i}"]
        if name is None:
            later = (
                df.select(F.col(f"`{column}`.{DTYPE}").alias("d"))
                .where(F.col("d").isNotNull())
                .limit(1)
                .first()
            )
            name = later["d"] if later is not None else None
        if name is not None:
            found[column] = _element_name(column, name)
    return found


def _element_name(column: str, dtype: str) -> str:
    try:
        return spark_name(np.dtype(dtype))
    except (TypeError, ValueError):
        raise SpecError(
            f"column {column!r} holds binary tensors of dtype {dtype!r}, not "
            f"one of {list(ELEMENT_TYPES)}"
        ) from None


def _input_element(
    source: TensorInput, schema: dict[str, T.DataType], where: str, binary: Mapping[str, str]
) -> str:
    if source.constant is not None:
        return source.constant.dtype
    for column in source.columns():
        if column not in schema:
            raise SpecError(f"{where}: no column {column!r}; the columns are {sorted(schema)}")
    if source.column is not None:
        column = source.column
        return tensor_element(schema[column], f"{where} (column {column!r})", binary.get(column))
    values, shape = source.split_columns()
    _check_shape(schema[shape], f"{where} (column {shape!r})")
    return _element_of_array(schema[values], f"{where} (column {values!r})")


def _dry_run(step: Step, elements: dict[str, str], where: str) -> None:
    """Runs the step on zero rows: bad attributes or dtypes fail here, not in a task."""
    try:
        dry_run(step.op, step.attributes, {n: numpy_dtype(e) for n, e in elements.items()})
    except (TypeError, ValueError, IndexError) as exc:
        raise SpecError(f"{where} ({step.op}): {exc}") from None


def plan_job(
    schema: T.StructType,
    spec: JobSpec,
    *,
    keep_errors: bool,
    locate_rows: bool = False,
    binary: Mapping[str, str] | None = None,
) -> tuple[BatchPlan, T.StructType]:
    """The executors' plan and the output schema of `spec` applied to `schema`; `binary`
    gives the element type of binary tensor input columns (`binary_elements`)."""
    known = dict(binary or {})
    columns: dict[str, T.DataType] = {f.name: f.dataType for f in schema.fields}
    input_names = list(columns)
    row_id = spec.row_name
    if row_id is not None and row_id not in columns:
        raise SpecError(f"job: row_id column {row_id!r} is not in the input")
    passthrough = list(spec.passthrough) if spec.passthrough is not None else input_names
    for name in passthrough:
        if name not in columns:
            raise SpecError(f"job: passthrough column {name!r} is not in the input")
    if row_id is not None and row_id not in passthrough:
        passthrough.insert(0, row_id)  # failed rows must stay identifiable
    out_fields = [T.StructField(n, columns[n], True) for n in passthrough]
    for number, step in enumerate(spec.steps):
        where = f"steps[{number}]"
        elements = {
            name: _input_element(source, columns, f"{where}.inputs.{name}", known)
            for name, source in step.inputs.items()
        }
        _dry_run(step, elements, where)
        if step.output in columns:
            raise SpecError(f"{where}: output column {step.output!r} already exists")
        result_type = tensor_struct(elements["data"], with_error=keep_errors, layout=spec.layout)
        if spec.layout == "binary":
            known[step.output] = elements["data"]
        columns[step.output] = result_type
        out_fields.append(T.StructField(step.output, result_type, True))
    plan = BatchPlan(
        steps=spec.steps,
        output_columns=tuple(f.name for f in out_fields),
        keep_errors=keep_errors,
        row_id=row_id,
        locate_rows=locate_rows and row_id is None,
        layout=spec.layout,
        binary_elements=tuple(sorted(known.items())),
    )
    return plan, T.StructType(out_fields)
