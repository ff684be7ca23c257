"""The job on the Arrow engine: Spark schedules the tasks, the executors do Parquet with pyarrow.

A job is three Spark jobs, all through the DataFrame API (so it runs on Spark Connect):
list the input, split it into pieces and prepare the staging directory (one task,
`plan_pieces`), run one task per piece (``mapInArrow`` over the piece numbers,
`piece_task.run_pieces`), and commit the files of the successful attempts (one task,
`output.write_output`). Counts and failures come back as the rows of the middle job. On a
local master the first and last run in the driver (`cluster.on_cluster`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..core.cluster import on_cluster, parallelism
from ..runtime.commit import Staging, stage
from ..runtime.piece_task import RESULT_SCHEMA, PieceTask, run_pieces
from ..runtime.reading import BatchLimits, Piece, plan_input
from ..runtime.stats import TaskStats, total
from ..runtime.steps import BatchPlan
from ..runtime.storage import Location, check_output_apart, check_output_is_a_directory, locate
from .output import write_output

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
    other_types: pa.Schema,
    *,
    overwrite: bool,
) -> TaskStats:
    """Runs `plan` over the input files into the output; returns the tasks' stats.

    `columns` are the input columns to read, `tensor_types` the Arrow types of those the
    steps read as tensors, as Spark would read them, `other_types` of the others (all null
    where a file lacks one, as in Spark). Raises FileExistsError if the output
    exists and not `overwrite`. A failure (its message in the stats) commits nothing: an
    old output stays as it was.
    """

    def run_pieces_of(work: Work) -> DataFrame:
        task = PieceTask(
            plan,
            paths.source,
            paths.target,
            tuple(columns),
            tensor_types,
            other_types,
            BatchLimits.from_conf(spark.conf),
            work.staging.attempts,
            work.pieces,
        )
        count = len(work.pieces)
        numbers = spark.range(count, numPartitions=count)
        return numbers.mapInArrow(functools.partial(run_pieces, task), spark_schema(RESULT_SCHEMA))

    return run_and_commit(spark, paths, output_schema, overwrite, run_pieces_of)


@dataclass(frozen=True)
class Work:
    """An Arrow engine job's work: the input's pieces and where the tasks write."""

    pieces: tuple[Piece, ...]
    staging: Staging


def plan_pieces(paths: ArrowPaths, tasks: int, overwrite: bool) -> Work:
    """Lists the input into pieces and stages the output (runs on the cluster)."""
    check_output_is_a_directory(paths.target)
    pieces = plan_input(paths.source, tasks)
    return Work(pieces, stage(paths.target, overwrite))


def run_and_commit(
    spark: Any,
    paths: ArrowPaths,
    output_schema: pa.Schema,
    overwrite: bool,
    tasks: Callable[[Work], DataFrame],
) -> TaskStats:
    """Lists the input into pieces, runs the Spark job of `tasks(work)` (a row per task:
    `piece_task.RESULT_SCHEMA`) and commits the files of the successful attempts; returns
    the tasks' stats. A failure commits nothing: an old output stays as it was."""
    work = on_cluster(spark, plan_pieces, paths, parallelism(spark), overwrite)

    def write(staging: Staging) -> tuple[TaskStats, list[str] | None]:
        rows = [r.asDict() for r in tasks(work).collect()]
        return total(rows), [r["path"] for r in rows if r["path"]]

    return write_output(spark, paths.target, overwrite, output_schema, write, staging=work.staging)


def spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)
