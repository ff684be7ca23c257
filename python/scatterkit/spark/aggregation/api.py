"""Event tables to tensors: `scatter_nd_agg` (an aggregate column) and `aggregate` (the
planned aggregation that combines before the shuffle).

Two ways to run the same aggregate, with the same bits:

- ``events.groupBy(...).agg(scatter_nd_agg(...))``: Spark's own grouping sends every
  event through its shuffle, then Python folds whole groups (`group`: a batch of
  collected groups a call, or for large tensors one group a call).
- ``aggregate(events, by, name=scatter_nd_agg(...), ...)``: each task first folds the
  events of keys frequent in it into one state per key, then the events and states are
  shuffled by key, sorted, and folded group by group; a group of any size takes one
  state's memory. DataFrame API only, so both run over Spark Connect.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Union

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..core.element_types import (
    VALUES,
    cast_as_spark,
    element_type,
    layout_of,
    numpy_dtype,
    tensor_struct,
)
from ..core.errors import SpecError
from ..runtime.stats import FOLD_US, fold_time_observed, with_fold_time
from ..specs.agg_spec import AggregateStep, AggSpec, check_agg
from .group import fold_group, fold_lists
from .sources import EventReader, combine_pieces, event_columns, scan_reader
from .tasks import FLUSH_CONF, combine_events, finish_groups
from .wire import COUNT_FIELDS, AggPlan, key_name, packed_schema, result_name

ColumnOrName = Union[Column, str]
_SPEC_ATTRIBUTE = "_scatterkit_agg"
_BARE_DTYPE = "double"  # the result type of a bare .agg() without dtype (see scatter_nd_agg)


def result_type(element: str, layout: str = "arrays") -> T.StructType:
    """The Spark type of an aggregate's column: the tensor struct of `layout` with
    ``error``, plus the group's ``events`` (folded) and ``dropped`` (skipped under on_error
    drop) counts."""
    struct = tensor_struct(element, with_error=True, layout=layout)
    for name in COUNT_FIELDS:
        struct.add(name, T.LongType(), True)
    return struct


def scatter_nd_agg(
    indices: str | Sequence[str],
    updates: str,
    shape: Sequence[int],
    *,
    reduction: str = "sum",
    fill: Any = 0,
    dtype: str | None = None,
    order_by: str | None = None,
    on_error: str = "fail",
    layout: str = "arrays",
) -> Column:
    """The tensor of `shape` built from a group's events as ScatterNDUpdate-15 builds it.

    `indices` names one integer column per leading coordinate (k of them; negative
    coordinates wrap once); `updates` a value column (k = rank) or, where each event
    updates a slice (k < rank), an array column of ``prod(shape[k:])`` values or a tensor
    column of shape ``shape[k:]`` in either layout (docs/spark.md). Reductions: sum,
    prod (integers and bools only), min, max, mean (ScatterElementsUpdate-12's: float
    means exact, integer means rounded toward -inf) and none (the event with the greatest
    `order_by` wins; ties go to the greatest value in IEEE total order, element by
    element). Targeted elements start at the reduction's identity; untargeted ones hold
    `fill`. Float sums and means are exact, so the bits do not depend on partitioning or
    row order.

    A null value (or a null inside a slice, or a null `order_by`) is skipped, as Spark's
    aggregates skip nulls. A null or out-of-range coordinate, a slice of the wrong length
    (or shape, or bytes), follows `on_error`: ``fail`` stops the job naming the group and
    the reason, ``keep`` gives the group a null tensor with the message in ``error``,
    ``drop`` skips the event and counts it in ``dropped``.

    The result is ``struct<values, shape, error, events, dropped>``, or with
    ``layout="binary"`` ``struct<data, shape, dtype, error, events, dropped>`` (the tensor's
    bytes: see docs/spark.md, Tensor layouts). `dtype` defaults to the
    updates' type in `aggregate` and the job; in a bare ``groupBy().agg()`` Spark must know
    the result type before it reads any data, so there it defaults to double (bigint for
    prod).

    >>> events.groupBy("user_id").agg(skf.scatter_nd_agg(
    ...     ["hour", "category"], "amount", [24, 16]).alias("spend"))  # doctest: +SKIP
    """
    spec = check_agg(
        indices,
        updates,
        shape,
        reduction=reduction,
        fill=fill,
        dtype=dtype,
        order_by=order_by,
        on_error=on_error,
        layout=layout,
    )
    bare = "bigint" if reduction == "prod" else _BARE_DTYPE  # prod is for integers only
    column = _udaf_column(spec if spec.dtype is not None else spec.with_dtype(bare))
    setattr(column, _SPEC_ATTRIBUTE, spec)
    return column


# -- groupBy().agg() -------------------------------------------------------------------------

# The bytes of a group's tensor up to which .agg() folds groups in batches: Spark sends a
# scalar Arrow UDF up to spark.sql.execution.arrow.maxRecordsPerBatch (10,000) groups at a
# time, whose tensors the UDF returns at once. Above it, one call per group.
BATCHED_TENSOR_BYTES = 16 << 10


def _udaf_column(spec: AggSpec) -> Column:
    """The aggregate's column for .agg(). Small tensors: Spark collects each group's events
    (``collect_list`` of a struct) and one Python call folds a batch of groups, not one
    call per group and aggregate (a grouped-aggregate UDF's fixed cost is several times
    the fold of a small group). Large tensors: a grouped-aggregate Arrow UDF."""
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    assert spec.dtype is not None
    inputs = [F.col(c) for c in spec.indices]
    if spec.k < len(spec.shape):
        # Slices pass as they are: a bare .agg() does not know the column's type (an array,
        # or a tensor in either layout); `slices.slice_lists` reads and converts each.
        inputs.append(F.col(spec.updates))
    else:
        inputs.append(F.col(spec.updates).cast(spec.dtype))
    if spec.order_by:
        inputs.append(F.col(spec.order_by))
    make: Any = arrow_udf  # its overloads know the UDF's kind by type hints only
    kind: int
    if spec.size * spec.element_dtype.itemsize <= BATCHED_TENSOR_BYTES:
        fold, kind = functools.partial(fold_lists, spec), ArrowUDFType.SCALAR
        inputs = [F.collect_list(F.struct(*[c.alias(f"_{i}") for i, c in enumerate(inputs)]))]
    else:
        # One grouped-aggregate UDF gets a whole group; the streaming kind (PySpark 4.3's
        # GROUPED_AGG_ITER) allows one UDF per .agg(), which would forbid sum and max together.
        fold, kind = functools.partial(fold_group, spec), ArrowUDFType.GROUPED_AGG
    with warnings.catch_warnings():  # PySpark prefers type hints; a partial has none
        warnings.simplefilter("ignore", UserWarning)
        udf = make(fold, result_type(spec.dtype, spec.layout), kind)
    return udf(*inputs)


# -- the planned aggregation -------------------------------------------------------------------


def aggregate(df: DataFrame, by: str | Sequence[str], **aggregates: Column) -> DataFrame:
    """Groups `df` by `by` and computes each ``name=scatter_nd_agg(...)`` per group.

    The same tensors as ``df.groupBy(by).agg(...)``, computed faster on large inputs:
    before the shuffle each task packs a key's events into one row per flush of events
    (``spark.scatterkit.aggregate.flushEvents``, 2M by default) and folds the keys frequent
    in a flush into one state per key; every group is then folded from its sorted rows.
    Where `df` is a plain Parquet scan (``spark.read.parquet(path)``, perhaps with some
    columns selected), the map tasks read its files with pyarrow instead of taking Spark's
    rows (`sources.scan_reader`; the same bits). The result has the `by` columns and one
    ``struct<values, shape, error, events, dropped>`` column per name.

    >>> skf.aggregate(events, "user_id", spend=skf.scatter_nd_agg(
    ...     ["hour", "category"], "amount", [24, 16]))  # doctest: +SKIP
    """
    by = [by] if isinstance(by, str) else list(by)
    if not by or not all(isinstance(c, str) and c for c in by):
        raise SpecError(f"aggregate: 'by' must name one or more columns, got {by!r}")
    if not aggregates:
        raise SpecError("aggregate: give at least one name=scatter_nd_agg(...)")
    specs = []
    for name, column in aggregates.items():
        spec = getattr(column, _SPEC_ATTRIBUTE, None)
        if not isinstance(spec, AggSpec):
            raise TypeError(
                f"aggregate: {name}= must be a scatter_nd_agg(...) column itself "
                "(not aliased or wrapped): the name gives the alias"
            )
        specs.append(settle_spec(df.schema, spec, name))
    return plan_aggregate(df, by, dict(zip(aggregates, specs)), read_files=True)


def settle_spec(schema: T.StructType, spec: AggSpec, name: str) -> AggSpec:
    """The aggregate checked against the events' schema, its dtype settled."""
    fields = {f.name: f.dataType for f in schema.fields}
    for column in spec.columns():
        if column not in fields:
            raise SpecError(f"{name}: no column {column!r} in the events ({sorted(fields)})")
    for column in spec.indices:
        if not isinstance(fields[column], T.IntegralType):
            raise SpecError(
                f"{name}: coordinate {column!r} must be an integer column, "
                f"got {fields[column].simpleString()}"
            )
    updates = fields[spec.updates]
    layout = tensor_layout(updates)
    is_array = isinstance(updates, T.ArrayType) or layout is not None
    if is_array != (spec.k < len(spec.shape)):
        want = (
            "an array or tensor column (one slice per event)"
            if spec.k < len(spec.shape)
            else "a value column"
        )
        raise SpecError(
            f"{name}: {spec.k} coordinate(s) of a rank-{len(spec.shape)} tensor take {want}; "
            f"{spec.updates!r} is {updates.simpleString()}"
        )
    if layout == "binary":  # its element type is in each row: double unless dtype says
        updates_type = _BARE_DTYPE
    else:
        element = _element_of(updates)
        try:
            updates_type = element_type(element.simpleString())
        except ValueError:
            raise SpecError(
                f"{name}: updates {spec.updates!r} hold {element.simpleString()}, "
                "not numbers or booleans"
            ) from None
        if layout == "arrays" and spec.dtype is not None:
            _check_slice_cast(name, spec, updates_type)
    if spec.order_by is not None:
        order = fields[spec.order_by]
        if not isinstance(
            order, (T.NumericType, T.DateType, T.TimestampType, T.TimestampNTZType, T.BooleanType)
        ):
            raise SpecError(
                f"{name}: order_by {spec.order_by!r} must be a number, date or timestamp, "
                f"got {order.simpleString()}"
            )
    try:
        return spec.with_dtype(updates_type)
    except SpecError as exc:
        raise SpecError(f"{name}: {exc}") from None


def tensor_layout(kind: T.DataType) -> str | None:
    """The layout of a tensor struct type ("arrays", "binary"), else None."""
    if not isinstance(kind, T.StructType):
        return None
    return layout_of(kind.fieldNames())


def _element_of(kind: T.DataType) -> T.DataType:
    """The element type of a value, array or arrays-layout tensor column."""
    if isinstance(kind, T.StructType):
        kind = kind[VALUES].dataType
    return kind.elementType if isinstance(kind, T.ArrayType) else kind


def _check_slice_cast(name: str, spec: AggSpec, updates_type: str) -> None:
    """An arrays-layout tensor's values are converted by the combiner, not Spark's cast:
    only where that gives the same bits."""
    source, target = numpy_dtype(updates_type), spec.element_dtype
    if not cast_as_spark(source, target):
        raise SpecError(
            f"{name}: updates {spec.updates!r} hold {updates_type} values, which Spark's "
            f"cast to {spec.dtype} may change: cast the tensor's values first"
        )


def aggregate_step(
    df: DataFrame, step: AggregateStep, fold_times: list[Observation] | None = None
) -> DataFrame:
    """A job's aggregation step over the events `df` (see `spec.JobSpec.aggregate`)."""
    return plan_aggregate(df, step.by, step_specs(df.schema, step), fold_times)


def aggregated_schema(df: DataFrame, step: AggregateStep) -> T.StructType:
    """The schema of `aggregate_step`'s output, known without planning it: the `by`
    columns as they are, then each aggregate's `result_type`."""
    specs = step_specs(df.schema, step)
    agg_plan(df, step.by, specs)  # the same checks, the same errors
    fields = {f.name: f for f in df.schema.fields}
    by = [T.StructField(c, fields[c].dataType, fields[c].nullable) for c in step.by]
    results = [
        T.StructField(name, result_type(s.dtype or "", s.layout), True) for name, s in specs.items()
    ]
    return T.StructType(by + results)


def aggregated_elements(schema: T.StructType, step: AggregateStep) -> dict[str, str]:
    """The element type of each aggregate a job's aggregation writes (`step_specs`)."""
    return {name: s.dtype or "" for name, s in step_specs(schema, step).items()}


def step_specs(schema: T.StructType, step: AggregateStep) -> dict[str, AggSpec]:
    """A job's aggregates, settled against the events' schema."""
    return {
        name: settle_spec(schema, spec, f"aggregate.aggregates.{name}")
        for name, spec in step.aggregates.items()
    }


def plan_aggregate(
    df: DataFrame,
    by: Sequence[str],
    specs: dict[str, AggSpec],
    fold_times: list[Observation] | None = None,
    *,
    read_files: bool = False,
) -> DataFrame:
    """The DataFrame plan of `aggregate` (specs settled by `settle_spec`). With
    `fold_times`, the observations of the time in the folds (map side, then reduce side)
    are appended to it: they hold their sums once an action has run the plan. With
    `read_files`, the map tasks read a plain Parquet scan's files themselves
    (`sources.scan_reader`)."""
    plan = agg_plan(df, by, specs)
    events = event_columns(df, plan)
    schema = packed_schema(events.schema, plan)
    reader = scan_reader(df, plan) if read_files else None
    if reader is None:
        combine = functools.partial(combine_events, plan)
        packed = map_batches(events, combine, schema, fold_times)
    else:
        packed = combine_files(df.sparkSession, reader, plan, schema, fold_times)
    finish = functools.partial(finish_groups, plan)
    schema = finished_schema(events.schema, plan)
    result = map_batches(group_packed(packed, plan), finish, schema, fold_times)
    return result.select(*named_results(by, specs))


def map_batches(
    frame: DataFrame,
    work: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    schema: T.StructType,
    fold_times: list[Observation] | None,
) -> DataFrame:
    """``frame.mapInArrow(work, schema)``; with `fold_times`, also observes the time
    `work` spends (`stats.with_fold_time`) and appends the observation."""
    if fold_times is None:
        return frame.mapInArrow(work, schema)
    timed = T.StructType([*schema.fields, T.StructField(FOLD_US, T.LongType(), True)])
    mapped = frame.mapInArrow(functools.partial(with_fold_time, work), timed)
    observed, observation = fold_time_observed(mapped, f"scatterkit_fold_{len(fold_times)}")
    fold_times.append(observation)
    return observed


def combine_files(
    spark: Any,
    reader: EventReader,
    plan: AggPlan,
    schema: T.StructType,
    fold_times: list[Observation] | None,
) -> DataFrame:
    """The map side over the files of `reader`: one task per piece (`combine_pieces`)."""
    count = len(reader.pieces)
    numbers = spark.range(count, numPartitions=count)
    return map_batches(numbers, functools.partial(combine_pieces, reader, plan), schema, fold_times)


def agg_plan(df: DataFrame, by: Sequence[str], specs: dict[str, AggSpec]) -> AggPlan:
    """What the tasks need, with the session's flush size (checked here, before any task)."""
    missing = [c for c in by if c not in df.columns]
    if missing:
        raise SpecError(f"aggregate: no column {missing[0]!r} to group by in {df.columns}")
    flush = df.sparkSession.conf.get(FLUSH_CONF, None)
    if flush is not None and (not flush.isdigit() or int(flush) < 1):
        raise SpecError(f"aggregate: {FLUSH_CONF} must be a number of events, got {flush!r}")
    return AggPlan(tuple(by), tuple(specs.values()), int(flush) if flush else None)


def group_packed(packed: DataFrame, plan: AggPlan) -> DataFrame:
    """The combiner's rows shuffled by key and sorted, as `finish_groups` reads them."""
    return packed.repartition(*plan.keys).sortWithinPartitions(*plan.keys)


def finished_schema(events: T.StructType, plan: AggPlan) -> T.StructType:
    """The finisher's rows: the keys, then ``__agg{i}`` per aggregate."""
    fields = {f.name: f for f in events.fields}
    return T.StructType(
        [fields[k] for k in plan.keys]
        + [
            T.StructField(result_name(i), result_type(s.dtype or "", s.layout), True)
            for i, s in enumerate(plan.specs)
        ]
    )


def named_results(by: Sequence[str], specs: dict[str, AggSpec]) -> list[Column]:
    """The finisher's columns under the user's names."""
    renamed = [F.col(key_name(j)).alias(c) for j, c in enumerate(by)]
    return renamed + [F.col(result_name(i)).alias(name) for i, name in enumerate(specs)]


__all__ = ["aggregate", "plan_aggregate", "result_type", "scatter_nd_agg", "settle_spec"]
