"""The main job: Parquet in, every step of a spec on each record batch, Parquet out."""

from __future__ import annotations

import functools
import re
import time
import uuid
from contextlib import nullcontext
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ._pipeline import FILE_COLUMN, ROW_COLUMN, BatchPlan, process_aliased_batches
from ._plan import plan_job
from ._stats import new_stats
from .direct import (
    ArrowPaths,
    EngineUnavailable,
    check_output_apart,
    resolve_paths,
    run_arrow_job,
)
from .progress import Progress
from .spec import JobSpec
from .summary import JobSummary

ON_ERROR = ("fail", "keep")
ENGINES = ("auto", "arrow", "spark")


class JobFailed(RuntimeError):
    """The job stopped on a bad row (``on_error="fail"``) or on an input file holding a
    column in a type the job cannot read exactly; the message names the row or file."""


def _plan(
    df: DataFrame, spec: JobSpec, on_error: str, locate_rows: bool
) -> tuple[BatchPlan, T.StructType, list[str]]:
    """Both engines' plan: the executors' plan, the output schema and the input
    columns to read (only those the steps read or the output keeps). Rows are
    located by file only where a failure names them (``on_error="fail"``)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    keep = on_error == "keep"
    plan, schema = plan_job(df.schema, spec, keep_errors=keep, locate_rows=locate_rows and not keep)
    return plan, schema, [c for c in df.columns if c in plan.input_columns]


def transform(
    df: DataFrame,
    spec: JobSpec,
    *,
    on_error: str = "fail",
    locate_rows: bool = False,
    stats: Any = None,
) -> DataFrame:
    """`spec` applied to every row of `df` (lazily): one ``mapInArrow`` over all steps.

    With ``on_error="keep"`` each step adds ``<output>_error`` (null, or the row's
    message) and failed rows get a null result; with ``"fail"`` the first bad row
    fails the job, named by ``spec.row_id``, or with `locate_rows` (a Parquet or other
    file source) by its file and row index. `stats` is an optional accumulator
    (see `scatterkit.spark._stats`) the executors report to.
    """
    plan, schema, needed = _plan(df, spec, on_error, locate_rows)
    extra = []
    if plan.locate_rows:
        extra = [
            F.col("_metadata.file_name").alias(FILE_COLUMN),
            F.col("_metadata.row_index").alias(ROW_COLUMN),
        ]
    names = needed + ([FILE_COLUMN, ROW_COLUMN] if extra else [])
    df = df.select(*[F.col(f"`{c}`").alias(f"_sk_{i}") for i, c in enumerate(needed)], *extra)
    return df.mapInArrow(functools.partial(process_aliased_batches, plan, stats, names), schema)


def _path_bytes(spark: SparkSession, path: str) -> int | None:
    """Bytes under a path on any Hadoop file system (None if it cannot be measured)."""
    try:
        fs, hadoop_path = _hadoop_path(spark, path)
        return int(fs.getContentSummary(hadoop_path).getLength())
    except Exception:  # measuring is a courtesy; never fail the job for it
        return None


def job_error_message(exc: BaseException) -> str | None:
    """The message of a `RowError` or `InputTypeError` inside a Spark failure, if that is
    why the job failed."""
    found = re.search(r"(?:RowError|InputTypeError): (.+)", str(exc))
    return found.group(1).strip() if found else None


def choose_engine(engine: str, input_path: str, output_path: str) -> ArrowPaths | None:
    """The Arrow engine's paths, or None to run through Spark SQL (see `direct`)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "spark":
        return None
    try:
        return resolve_paths(input_path, output_path)
    except EngineUnavailable as exc:
        if engine == "arrow":
            raise ValueError(f"the arrow engine cannot run this job: {exc}") from None
        return None


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
    directories); ``"auto"`` (default), arrow where it can serve the paths.

    Raises `JobFailed` naming the row and the reason when a row fails under
    ``on_error="fail"``, or naming the file when the arrow engine finds a file holding
    a column in a wider type than the job's (nothing is committed then; Spark's reader
    refuses such a file with its own error). Returns the summary, whose
    row counts come from the input and the written output.
    """
    if mode not in ("errorifexists", "overwrite"):
        raise ValueError(f"mode must be 'errorifexists' or 'overwrite', got {mode!r}")
    source = spark.read.parquet(input_path)
    arrow = choose_engine(engine, input_path, output_path)
    stats = new_stats(spark)
    started = time.perf_counter()
    try:
        with Progress(spark.sparkContext, label="job") if progress else nullcontext():
            if arrow is None:
                _run_spark(spark, source, spec, input_path, output_path, on_error, mode, stats)
            else:
                _run_arrow(spark, source, spec, arrow, on_error, mode, stats)
    except Exception as exc:
        message = job_error_message(exc)
        if message is None:
            raise
        raise JobFailed(message) from None
    seconds = time.perf_counter() - started
    written = spark.read.parquet(output_path)
    errors: dict[str, int] = {}
    error_rows = 0
    if on_error == "keep":
        columns = [F.col(f"`{s.error_column}`") for s in spec.steps]
        any_error = F.coalesce(*columns) if len(columns) > 1 else columns[0]
        counts = written.select(*[F.count(c) for c in columns], F.count(any_error)).first()
        assert counts is not None  # an aggregate has one row
        errors = {s.output: int(n) for s, n in zip(spec.steps, counts)}
        error_rows = int(counts[-1])
    got: dict[str, Any] = stats.value
    return JobSummary(
        rows_in=source.count(),
        rows_out=written.count(),
        seconds=seconds,
        errors=errors,
        error_rows=error_rows,
        tensor_bytes_in=got.get("bytes_in", 0),
        tensor_bytes_out=got.get("bytes_out", 0),
        input_bytes=_path_bytes(spark, input_path),
        output_bytes=_path_bytes(spark, output_path),
        batches=got.get("batches", 0),
        executor_python_seconds=got.get("python_ms", 0) / 1000,
        executor_modules=sorted(got.get("modules", set())),
        executor_threads=sorted(got.get("threads", set())),
        engine="spark" if arrow is None else "arrow",
    )


def _jvm(spark: SparkSession) -> Any:
    """The driver's py4j view of the JVM (None only on a stopped or remote session)."""
    jvm = spark.sparkContext._jvm
    if jvm is None:
        raise RuntimeError("the Spark session has no JVM (stopped, or a Spark Connect session)")
    return jvm


def _hadoop_path(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """`path`'s Hadoop file system and its fully qualified Path (scheme, authority)."""
    hadoop_path = _jvm(spark).org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return fs, fs.makeQualified(hadoop_path)


def _run_spark(
    spark: SparkSession,
    source: DataFrame,
    spec: JobSpec,
    input_path: str,
    output_path: str,
    on_error: str,
    mode: str,
    stats: Any,
) -> None:
    """The job through Spark SQL's writer, committed as the Arrow engine commits.

    Spark's own ``overwrite`` deletes the old output before the job runs, so a failed
    job would lose it. Here the job writes a hidden sibling directory, and only a job
    that succeeded replaces the output with it (a rename; a copy on object stores).
    """
    fs, output = _hadoop_path(spark, output_path)
    _, source_path = _hadoop_path(spark, input_path)
    check_output_apart(source_path.toString(), output.toString(), input_path, output_path)
    existed = fs.exists(output)
    if existed and mode != "overwrite":
        raise FileExistsError(f"output {output_path!r} already exists")
    staging = _jvm(spark).org.apache.hadoop.fs.Path(
        output.getParent(), f".{output.getName()}.scatterkit-{uuid.uuid4().hex[:12]}"
    )
    try:
        transform(source, spec, on_error=on_error, locate_rows=True, stats=stats).write.parquet(
            staging.toString()
        )
        if existed:
            fs.delete(output, True)
        if not fs.rename(staging, output):
            raise OSError(f"could not move the job's output from {staging.toString()!r}")
    finally:
        if fs.exists(staging):
            fs.delete(staging, True)


def _run_arrow(
    spark: SparkSession,
    source: DataFrame,
    spec: JobSpec,
    paths: ArrowPaths,
    on_error: str,
    mode: str,
    stats: Any,
) -> None:
    """The job on the Arrow engine, with the same plan (and checks) as `transform`'s."""
    from pyspark.sql.pandas.types import to_arrow_schema

    plan, schema, columns = _plan(source, spec, on_error, locate_rows=True)
    tensor_fields = [f for f in source.schema.fields if f.name in plan.tensor_columns]
    run_arrow_job(
        spark.sparkContext,
        plan,
        to_arrow_schema(schema),
        paths,
        columns,
        to_arrow_schema(T.StructType(tensor_fields)),
        overwrite=mode == "overwrite",
        stats=stats,
    )
