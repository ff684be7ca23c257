"""Column functions: the scatter operations on tensor columns, for ``select``/``withColumn``.

A tensor column is ``struct<values: array<T>, shape: array<int>>`` (the arrays layout; see
`tensor` to build one from two columns) or ``struct<data: binary, shape: array<int>,
dtype: string>`` (the binary layout: the tensor's C-order little-endian bytes, which Spark
moves as one value); a plain ``array<T>`` column is taken as a 1-D tensor per row. Every
function reads both layouts and writes the one its ``layout`` names (default arrays);
`to_binary` and `to_arrays` convert. Each function returns a tensor column computed by an
Arrow UDF: a whole record batch goes to the C++ kernels in one call, reading the values as
zero-copy views of the Arrow buffers.

>>> from scatterkit.spark import functions as skf
>>> df.withColumn("hist", skf.scatter_elements_update(
...     skf.full([96], 0.0), "bucket", "amount", 0, reduction="sum"))  # doctest: +SKIP

The result's element type is `dtype` (default ``"float"``) and must be data's. With
``on_error="fail"`` (default) a bad row fails the task with a message naming it (by
`row_id` when given); with ``on_error="keep"`` the result struct gets a last field,
``error``, and a failed row keeps its message there with its other fields null. A binary
tensor whose bytes do not match its shape and dtype is such a bad row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F

from .aggregation.api import aggregate as aggregate
from .aggregation.api import scatter_nd_agg as scatter_nd_agg
from .core.element_types import (
    DATA,
    SHAPE,
    VALUES,
    check_layout,
    numpy_dtype,
    spark_name,
    tensor_struct,
)
from .core.errors import RowError
from .core.options import ON_ERROR
from .runtime.steps import BatchPlan, dry_run, run_steps
from .runtime.tensors import read_tensor, tensor_array
from .runtime.threads import configure_threads
from .specs.constant import check_constant
from .specs.job_spec import OPS, Step, TensorInput

ColumnOrName = Union[Column, str]

_ROW_ID = "row_id"  # the row id's name in messages: "row_id=7"
_OUTPUT = "result"


def _col(c: ColumnOrName) -> Column:
    return F.col(c) if isinstance(c, str) else c


def tensor(values: ColumnOrName, shape: ColumnOrName) -> Column:
    """A tensor column (arrays layout) from a values array column and a shape array column."""
    return F.struct(_col(values).alias(VALUES), _col(shape).cast("array<int>").alias(SHAPE))


def full(shape: Sequence[int], fill: Any = 0, dtype: str = "float") -> Column:
    """The same constant tensor in every row (e.g. the zeros an aggregation starts from).

    Raises ValueError for a negative extent or a `fill` that `dtype` cannot hold exactly
    (Spark's cast would quietly truncate 0.5 to 0 in an int tensor).
    """
    constant = check_constant(shape, fill, dtype)
    name, shape = constant.dtype, constant.shape
    size = int(np.prod(shape, dtype=np.int64))
    values = F.array_repeat(F.lit(constant.fill).cast(name), size)
    dims = F.array(*[F.lit(d) for d in shape]) if len(shape) else F.array().cast("array<int>")
    return F.struct(values.alias(VALUES), dims.cast("array<int>").alias(SHAPE))


def _element_name(data: pa.Array) -> str | None:
    """The Spark name of a tensor column's element type (None if it has none)."""
    kind = data.type
    if pa.types.is_struct(kind) and kind.get_field_index(DATA) >= 0:  # binary: per row
        return None
    if pa.types.is_struct(kind) and kind.get_field_index(VALUES) >= 0:
        kind = kind.field(VALUES).type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return None
    try:
        return spark_name(kind.value_type)
    except (ValueError, TypeError, NotImplementedError):
        # an Arrow type Spark has no element name for: nothing to hold against `dtype` here
        return None


def _make_udf(
    op: str,
    attributes: Mapping[str, Any],
    inputs: Sequence[str],
    dtype: str,
    keep: bool,
    has_row_id: bool,
    layout: str = "arrays",
) -> Any:
    expected = numpy_dtype(dtype)
    names = list(inputs) + ([_ROW_ID] if has_row_id else [])
    step = Step(op, {n: TensorInput(column=n) for n in inputs}, _OUTPUT, dict(attributes))
    plan = BatchPlan(
        (step,),
        (_OUTPUT,),
        keep_errors=keep,
        row_id=_ROW_ID if has_row_id else None,
        name_steps_by_op=True,
        layout=check_layout(layout),
        # binary data and updates must hold the declared type (indices: any integers)
        binary_elements=tuple((n, dtype) for n in inputs if n != "indices"),
    )

    def compute(*arrays: pa.Array) -> pa.Array:
        configure_threads()
        found = _element_name(arrays[0])
        if found is not None and numpy_dtype(found) != expected:
            raise TypeError(
                f"{op}: data holds {found} values but the column function "
                f"was declared with dtype={dtype!r}; pass dtype={found!r}"
            )
        batch = pa.RecordBatch.from_arrays(list(arrays), names=names)
        output = run_steps(plan, batch, first_row=None)
        if output.failure is not None:
            raise RowError(output.failure)
        assert output.batch is not None
        return output.batch.column(0)

    arrow_udf = getattr(F, "arrow_udf", None)
    if arrow_udf is None:  # pragma: no cover - pyspark 4.0
        raise ImportError("scatterkit's column functions need pyspark >= 4.1 (arrow_udf)")
    return arrow_udf(compute, tensor_struct(dtype, with_error=keep, layout=layout))


def apply_op(
    op: str,
    data: ColumnOrName,
    *inputs: ColumnOrName,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
    layout: str = "arrays",
    **attributes: Any,
) -> Column:
    """The versioned operation `op` (e.g. ``"ScatterElementsUpdate-3"``) on tensor columns.

    `inputs` follow data in the operation's own order: ``indices, updates``, or
    ``updates`` alone for SliceScatter-15. `attributes` are the op's attributes
    (``axis``, ``reduction``, ``use_init_val``, ``exact``, ``start``, ``stop``, ``step``); they are
    checked here, before any task runs. `layout` is the result's: ``"arrays"`` (default) or
    ``"binary"`` (see the module documentation); inputs may be in either.
    """
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}; expected one of {sorted(OPS)}")
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    info = OPS[op]
    if len(inputs) != len(info.inputs) - 1:
        raise TypeError(
            f"{op} takes the columns {', '.join(info.inputs)}; got {1 + len(inputs)} column(s)"
        )
    unknown = sorted(set(attributes) - info.attributes)
    missing = sorted(info.required - set(attributes))
    if unknown or missing:
        raise ValueError(f"{op}: unknown attribute(s) {unknown}, missing {missing}")
    _check_attributes(op, attributes, dtype)
    keep, has_row_id = on_error == "keep", row_id is not None
    fn = _make_udf(op, attributes, info.inputs, dtype, keep, has_row_id, check_layout(layout))
    args = [_col(c) for c in (data, *inputs)]
    if row_id is not None:
        args.append(_col(row_id))
    return fn(*args)


def _check_attributes(op: str, attributes: Mapping[str, Any], dtype: str) -> None:
    """A zero-row dry run: bad attributes fail when the column is built, not in a task."""
    value = numpy_dtype(dtype)
    dtypes = {"data": value, "updates": value}
    if "indices" in OPS[op].inputs:
        dtypes["indices"] = np.dtype(np.int64)
    dry_run(op, attributes, dtypes)


def scatter_update(
    data: ColumnOrName,
    indices: ColumnOrName,
    updates: ColumnOrName,
    axis: int,
    *,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
    layout: str = "arrays",
) -> Column:
    """ScatterUpdate-3 on tensor columns (see `scatterkit.scatter_update`).

    `dtype` is data's element type, `on_error` "fail" or "keep", `row_id` a column
    naming rows in error messages (see the module documentation).
    """
    return apply_op(
        "ScatterUpdate-3",
        data,
        indices,
        updates,
        dtype=dtype,
        on_error=on_error,
        row_id=row_id,
        layout=layout,
        axis=axis,
    )


def scatter_elements_update(
    data: ColumnOrName,
    indices: ColumnOrName,
    updates: ColumnOrName,
    axis: int,
    *,
    reduction: str = "none",
    use_init_val: bool = True,
    exact: bool = False,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
    layout: str = "arrays",
) -> Column:
    """ScatterElementsUpdate-12 on tensor columns (see `scatterkit.scatter_elements_update`).

    ``exact=True``: float sums and means exact, rounded once, min/max free of order, so the
    bits do not depend on the order of a row's updates.
    """
    return apply_op(
        "ScatterElementsUpdate-12",
        data,
        indices,
        updates,
        dtype=dtype,
        on_error=on_error,
        row_id=row_id,
        layout=layout,
        axis=axis,
        reduction=reduction,
        use_init_val=use_init_val,
        exact=exact,
    )


def scatter_nd_update(
    data: ColumnOrName,
    indices: ColumnOrName,
    updates: ColumnOrName,
    *,
    reduction: str = "none",
    exact: bool = False,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
    layout: str = "arrays",
) -> Column:
    """ScatterNDUpdate-15 on tensor columns (see `scatterkit.scatter_nd_update`); ``exact``
    as in `scatter_elements_update`."""
    return apply_op(
        "ScatterNDUpdate-15",
        data,
        indices,
        updates,
        dtype=dtype,
        on_error=on_error,
        row_id=row_id,
        layout=layout,
        reduction=reduction,
        exact=exact,
    )


def slice_scatter(
    data: ColumnOrName,
    updates: ColumnOrName,
    start: Any,
    stop: Any,
    step: Any,
    axis: Any,
    *,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
    layout: str = "arrays",
) -> Column:
    """SliceScatter-15 on tensor columns (see `scatterkit.slice_scatter`)."""
    return apply_op(
        "SliceScatter-15",
        data,
        updates,
        dtype=dtype,
        on_error=on_error,
        row_id=row_id,
        layout=layout,
        start=start,
        stop=stop,
        step=step,
        axis=axis,
    )


def _convert(dtype: str, layout: str, keep: bool, named: bool) -> Any:
    """The Arrow UDF re-laying a tensor column out in `layout` (`named`: a second column
    gives the rows' ids)."""
    expected = numpy_dtype(dtype)

    def convert(array: pa.Array, row_ids: pa.Array | None) -> pa.Array:
        rows = read_tensor(array, "tensor", expected)
        valid = np.ones(rows.rows, bool)
        valid[list(rows.problems)] = False
        if rows.problems and not keep:
            row = min(rows.problems)
            name = (
                f"row {row} of a batch (pass row_id= to name rows)"
                if row_ids is None
                else f"{_ROW_ID}={row_ids[row].as_py()!r}"
            )
            raise RowError(f"{name}: {rows.problems[row]}")
        ragged = rows.ragged
        values = ragged.values
        if values.dtype != expected:
            if len(values) and not valid.any():
                values = np.empty(0, expected)
            values = values.astype(expected)  # arrays of another type: as a cast would
        errors = [rows.problems.get(r) for r in range(rows.rows)] if keep else None
        return tensor_array(values, ragged, valid, errors, layout)

    def compute(array: pa.Array) -> pa.Array:
        return convert(array, None)

    def compute_named(array: pa.Array, row_ids: pa.Array) -> pa.Array:
        return convert(array, row_ids)

    make: Any = F.arrow_udf  # its overloads do not know a function of a struct column
    kind = tensor_struct(dtype, with_error=keep, layout=layout)
    return make(compute_named if named else compute, kind)


def to_binary(
    column: ColumnOrName,
    *,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
) -> Column:
    """A tensor column (either layout, or a plain array) in the binary layout:
    ``struct<data: binary, shape: array<int>, dtype: string>``, the C-order little-endian
    bytes of each tensor. Spark moves and writes the bytes as one value, several times
    faster than an ``array<T>``; `read_tensors` reads them back into NumPy.

    `dtype` is the element type (``"float"``: float32); array values of another type are
    cast to it. A row that cannot be read (a null element, a null shape, bytes that do not
    match the shape) fails the task (``on_error="fail"``), named by `row_id`'s value
    (``row_id=7``) where given, or keeps its message in the result's ``error`` field
    (``"keep"``); a null tensor stays null.
    """
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    args = [_col(column)] + ([] if row_id is None else [_col(row_id)])
    return _convert(dtype, "binary", on_error == "keep", row_id is not None)(*args)


def to_arrays(
    column: ColumnOrName,
    *,
    dtype: str = "float",
    on_error: str = "fail",
    row_id: ColumnOrName | None = None,
) -> Column:
    """A tensor column (either layout) in the arrays layout, ``struct<values: array<T>,
    shape: array<int>>``, for Spark SQL's array functions. `dtype`: the element type the
    binary tensors hold (a row holding another type is a bad row); `on_error` as in
    `to_binary`."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    args = [_col(column)] + ([] if row_id is None else [_col(row_id)])
    return _convert(dtype, "arrays", on_error == "keep", row_id is not None)(*args)
