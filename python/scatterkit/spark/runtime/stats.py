"""What the executors tell the driver, sent as data: hidden columns of the task's rows.

A Spark accumulator would need the classic API (Spark Connect has none). Instead each
output batch carries its counts in the first row of a few hidden columns (null in the
other rows); the driver sums them with an observation (Spark engine) or from the task
rows it collects (Arrow engine). A task's failure under ``on_error="fail"`` travels the
same way, as the text of ``FAILURE``.

Counts of a retried task are included twice: they describe the work done, not the
output. The job summary's output counts come from the output itself: read back on the Spark
engine, counted by the tasks that wrote it on the Arrow engine (``written``, `written`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

PREFIX = "__scatterkit_"
# python_us: the steps' time; fold_us: the aggregation's folds (map and reduce side).
COUNTS = ("batches", "bytes_in", "bytes_out", "python_us", "fold_us")
MODULE = PREFIX + "module"  # scatterkit.__file__ on the executor
THREADS = PREFIX + "threads"  # its kernel threads per task
FAILURE = PREFIX + "failure"  # the first failure of the task, if any

ARROW_FIELDS: tuple[pa.Field, ...] = (
    *(pa.field(PREFIX + name, pa.int64()) for name in COUNTS),
    pa.field(MODULE, pa.string()),
    pa.field(THREADS, pa.int32()),
    pa.field(FAILURE, pa.string()),
)
NAMES: tuple[str, ...] = tuple(f.name for f in ARROW_FIELDS)
WRITTEN = "written"  # an Arrow engine task row's written counts, as JSON


@dataclass
class TaskStats:
    """The counts of some batches (one task's, or the whole job's)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    modules: set[str] = field(default_factory=set)
    threads: set[int] = field(default_factory=set)
    failure: str | None = None
    # What an Arrow engine task wrote (`written.count_batch`), sent in its result row.
    written: dict[str, int] = field(default_factory=dict)

    def add(self, other: TaskStats) -> None:
        for name, value in other.counts.items():
            self.counts[name] += value
        self.add_written(other.written)
        self.modules |= other.modules
        self.threads |= other.threads
        if self.failure is None or (other.failure is not None and other.failure < self.failure):
            self.failure = other.failure  # the smallest message: the same whatever the order

    def add_written(self, counts: Mapping[str, int]) -> None:
        for key, value in counts.items():
            self.written[key] = self.written.get(key, 0) + value

    def minus(self, earlier: TaskStats) -> TaskStats:
        """The counts added since `earlier` (a copy of these stats, taken before)."""
        counts = {k: v - earlier.counts[k] for k, v in self.counts.items()}
        return TaskStats(counts, set(self.modules), set(self.threads))

    def columns(self, rows: int) -> list[pa.Array]:
        """The hidden columns of a batch of `rows` rows (at least 1): these stats in the
        first row, nulls below."""
        pad = [None] * (rows - 1)
        values: list[Any] = [self.counts[name] for name in COUNTS]
        values += [next(iter(self.modules), None), next(iter(self.threads), None), self.failure]
        return [pa.array([v, *pad], f.type) for v, f in zip(values, ARROW_FIELDS)]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskStats:
        """The stats in a row holding the hidden columns (a task row, or observed metrics)."""
        stats = cls({name: int(row.get(PREFIX + name) or 0) for name in COUNTS})
        stats.modules = _as_set(row.get(MODULE))
        stats.threads = _as_set(row.get(THREADS))
        stats.failure = row.get(FAILURE)
        stats.written = json.loads(row.get(WRITTEN) or "{}")
        return stats


def _as_set(value: Any) -> set:
    if value is None:
        return set()
    if isinstance(value, (list, tuple, set)):
        return set(value)
    return {value}


def observed_metrics() -> list[Any]:
    """The aggregates an ``observe`` computes over the hidden columns (named as they are,
    so that `TaskStats.from_row` reads the result)."""
    from pyspark.sql import functions as F

    sums = [F.sum(PREFIX + name).alias(PREFIX + name) for name in COUNTS]
    return [
        *sums,
        F.collect_set(MODULE).alias(MODULE),
        F.collect_set(THREADS).alias(THREADS),
        F.min(FAILURE).alias(FAILURE),
    ]


def total(rows: Iterable[Mapping[str, Any]]) -> TaskStats:
    """The sum of the stats of task rows."""
    result = TaskStats()
    for row in rows:
        result.add(TaskStats.from_row(row))
    return result


FOLD_US = PREFIX + "fold_us"


def timed_work(
    work: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[tuple[pa.RecordBatch, int]]:
    """`work(batches)`'s output, each batch with the microseconds `work` spent making it,
    the time it waited for its input left out (that is Spark's, or the reader's)."""
    waited = 0.0

    def source() -> Iterator[pa.RecordBatch]:
        nonlocal waited
        iterator = iter(batches)
        while True:
            started = time.perf_counter()
            batch = next(iterator, None)
            waited += time.perf_counter() - started
            if batch is None:
                return
            yield batch

    output = work(source())
    while True:
        started, waited_before = time.perf_counter(), waited
        batch = next(output, None)
        spent = time.perf_counter() - started - (waited - waited_before)
        if batch is None:
            return
        yield batch, int(spent * 1e6)


def with_fold_time(
    work: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """`work(batches)`'s batches, each with a FOLD_US column: the time `work` spent on it
    in the first row, nulls below (a ``mapInArrow`` function; `fold_time_observed` reads it)."""
    pending = 0
    for batch, spent in timed_work(work, batches):
        pending += spent
        if batch.num_rows == 0:  # no row to carry it: the next batch carries it
            continue
        yield batch.append_column(FOLD_US, pa.array([pending] + [None] * (batch.num_rows - 1)))
        pending = 0


def fold_time_observed(frame: Any, name: str) -> tuple[Any, Any]:
    """`frame` (whose batches carry FOLD_US) without that column, and the Observation
    that sums it once an action has run."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(name)
    observed = frame.observe(observation, F.sum(FOLD_US).alias(FOLD_US))
    return observed.drop(FOLD_US), observation


def observed_fold_us(observation: Any) -> int:
    """The microseconds an observation of `fold_time_observed` summed (0 where Spark has
    none: a stage of no partitions sends no metrics, and Spark 4 then fails to read them)."""
    try:
        return int(observation.get.get(FOLD_US) or 0)
    except Exception:  # measuring is a courtesy; never fail the job for it
        return 0
