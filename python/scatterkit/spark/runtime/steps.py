"""The executor side: the steps of a plan over one Arrow record batch, one C++ call each.

The job (both engines) and the column functions all run through `run_steps`, so a bad row
is handled once: with ``keep_errors`` its tensor struct gets ``values`` and ``shape`` null
and its message in the struct's ``error`` field; otherwise the first bad row stops the
batch with a message naming it (by the row id, by its file and row, or by its position).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

import scatterkit as sk

from ..._batch import Ragged, run_batch
from ..core.element_types import numpy_dtype, spark_name
from ..core.errors import RowError
from ..specs.job_spec import Step, TensorInput
from .faults import pause_point
from .stats import NAMES as STATS_NAMES
from .stats import TaskStats
from .tensors import TensorRows, constant_rows, read_split, read_tensor, tensor_array
from .threads import configure_threads, task_context

FILE_COLUMN = "__scatterkit_file"  # hidden: where a row comes from, for error messages
ROW_COLUMN = "__scatterkit_row"


@dataclass(frozen=True)
class BatchPlan:
    """Everything an executor needs to run steps on a batch (pickled into the task)."""

    steps: tuple[Step, ...]
    output_columns: tuple[str, ...]
    keep_errors: bool
    row_id: str | None = None
    locate_rows: bool = False  # the batch carries FILE_COLUMN and ROW_COLUMN
    name_steps_by_op: bool = False  # one step per column function: "ScatterUpdate-3 failed"
    layout: str = "arrays"  # of the tensors the steps write
    # The element type (a Spark name) of each binary tensor column the steps read: a row
    # holding another type is an error of that row.
    binary_elements: tuple[tuple[str, str], ...] = ()

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


@dataclass(frozen=True)
class OpResult:
    """Output values laid out as data's rows, and one message per row (None: success)."""

    values: np.ndarray
    layout: Ragged
    messages: list  # list[str | None]
    failed: list  # list[int]: the rows whose message is not None, in order

    @property
    def valid(self) -> np.ndarray:
        valid = np.ones(len(self.messages), np.bool_)
        valid[self.failed] = False
        return valid

    @property
    def error_count(self) -> int:
        return len(self.failed)


def read_input(
    source: TensorInput,
    columns: Mapping[str, pa.Array],
    rows: int,
    name: str,
    binary_elements: Mapping[str, str] | None = None,
) -> TensorRows:
    """The tensors of one step input for every row of the batch (`binary_elements`: the
    element type of binary tensor columns)."""
    what = f"{name} ({source.describe()})"
    if source.constant is not None:
        c = source.constant
        return constant_rows(rows, c.shape, numpy_dtype(c.dtype), c.fill)
    if source.column is not None:
        element = (binary_elements or {}).get(source.column)
        dtype = numpy_dtype(element) if element is not None else None
        return read_tensor(columns[source.column], what, dtype)
    values, shape = source.split_columns()
    return read_split(columns[values], columns[shape], what)


def _empty_input(dtype: np.dtype) -> TensorRows:
    ragged = Ragged(
        np.empty(0, dtype), np.zeros(1, np.int64), np.empty(0, np.int64), np.zeros(1, np.int64)
    )
    return TensorRows(ragged, {})


def dry_run(op: str, attributes: Mapping[str, Any], dtypes: Mapping[str, np.dtype]) -> None:
    """Runs `op` on zero rows of the given input dtypes: what would fail in every task
    (bad attributes, impossible casts, non-integer indices) raises here, in the driver.
    """
    # run_batch checks what is wrong for every row (a step of 0, say) before the rows.
    run_op(op, attributes, {name: _empty_input(np.dtype(d)) for name, d in dtypes.items()})


def run_op(op: str, attributes: Mapping[str, Any], tensors: Mapping[str, TensorRows]) -> OpResult:
    """Runs `op` on every row: one `run_batch` call, threads over rows.

    A row whose inputs cannot be used (a null tensor, a null element) gets that
    problem as its message; a row the kernel rejects gets the kernel's message.
    """
    data = tensors["data"]
    indices = tensors.get("indices")
    updates = tensors["updates"]
    out, errors = run_batch(
        op,
        data.ragged,
        updates.ragged,
        indices.ragged if indices is not None else None,
        **dict(attributes),
    )
    messages: list[str | None] = errors
    sources = [data.problems, updates.problems]
    if indices is not None:
        sources.append(indices.problems)
    for source in reversed(sources):  # data's problem wins, then updates', then indices'
        for r, problem in source.items():
            messages[r] = f"ValueError: {op}: {problem}"
    failed = [r for r, m in enumerate(messages) if m is not None]
    return OpResult(out, data.ragged, messages, failed)


def _row_name(plan: BatchPlan, columns: dict[str, pa.Array], row: int, first: int | None) -> str:
    if plan.row_id is not None:
        return f"{plan.row_id}={columns[plan.row_id][row].as_py()!r}"
    if plan.locate_rows:
        where = columns[FILE_COLUMN][row].as_py()
        return f"row {columns[ROW_COLUMN][row].as_py()} of file {where!r}"
    context = task_context()
    partition = context.partitionId() if context is not None else 0
    if first is None:  # a column function sees one batch at a time
        return f"row {row} of a batch of partition {partition} (pass row_id= to name rows)"
    return f"row {first + row} of input partition {partition}"


def _step_name(plan: BatchPlan, number: int, step: Step) -> str:
    if plan.name_steps_by_op:
        return step.op
    return f"step {number + 1} ({step.op} -> {step.output!r})"


@dataclass
class StepsOutput:
    """The output batch of `run_steps` (None if a row failed), its counts, the failure."""

    batch: pa.RecordBatch | None
    stats: TaskStats
    failure: str | None = None


def run_steps(plan: BatchPlan, batch: pa.RecordBatch, first_row: int | None = 0) -> StepsOutput:
    """Runs every step on the batch.

    `first_row` is the batch's position in its partition (None: unknown), for naming rows
    when the input has no row id. Without ``keep_errors`` the first bad row makes the
    result a failure (no batch) whose message names the row.
    """
    columns: dict[str, pa.Array] = dict(zip(batch.schema.names, batch.columns))
    binary_elements = dict(plan.binary_elements)
    stats = TaskStats()
    for number, step in enumerate(plan.steps):
        tensors = {
            name: read_input(source, columns, batch.num_rows, name, binary_elements)
            for name, source in step.inputs.items()
        }
        result = run_op(step.op, step.attributes, tensors)
        bad = result.error_count
        if bad and not plan.keep_errors:
            row = result.failed[0]
            more = f" (and {bad - 1} more row(s) in this batch)" if bad > 1 else ""
            where = _row_name(plan, columns, row, first_row)
            failure = f"{_step_name(plan, number, step)} failed for {where}: "
            return StepsOutput(None, stats, failure + f"{result.messages[row]}{more}")
        errors = result.messages if plan.keep_errors else None
        columns[step.output] = tensor_array(
            result.values, result.layout, result.valid, errors, plan.layout
        )
        binary_elements[step.output] = spark_name(result.values.dtype)
        stats.counts["bytes_in"] += sum(
            t.ragged.values.nbytes for n, t in tensors.items() if step.inputs[n].constant is None
        )
        stats.counts["bytes_out"] += result.values.nbytes
    out = pa.RecordBatch.from_arrays(
        [columns[c] for c in plan.output_columns], names=list(plan.output_columns)
    )
    return StepsOutput(out, stats)


def run_batches(
    plan: BatchPlan, batches: Iterator[pa.RecordBatch], stats: TaskStats
) -> Iterator[pa.RecordBatch]:
    """`run_steps` over a task's batches, adding their counts to `stats`.

    Stops at the first failure, which it leaves in ``stats.failure``.
    """
    threads = configure_threads()
    stats.modules.add(sk.__file__)
    stats.threads.add(threads)
    first_row = 0
    for batch in batches:
        started = time.perf_counter()
        output = run_steps(plan, batch, first_row)
        output.stats.counts["python_us"] = int((time.perf_counter() - started) * 1e6)
        output.stats.counts["batches"] = 1
        stats.add(output.stats)
        if output.failure is not None:
            stats.failure = output.failure
            return
        first_row += batch.num_rows
        assert output.batch is not None
        yield output.batch


def raise_failures(plan: BatchPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`run_batches` for the user's own queries (`transform`): a failure raises `RowError`
    in the task, as any Python UDF's error does."""
    stats = TaskStats()
    yield from run_batches(plan, batches, stats)
    if stats.failure is not None:
        raise RowError(stats.failure)


def report_failures(
    plan: BatchPlan, schema: pa.Schema, batches: Iterator[pa.RecordBatch], raising: bool = False
) -> Iterator[pa.RecordBatch]:
    """`run_batches` for the job on the Spark engine: each output batch carries the counts
    since the previous one in the hidden stats columns, and a failure comes as one more row
    (nulls in `schema`'s columns) holding it (see `scatterkit.spark.runtime.stats`), so that the
    driver learns of it without parsing Spark's messages. With `raising` a failure raises
    `RowError` instead (where Spark's writer commits, only a failed task stops it)."""
    stats, sent = TaskStats(), TaskStats()
    for out in run_batches(plan, batches, stats):
        if out.num_rows:  # an empty batch's counts go with the next one
            news = stats.minus(sent)
            sent.add(news)
            yield _with_stats(out, news)
    pause_point("write")  # tests only: Spark's writer has its file open, the footer unwritten
    if stats.failure is not None and raising:
        raise RowError(stats.failure)
    if stats.failure is not None:
        news = stats.minus(sent)
        news.failure = stats.failure
        yield _with_stats(pa.RecordBatch.from_pylist([{}], schema=schema), news)


def _with_stats(batch: pa.RecordBatch, stats: TaskStats) -> pa.RecordBatch:
    arrays = [*batch.columns, *stats.columns(batch.num_rows)]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, *STATS_NAMES])
