"""A job with an aggregation step on the Arrow engine: events in and tensors out with pyarrow.

Through Spark SQL, every event is converted to a row and then to Arrow on its way to the
combiner, and every tensor element back to a row on its way to Spark's Parquet writer;
together that takes longer than the aggregation (bench/spark/RESULTS.md). Here only the
packed events pass through Spark, for its shuffle:

- map side: one task per input piece reads the events it needs with pyarrow, as Spark
  would read them, and packs them (`aggregation.sources`, `aggregation.tasks.combine_events`);
  where Spark's reader must do it (a cast pyarrow would do otherwise, a key type it would
  read otherwise), the events come from Spark's reader instead;
- the shuffle by key (`aggregate.group_packed`);
- reduce side: each task folds its groups (`aggregation.tasks.finish_groups`), runs the job's
  per-row steps on them and writes its own Parquet file with pyarrow under the output's
  staging directory; the driver commits the files of the successful attempts
  (`output.write_output`), as for a job without aggregation (`engine_arrow`).

The bits are those of `aggregate`: the same combiner and finisher, whatever reads the events.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Observation

from ..aggregation.api import agg_plan, combine_files, group_packed, map_batches, step_specs
from ..aggregation.sources import event_columns, read_types
from ..aggregation.tasks import combine_events, finish_groups
from ..aggregation.wire import AggPlan, packed_schema
from ..runtime.piece_task import RESULT_SCHEMA, result_row, task_file, write_task_file
from ..runtime.reading import BatchLimits
from ..runtime.stats import TaskStats, observed_fold_us, timed_work
from ..runtime.steps import BatchPlan, run_batches
from ..runtime.storage import Location
from ..runtime.written import Counted, counting
from ..specs.agg_spec import AggregateStep
from .engine_arrow import ArrowPaths, Work, run_and_commit, spark_schema


@dataclass(frozen=True)
class GroupWriter:
    """What a reduce task needs to finish its groups and write them (pickled into the tasks)."""

    plan: AggPlan
    names: tuple[str, ...]  # the by columns, then the aggregates, as the steps read them
    steps: BatchPlan
    columns: tuple[str, ...]  # those the steps read or the output keeps
    target: Location
    attempts: str  # the staging directory's attempts


def _write_groups(
    writer: GroupWriter, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The reduce task: its groups folded, the steps run, one Parquet file written; one
    result row (`piece_task.RESULT_SCHEMA`, the piece being the partition)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    stats = TaskStats()

    def groups() -> Iterator[pa.RecordBatch]:
        finish = functools.partial(finish_groups, writer.plan)
        for batch, spent in timed_work(finish, batches):
            stats.counts["fold_us"] += spent
            named = pa.RecordBatch.from_arrays(batch.columns, names=list(writer.names))
            yield named.select(list(writer.columns))

    aggregates = writer.names[len(writer.plan.keys) :]
    written, rows = write_task_file(
        task_file(writer.attempts, partition),
        writer.target.filesystem(),
        counting(
            Counted.of(writer.steps, aggregates), run_batches(writer.steps, groups(), stats), stats
        ),
    )
    yield result_row(partition, written, rows, stats)


def run_aggregate_job(
    spark: Any,
    events: DataFrame,
    step: AggregateStep,
    steps: BatchPlan,
    columns: Sequence[str],
    output_schema: pa.Schema,
    paths: ArrowPaths,
    *,
    overwrite: bool,
) -> TaskStats:
    """Aggregates the events at `paths.source` (read by Spark as `events`), runs `steps`
    on the groups (reading `columns`) and writes `paths.target`; returns the tasks' stats.

    Raises FileExistsError if the output exists and not `overwrite`; a failure in a task
    (a bad event under on_error fail, a file holding a column in a wider type) fails the
    Spark job, and nothing is committed: an old output stays as it was."""
    specs = step_specs(events.schema, step)
    plan = agg_plan(events, step.by, specs)
    limits = BatchLimits.from_conf(spark.conf)
    named = event_columns(events, plan)
    schema = packed_schema(named.schema, plan)

    map_side: list[Observation] = []

    read = read_types(events, plan)

    def aggregate_into_files(work: Work) -> DataFrame:
        if read is None:
            combine = functools.partial(combine_events, plan)
            packed = map_batches(named, combine, schema, map_side)
        else:
            reader = read.reader(paths.source, work.pieces, limits)
            packed = combine_files(spark, reader, plan, schema, map_side)
        names = (*step.by, *specs)
        writer = GroupWriter(
            plan, names, steps, tuple(columns), paths.target, work.staging.attempts
        )
        write = functools.partial(_write_groups, writer)
        return group_packed(packed, plan).mapInArrow(write, spark_schema(RESULT_SCHEMA))

    found = run_and_commit(spark, paths, output_schema, overwrite, aggregate_into_files)
    if found.failure is None:
        found.counts["fold_us"] += sum(observed_fold_us(o) for o in map_side)
    return found
