"""The main job: Parquet in, every step of a spec on each record batch, Parquet out.

`run_job` reads top-down: plan the steps against the input's schema (`plan`), choose the
engine (`engine_arrow` where pyarrow reaches the paths, else `engine_spark`), run it under
a progress display, and sum up. Everything goes through the DataFrame API, so a classic
session and a Spark Connect session run the same code.
"""

from __future__ import annotations

import math
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from ..aggregation.api import aggregate_step, aggregated_elements, aggregated_schema
from ..core.cluster import on_cluster
from ..core.connect import is_connect
from ..core.element_types import DTYPE, SHAPE, VALUES, layout_of, numpy_dtype
from ..core.errors import EngineUnavailable, JobFailed, message_cause
from ..core.options import ENGINES, ON_ERROR
from ..runtime.stats import TaskStats, observed_fold_us
from ..runtime.steps import BatchPlan
from ..runtime.storage import locate, tree_bytes
from ..runtime.written import (
    AGGREGATE_COUNTS,
    ERROR_ROWS,
    ROWS,
    aggregate_count,
    step_errors,
)
from ..specs.job_spec import JobSpec
from .aggregate_job import run_aggregate_job
from .engine_arrow import ArrowPaths, resolve_paths, run_arrow_job
from .engine_spark import run_spark_job, steps_frame
from .failures import job_failed
from .plan import binary_elements, is_binary_tensor, plan_job
from .progress import Progress
from .summary import JobSummary

__all__ = ["ENGINES", "ON_ERROR", "JobFailed", "run_job", "transform"]


def _check_on_error(on_error: str) -> None:
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")


def _binary_inputs(df: DataFrame, spec: JobSpec, input_path: str | None = None) -> dict[str, str]:
    """The element types of the binary tensor columns the steps read, off their first rows
    (of the files at `input_path` where pyarrow reaches them)."""
    read = {c for s in spec.steps for i in s.inputs.values() for c in i.columns()}
    fields = {f.name: f.dataType for f in df.schema.fields}
    binary = [c for c in sorted(read) if c in fields and is_binary_tensor(fields[c])]
    source = None
    if binary and input_path is not None:
        try:
            source = locate(input_path)
        except EngineUnavailable:
            pass
    return binary_elements(df, binary, source)


def _plan(
    schema: T.StructType,
    spec: JobSpec,
    on_error: str,
    locate_rows: bool,
    binary: dict[str, str],
) -> tuple[BatchPlan, T.StructType, list[str]]:
    """Both engines' plan of the steps over input of `schema`: the executors' plan, the
    output schema and the input columns to read (only those the steps read or the output
    keeps). Rows are located by file only where a failure names them
    (``on_error="fail"``, checked by the caller). `binary`: the element types of the binary
    tensor columns."""
    keep = on_error == "keep"
    plan, out = plan_job(
        schema, spec, keep_errors=keep, locate_rows=locate_rows and not keep, binary=binary
    )
    return plan, out, [c for c in schema.names if c in plan.input_columns]


def transform(
    df: DataFrame, spec: JobSpec, *, on_error: str = "fail", locate_rows: bool = False
) -> DataFrame:
    """`spec` applied to every row of `df` (lazily): one ``mapInArrow`` over all steps.

    With ``on_error="keep"`` a failed row's step outputs hold its message in their
    ``error`` field (``values`` and ``shape`` null); with ``"fail"`` the first bad row fails
    the task with a `RowError` naming it, by ``spec.row_id``, or with `locate_rows` (a
    Parquet or other file source) by its file and row index.
    """
    _check_on_error(on_error)
    plan, schema, columns = _plan(df.schema, spec, on_error, locate_rows, _binary_inputs(df, spec))
    return steps_frame(df, plan, schema, columns)


def _fall_back_unless_asked(engine: str, exc: EngineUnavailable) -> None:
    """``engine="auto"`` falls back to the Spark engine; ``"arrow"`` was asked for: an error."""
    if engine == "arrow":
        raise ValueError(f"the arrow engine cannot run this job: {exc}") from None


def choose_engine(engine: str, input_path: str, output_path: str) -> ArrowPaths | None:
    """The Arrow engine's paths, or None to run through Spark SQL."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "spark":
        return None
    try:
        return resolve_paths(input_path, output_path)
    except EngineUnavailable as exc:
        _fall_back_unless_asked(engine, exc)
        return None


def _from_here(path: str) -> str:
    """A relative local path made absolute here: a Spark Connect server would resolve it
    against its own working directory, which its clients neither know nor choose."""
    if "://" in path or path.startswith("file:") or os.path.isabs(path):
        return path
    return os.path.abspath(path)


def _path_bytes(spark: SparkSession, path: str) -> int | None:
    """Bytes under a path (None where pyarrow does not reach it, or it cannot be read)."""
    try:
        return on_cluster(spark, tree_bytes, locate(path))
    except Exception:  # measuring is a courtesy; never fail the job for it
        return None


def _run_arrow(
    spark: SparkSession,
    source: T.StructType,
    plan: BatchPlan,
    schema: T.StructType,
    columns: list[str],
    paths: ArrowPaths,
    overwrite: bool,
) -> TaskStats:
    tensors = T.StructType([f for f in source.fields if f.name in plan.tensor_columns])
    others = T.StructType(
        [f for f in source.fields if f.name in columns and f.name not in plan.tensor_columns]
    )
    return run_arrow_job(
        spark,
        plan,
        to_arrow_schema(schema),
        paths,
        columns,
        to_arrow_schema(tensors),
        to_arrow_schema(others),
        overwrite=overwrite,
    )


def _run(
    spark: SparkSession,
    events: DataFrame,
    spec: JobSpec,
    input_path: str,
    output_path: str,
    on_error: str,
    overwrite: bool,
    engine: str,
) -> tuple[TaskStats, str, T.StructType]:
    """Runs the job on the chosen engine; returns its stats, the engine that ran it and the
    output's schema."""
    _check_on_error(on_error)
    if spec.aggregate is None:
        steps_input, binary = events.schema, _binary_inputs(events, spec, input_path)
    else:  # the steps run on the aggregation's output: its schema, without planning it
        steps_input = aggregated_schema(events, spec.aggregate)
        binary = aggregated_elements(events.schema, spec.aggregate)
    plan, schema, columns = _plan(steps_input, spec, on_error, spec.aggregate is None, binary)
    paths = choose_engine(engine, input_path, output_path)
    if paths is not None:
        try:
            if spec.aggregate is None:
                found = _run_arrow(spark, steps_input, plan, schema, columns, paths, overwrite)
            else:
                found = run_aggregate_job(
                    spark,
                    events,
                    spec.aggregate,
                    plan,
                    columns,
                    to_arrow_schema(schema),
                    paths,
                    overwrite=overwrite,
                )
            return found, "arrow", schema
        except EngineUnavailable as exc:  # found on the cluster: partition directories, ...
            _fall_back_unless_asked(engine, exc)
    fold_times: list[Observation] = []
    source = events
    if spec.aggregate is not None:  # its folds timed
        source = aggregate_step(events, spec.aggregate, fold_times)
    found = run_spark_job(
        spark, source, plan, schema, columns, input_path, output_path, overwrite=overwrite
    )
    if found.failure is None:
        found.counts["fold_us"] += sum(observed_fold_us(o) for o in fold_times)
    return found, "spark", schema


def run_job(
    spark: SparkSession,
    spec: JobSpec,
    input_path: str,
    output_path: str,
    *,
    on_error: str = "fail",
    mode: str = "errorifexists",
    progress: bool = True,
    engine: str = "auto",
) -> JobSummary:
    """Reads Parquet at `input_path`, applies `spec`, writes Parquet to `output_path`.

    `engine` says who reads and writes the Parquet: ``"arrow"``, the executors
    themselves with pyarrow (several times faster: no row conversion in the JVM);
    ``"spark"``, Spark SQL's reader and writer (any Hadoop file system, partition
    directories); ``"auto"`` (default), arrow where it can serve the paths. `spark` may
    be a classic or a Spark Connect session.

    Raises `JobFailed` naming the cause (`JobFailed.cause`; nothing is committed then):
    a row that fails under ``on_error="fail"``, with the reason; an input file that
    cannot be read (truncated, corrupt), or files holding a column in types the job
    cannot read alike, named; an executor or a Python worker out of memory, or no space
    left, with what to do; a Spark Connect server that went away (`failures.explain`).
    Returns the summary, whose row counts come from the input and the written output.
    """
    if mode not in ("errorifexists", "overwrite"):
        raise ValueError(f"mode must be 'errorifexists' or 'overwrite', got {mode!r}")
    if is_connect(spark):
        input_path, output_path = _from_here(input_path), _from_here(output_path)
    events = spark.read.parquet(input_path)
    started = time.perf_counter()
    overwrite = mode == "overwrite"
    try:
        with Progress(spark, label="job") if progress else nullcontext():
            found, used, written_schema = _run(
                spark, events, spec, input_path, output_path, on_error, overwrite, engine
            )
    except Exception as exc:
        failed = job_failed(exc, spark, input_path)
        if failed is None:
            raise
        raise failed from None
    if found.failure is not None:
        raise JobFailed(found.failure, message_cause(found.failure))
    seconds = time.perf_counter() - started
    if used == "arrow":  # the tasks counted what they wrote
        counted = _counts_written(found.written, spec, on_error)
    else:
        written = spark.read.schema(written_schema).parquet(output_path)  # no job to infer it
        counted = _output_counts(written, spec, on_error)
    tensor_bytes_out = found.counts["bytes_out"]
    for folded in counted.aggregated.values():
        tensor_bytes_out += folded.pop("bytes")
    return JobSummary(
        rows_in=events.count(),
        rows_out=counted.rows,
        seconds=seconds,
        errors=counted.errors,
        error_rows=counted.error_rows,
        tensor_bytes_in=found.counts["bytes_in"],
        tensor_bytes_out=tensor_bytes_out,
        input_bytes=_path_bytes(spark, input_path),
        output_bytes=_path_bytes(spark, output_path),
        batches=found.counts["batches"],
        executor_python_seconds=found.counts["python_us"] / 1e6,
        fold_seconds=found.counts["fold_us"] / 1e6,
        executor_modules=sorted(found.modules),
        executor_threads=sorted(found.threads),
        engine=used,
        aggregated=counted.aggregated,
    )


def _tensor_count_and_element(struct: T.DataType, column: str) -> tuple[Column, Column]:
    """An aggregate's tensors written (not null) and their element type's name, read from
    the small fields (shape, dtype) and the schema: the values themselves are not read."""
    assert isinstance(struct, T.StructType)
    count = F.count(F.col(f"{column}.{SHAPE}"))
    if layout_of(struct.names) == "binary":
        return count, F.max(F.col(f"{column}.{DTYPE}"))
    values = struct[VALUES].dataType
    assert isinstance(values, T.ArrayType)
    return count, F.lit(numpy_dtype(values.elementType.simpleString()).name)


@dataclass
class _OutputCounts:
    rows: int
    errors: dict[str, int]  # per step: rows kept in error (on_error keep)
    error_rows: int  # rows with any step in error
    aggregated: dict[str, dict[str, int]]  # per aggregate (`_aggregate_sums`)


def _counts_written(written: dict[str, int], spec: JobSpec, on_error: str) -> _OutputCounts:
    """`_output_counts` from the counts the Arrow engine's tasks took of what they wrote
    (`runtime.written`)."""
    errors: dict[str, int] = {}
    if on_error == "keep" and spec.steps:
        errors = {s.output: written.get(step_errors(s.output), 0) for s in spec.steps}
    aggregates = spec.aggregate.aggregates if spec.aggregate is not None else {}
    aggregated = {
        name: {c: written.get(aggregate_count(c, name), 0) for c in AGGREGATE_COUNTS}
        for name in aggregates
    }
    return _OutputCounts(written.get(ROWS, 0), errors, written.get(ERROR_ROWS, 0), aggregated)


def _output_counts(written: DataFrame, spec: JobSpec, on_error: str) -> _OutputCounts:
    """What the written output holds, counted in one pass over its small fields: rows, rows
    in error per step, and per aggregate the events folded and dropped, the groups kept in
    error and the bytes of the tensors written."""
    sums: list[Column] = [F.count(F.lit(1))]
    kept = on_error == "keep" and bool(spec.steps)
    if kept:
        columns = [F.col(f"`{s.output}`.error") for s in spec.steps]
        any_error = F.coalesce(*columns) if len(columns) > 1 else columns[0]
        sums += [*[F.count(c) for c in columns], F.count(any_error)]
    aggregates = spec.aggregate.aggregates if spec.aggregate is not None else {}
    for name in aggregates:
        sums += [
            F.sum(F.col(f"`{name}`.events")),
            F.sum(F.col(f"`{name}`.dropped")),
            F.count(F.col(f"`{name}`.error")),
            *_tensor_count_and_element(written.schema[name].dataType, f"`{name}`"),
        ]
    row = written.select(*sums).first()
    assert row is not None  # an aggregate has one row
    values = list(row)
    rows = int(values.pop(0))
    errors, error_rows = {}, 0
    if kept:
        errors = {s.output: int(values.pop(0)) for s in spec.steps}
        error_rows = int(values.pop(0))
    aggregated = {}
    for name, agg in aggregates.items():
        events, dropped, error_groups, tensors, element = values[:5]
        del values[:5]
        itemsize = np.dtype(element).itemsize if element else 0
        aggregated[name] = {
            "events": int(events or 0),
            "dropped": int(dropped or 0),
            "error_groups": int(error_groups or 0),
            "bytes": int(tensors) * math.prod(agg.shape) * itemsize,
        }
    return _OutputCounts(rows, errors, error_rows, aggregated)
