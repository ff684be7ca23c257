"""The job on the Arrow engine: Spark schedules the tasks, the executors do Parquet with pyarrow.

A job is three Spark jobs, all through the DataFrame API (so it runs on Spark Connect):
list the input and split it into pieces (one task, `storage.plan_input`), run one task per
piece (``mapInArrow`` over the piece numbers, `piece_task.run_pieces`), and commit the
files of the successful attempts (one task, `storage.finish`). Counts and failures come
back as the rows of the middle job. On a local master the first and last run in the driver
(`cluster.on_cluster`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..runtime.piece_task import RESULT_SCHEMA, BatchLimits, PieceTask, run_pieces
from ..runtime.stats import TaskStats, total
from ..runtime.steps import BatchPlan
from ..runtime.storage import InputPlan, Location, check_output_apart, finish, locate, plan_input
from .cluster import on_cluster, parallelism

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class ArrowPaths:
    """The input and the output, resolved for pyarrow."""

    source: Location
    target: Location


def resolve_paths(input_path: str, output_path: str) -> ArrowPaths:
    """The job's paths for pyarrow, or `EngineUnavailable` saying why not (a glob, a file
    system pyarrow does not reach). Raises ValueError if the output would replace the
    input (or a directory holding it)."""
    source, target = locate(input_path), locate(output_path)
    check_output_apart(source.uri, target.uri, input_path, output_path)
    return ArrowPaths(source, target)


def run_arrow_job(
    spark: Any,
    plan: BatchPlan,
    output_schema: pa.Schema,
    paths: ArrowPaths,
    columns: Sequence[str],
    tensor_types: pa.Schema,
    *,
    overwrite: bool,
) -> TaskStats:
    """Runs `plan` over the input files into the output; returns the tasks' stats.

    `columns` are the input columns to read, `tensor_types` the Arrow types of those the
    steps read as tensors, as Spark would read them. Raises FileExistsError if the output
    exists and not `overwrite`. A failure (its message in the stats) commits nothing: an
    old output stays as it was.
    """

    def run_pieces_of(work: InputPlan) -> DataFrame:
        task = PieceTask(
            plan,
            paths.source,
            paths.target,
            tuple(columns),
            tensor_types,
            BatchLimits.from_conf(spark.conf),
            work.job_dir,
            work.pieces,
        )
        count = len(work.pieces)
        numbers = spark.range(count, numPartitions=count)
        return numbers.mapInArrow(functools.partial(run_pieces, task), spark_schema(RESULT_SCHEMA))

    return run_and_commit(spark, paths, output_schema, overwrite, run_pieces_of)


def run_and_commit(
    spark: Any,
    paths: ArrowPaths,
    output_schema: pa.Schema,
    overwrite: bool,
    tasks: Callable[[InputPlan], DataFrame],
) -> TaskStats:
    """Lists the input into pieces, runs the Spark job of `tasks(work)` (a row per task:
    `piece_task.RESULT_SCHEMA`) and commits the files of the successful attempts; returns
    the tasks' stats. A failure commits nothing: an old output stays as it was."""
    work = on_cluster(spark, plan_input, paths.source, paths.target, parallelism(spark), overwrite)
    written: list[str] | None = None
    try:
        rows = [r.asDict() for r in tasks(work).collect()]
        stats = total(rows)
        if stats.failure is None:
            written = [r["path"] for r in rows if r["path"]]
    finally:
        on_cluster(spark, finish, paths.target, work, written, output_schema, overwrite)
    return stats


def spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
