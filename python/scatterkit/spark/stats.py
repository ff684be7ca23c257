"""What the executors tell the driver, sent as data: hidden columns of the task's rows.

A Spark accumulator would need the classic API (Spark Connect has none). Instead each
output batch carries its counts in the first row of a few hidden columns (null in the
other rows); the driver sums them with an observation (Spark engine) or from the task
rows it collects (Arrow engine). A task's failure under ``on_error="fail"`` travels the
same way, as the text of ``FAILURE``.

Counts of a retried task are included twice: they describe the work done, not the
output (the job summary counts rows from the output itself).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

PREFIX = "__scatterkit_"
COUNTS = ("batches", "bytes_in", "bytes_out", "python_us")
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


@dataclass
class TaskStats:
    """The counts of some batches (one task's, or the whole job's)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    modules: set[str] = field(default_factory=set)
    threads: set[int] = field(default_factory=set)
    failure: str | None = None

    def add(self, other: TaskStats) -> None:
        for name, value in other.counts.items():
            self.counts[name] += value
        self.modules |= other.modules
        self.threads |= other.threads
        if self.failure is None or (other.failure is not None and other.failure < self.failure):
            self.failure = other.failure  # the smallest message: the same whatever the order

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
