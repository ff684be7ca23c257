"""The job on the Spark engine: Spark SQL reads and writes the Parquet, ``mapInArrow`` runs
the steps in between.

Spark's own ``overwrite`` deletes the old output before the job runs, so a failed job would
lose it. Where pyarrow reaches the output (local, shared or object-store paths) Spark's
writer writes the job's staging directory instead, and only a job that succeeded commits
it as the output (`output.write_output`, the Arrow engine's commit too). Elsewhere
(``hdfs://``, say) Spark's writer writes the output itself, with Spark's own semantics
for ``mode``.

The executors' counts and failures arrive as hidden columns, summed by an observation
(`stats.observed_metrics`) and dropped before the writer.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..core.cluster import on_cluster
from ..core.errors import EngineUnavailable
from ..runtime import stats
from ..runtime.commit import Staging, stage
from ..runtime.stats import TaskStats
from ..runtime.steps import FILE_COLUMN, ROW_COLUMN, BatchPlan, raise_failures, report_failures
from ..runtime.storage import check_output_apart, locate
from .output import write_output


def _renamed(names: Sequence[str], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    # PySpark's mapInArrow cannot look up a column whose name holds a dot (``user.id``):
    # the columns travel under positional aliases and get their names back here.
    return (pa.RecordBatch.from_arrays(b.columns, names=list(names)) for b in batches)


def _run_raising(plan: BatchPlan, names: Sequence[str], batches: Iterator[pa.RecordBatch]) -> Any:
    return raise_failures(plan, _renamed(names, batches))


def _run_reporting(
    plan: BatchPlan,
    schema: pa.Schema,
    raising: bool,
    names: Sequence[str],
    batches: Iterator[pa.RecordBatch],
) -> Any:
    return report_failures(plan, schema, _renamed(names, batches), raising)


def _aliased(df: DataFrame, plan: BatchPlan, columns: Sequence[str]) -> tuple[DataFrame, list[str]]:
    extra = []
    if plan.locate_rows:
        extra = [
            F.col("_metadata.file_name").alias(FILE_COLUMN),
            F.col("_metadata.row_index").alias(ROW_COLUMN),
        ]
    names = list(columns) + ([FILE_COLUMN, ROW_COLUMN] if extra else [])
    aliased = df.select(*[F.col(f"`{c}`").alias(f"_sk_{i}") for i, c in enumerate(columns)], *extra)
    return aliased, names


def steps_frame(
    df: DataFrame, plan: BatchPlan, schema: T.StructType, columns: Sequence[str]
) -> DataFrame:
    """`plan` over `df`'s `columns` (lazily); a failing row raises `RowError` in its task."""
    aliased, names = _aliased(df, plan, columns)
    return aliased.mapInArrow(functools.partial(_run_raising, plan, names), schema)


def _reporting_frame(
    df: DataFrame, plan: BatchPlan, schema: T.StructType, columns: Sequence[str], raising: bool
) -> tuple[DataFrame, Observation]:
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    aliased, names = _aliased(df, plan, columns)
    arrow_schema = to_arrow_schema(schema)
    hidden = from_arrow_schema(pa.schema(list(stats.ARROW_FIELDS)))
    with_stats = T.StructType([*schema.fields, *hidden.fields])
    run = functools.partial(_run_reporting, plan, arrow_schema, raising, names)
    observation = Observation("scatterkit")
    frame = aliased.mapInArrow(run, with_stats).observe(observation, *stats.observed_metrics())
    return frame.drop(*stats.NAMES), observation


def run_spark_job(
    spark: Any,
    source: DataFrame,
    plan: BatchPlan,
    schema: T.StructType,
    columns: Sequence[str],
    input_path: str,
    output_path: str,
    *,
    overwrite: bool,
) -> TaskStats:
    """Runs `plan` over `source` into Parquet at `output_path`; returns the tasks' stats.

    Raises FileExistsError if the output exists and not `overwrite`. A failure (its message
    in the stats) commits nothing where pyarrow reaches the output; elsewhere it fails
    Spark's job with a `RowError` (see `errors.row_error_message`).
    """
    try:
        target = locate(output_path)
        check_output_apart(locate(input_path).uri, target.uri, input_path, output_path)
    except EngineUnavailable:  # a file system only Spark reaches: Spark's writer commits
        frame, observation = _reporting_frame(source, plan, schema, columns, raising=True)
        frame.write.mode("overwrite" if overwrite else "errorifexists").parquet(output_path)
        return TaskStats.from_row(observation.get)
    frame, observation = _reporting_frame(source, plan, schema, columns, raising=False)

    def write(staging: Staging) -> tuple[TaskStats, list[str] | None]:
        frame.write.parquet(staging.location.uri)
        return TaskStats.from_row(observation.get), None

    from pyspark.sql.pandas.types import to_arrow_schema

    empty = to_arrow_schema(schema)
    made = on_cluster(spark, stage, target, overwrite, False)  # Spark's writer makes it
    return write_output(spark, target, overwrite, empty, write, staging=made)
