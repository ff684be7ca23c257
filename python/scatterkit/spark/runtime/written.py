"""What an Arrow engine task writes, counted as it writes it: the job summary's rows, kept
errors and aggregate counts, without a Spark job that reads the output again.

The driver sums the counts of the task rows it collects, and Spark hands it one row per
partition, the successful attempt's, whose file is the one committed: the counts are those
of the output, whatever attempts failed or ran twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..core.element_types import DATA, ERROR, VALUES
from .stats import TaskStats
from .steps import BatchPlan

ROWS, ERROR_ROWS = "rows", "error_rows"
AGGREGATE_COUNTS = ("events", "dropped", "error_groups", "bytes")


def step_errors(output: str) -> str:
    """The key of a step's rows kept in error."""
    return f"error:{output}"


def aggregate_count(name: str, aggregate: str) -> str:
    """The key of one of an aggregate's counts (`AGGREGATE_COUNTS`)."""
    return f"{name}:{aggregate}"


@dataclass(frozen=True)
class Counted:
    """The output columns whose counts the summary needs (pickled into the tasks)."""

    steps: tuple[str, ...] = ()  # step outputs whose errors are kept (on_error keep)
    aggregates: tuple[str, ...] = ()  # aggregate columns (struct with events, dropped)

    @classmethod
    def of(cls, plan: BatchPlan, aggregates: tuple[str, ...] = ()) -> Counted:
        """What to count in the output of `plan`'s steps (over `aggregates`' groups)."""
        kept = tuple(step.output for step in plan.steps) if plan.keep_errors else ()
        return cls(kept, aggregates)


def _present(column: pa.Array, field: str) -> pa.Array:
    """Where a struct's field is not null (a null struct's field is null)."""
    return pc.is_valid(pc.struct_field(column, field))


def _sum(values: pa.Array) -> int:
    return int(pc.sum(values).as_py() or 0)


def _tensor_bytes(column: pa.Array) -> int:
    """The bytes of the tensors in a tensor column of either layout (nulls hold none)."""
    kind = column.type
    if kind.get_field_index(DATA) >= 0:
        return _sum(pc.binary_length(pc.struct_field(column, DATA)))
    values = pc.struct_field(column, VALUES)
    return _sum(pc.list_value_length(values)) * kind.field(VALUES).type.value_type.byte_width


def count_batch(counted: Counted, batch: pa.RecordBatch) -> dict[str, int]:
    """The counts of one written batch."""
    counts = {ROWS: batch.num_rows}
    in_error = None
    for output in counted.steps:
        present = _present(batch.column(output), ERROR)
        counts[step_errors(output)] = _sum(pc.cast(present, pa.int64()))
        in_error = present if in_error is None else pc.or_(in_error, present)
    if in_error is not None:
        counts[ERROR_ROWS] = _sum(pc.cast(in_error, pa.int64()))
    for name in counted.aggregates:
        column = batch.column(name)
        counts[aggregate_count("events", name)] = _sum(pc.struct_field(column, "events"))
        counts[aggregate_count("dropped", name)] = _sum(pc.struct_field(column, "dropped"))
        errors = pc.cast(_present(column, ERROR), pa.int64())
        counts[aggregate_count("error_groups", name)] = _sum(errors)
        counts[aggregate_count("bytes", name)] = _tensor_bytes(column)
    return counts


def counting(
    counted: Counted, batches: Iterator[pa.RecordBatch], stats: TaskStats
) -> Iterator[pa.RecordBatch]:
    """`batches` as they are, their counts added to ``stats.written``."""
    for batch in batches:
        stats.add_written(count_batch(counted, batch))
        yield batch
