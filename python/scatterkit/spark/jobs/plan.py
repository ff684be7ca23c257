"""The job's plan: a spec checked against the input schema, before any task runs."""

from __future__ import annotations

from pyspark.sql import types as T

from ..core.element_types import numpy_dtype, tensor_struct
from ..core.errors import SpecError
from ..runtime.steps import BatchPlan, dry_run
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


def tensor_element(dtype: T.DataType, where: str) -> str:
    """The element type of a tensor column: a struct<values, shape> or a plain array."""
    if isinstance(dtype, T.StructType):
        fields = {f.name: f.dataType for f in dtype.fields}
        if "values" not in fields or "shape" not in fields:
            raise SpecError(f"{where}: a tensor struct needs fields 'values' and 'shape'")
        _check_shape(fields["shape"], f"{where}.shape")
        return _element_of_array(fields["values"], f"{where}.values")
    return _element_of_array(dtype, where)


def _input_element(source: TensorInput, schema: dict[str, T.DataType], where: str) -> str:
    if source.constant is not None:
        return source.constant.dtype
    for column in source.columns():
        if column not in schema:
            raise SpecError(f"{where}: no column {column!r}; the columns are {sorted(schema)}")
    if source.column is not None:
        return tensor_element(schema[source.column], f"{where} (column {source.column!r})")
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
    schema: T.StructType, spec: JobSpec, *, keep_errors: bool, locate_rows: bool = False
) -> tuple[BatchPlan, T.StructType]:
    """The executors' plan and the output schema of `spec` applied to `schema`."""
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
            name: _input_element(source, columns, f"{where}.inputs.{name}")
            for name, source in step.inputs.items()
        }
        _dry_run(step, elements, where)
        if step.output in columns:
            raise SpecError(f"{where}: output column {step.output!r} already exists")
        result_type = tensor_struct(elements["data"], with_error=keep_errors)
        columns[step.output] = result_type
        out_fields.append(T.StructField(step.output, result_type, True))
    plan = BatchPlan(
        steps=spec.steps,
        output_columns=tuple(f.name for f in out_fields),
        keep_errors=keep_errors,
        row_id=row_id,
        locate_rows=locate_rows and row_id is None,
    )
    return plan, T.StructType(out_fields)
