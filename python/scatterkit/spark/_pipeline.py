"""The job's executor side: every step over each record batch, inside ``mapInArrow``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

import scatterkit as sk

from ._arrow import tensor_array
from ._executor import RowError, configure_threads, read_input, run_op
from .spec import Step

FILE_COLUMN = "__scatterkit_file"  # hidden: where a row comes from, for error messages
ROW_COLUMN = "__scatterkit_row"


@dataclass(frozen=True)
class BatchPlan:
    """Everything an executor needs to run a job on a batch (pickled into the task)."""

    steps: tuple[Step, ...]
    output_columns: tuple[str, ...]
    keep_errors: bool
    row_id: str | None = None
    locate_rows: bool = False  # the batch carries FILE_COLUMN and ROW_COLUMN

    @property
    def tensor_columns(self) -> frozenset[str]:
        """The columns the steps read tensors from (input columns or earlier outputs)."""
        return frozenset(
            c for step in self.steps for s in step.inputs.values() for c in s.columns()
        )

    @property
    def input_columns(self) -> frozenset[str]:
        """The input columns a batch must carry: step inputs, output and row id."""
        names = set(self.output_columns) | self.tensor_columns
        if self.row_id is not None:
            names.add(self.row_id)
        return frozenset(names)


def _row_name(plan: BatchPlan, columns: dict[str, pa.Array], row: int, first: int) -> str:
    if plan.row_id is not None:
        return f"{plan.row_id}={columns[plan.row_id][row].as_py()!r}"
    if plan.locate_rows:
        where = columns[FILE_COLUMN][row].as_py()
        return f"row {columns[ROW_COLUMN][row].as_py()} of file {where!r}"
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    return f"row {first + row} of input partition {partition}"


def apply_steps(
    plan: BatchPlan, batch: pa.RecordBatch, first_row: int = 0
) -> tuple[pa.RecordBatch, dict[str, int]]:
    """Runs every step on the batch; returns the output batch and byte/error counts.

    `first_row` is the batch's position in its partition (for naming rows when the
    input has no row id). Raises `RowError` for the first bad row unless errors are kept.
    """
    columns: dict[str, pa.Array] = dict(zip(batch.schema.names, batch.columns))
    counts = {"bytes_in": 0, "bytes_out": 0, "errors": 0}
    for number, step in enumerate(plan.steps):
        tensors = {
            name: read_input(source, columns, batch.num_rows, name)
            for name, source in step.inputs.items()
        }
        result = run_op(step.op, step.attributes, tensors)
        bad = result.error_count
        if bad and not plan.keep_errors:
            row = result.failed[0]
            more = f" (and {bad - 1} more row(s) in this batch)" if bad > 1 else ""
            raise RowError(
                f"step {number + 1} ({step.op} -> {step.output!r}) failed for "
                f"{_row_name(plan, columns, row, first_row)}: {result.messages[row]}{more}"
            )
        columns[step.output] = tensor_array(result.values, result.layout, result.valid)
        if plan.keep_errors:
            columns[step.error_column] = pa.array(result.messages, pa.string())
        counts["errors"] += bad
        counts["bytes_in"] += sum(
            t.ragged.values.nbytes for n, t in tensors.items() if step.inputs[n].constant is None
        )
        counts["bytes_out"] += result.values.nbytes
    out = pa.RecordBatch.from_arrays(
        [columns[c] for c in plan.output_columns], names=list(plan.output_columns)
    )
    return out, counts


def process_batches(
    plan: BatchPlan, stats: Any, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: one `apply_steps` per batch, stats sent at the end."""
    threads = configure_threads()
    totals = {"rows": 0, "batches": 0, "bytes_in": 0, "bytes_out": 0, "errors": 0}
    busy = 0.0
    for batch in batches:
        started = time.perf_counter()
        out, counts = apply_steps(plan, batch, totals["rows"])
        busy += time.perf_counter() - started
        totals["rows"] += batch.num_rows
        totals["batches"] += 1
        for key, value in counts.items():
            totals[key] += value
        yield out
    totals["python_ms"] = int(busy * 1000)
    if stats is not None:
        stats.add({**totals, "modules": {sk.__file__}, "threads": {threads}})


def process_aliased_batches(
    plan: BatchPlan, stats: Any, names: list[str], batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """`process_batches` over batches whose columns arrive under positional aliases, given
    their real `names` back: PySpark's ``mapInArrow`` cannot look up a column whose name
    holds a dot (``user.id``)."""
    renamed = (pa.RecordBatch.from_arrays(b.columns, names=names) for b in batches)
    return process_batches(plan, stats, renamed)
