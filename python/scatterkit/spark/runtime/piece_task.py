"""The Arrow engine's task: its pieces of the input, every step, one Parquet file out.

Through Spark SQL every tensor element is converted twice in the JVM on each side of the
Python worker (Parquet to rows, rows to Arrow, and back), which costs more than the
operations themselves (bench/spark/RESULTS.md). Here a task reads its pieces with pyarrow
as Spark reads them (`reading.read_as_spark`), runs the steps (`steps.run_batches`) and
writes its own Parquet file with pyarrow, under the job's temporary directory; the driver
commits the files of the successful attempts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import InputFileError, InputTypeError
from .faults import pause_point
from .reading import BatchLimits, Piece, read_as_spark
from .stats import ARROW_FIELDS as STATS_FIELDS
from .stats import WRITTEN, TaskStats
from .steps import BatchPlan, run_batches
from .storage import Location
from .written import Counted, counting

# One row per piece: where its file went and how many rows it holds, and the stats.
RESULT_SCHEMA = pa.schema(
    [
        pa.field("piece", pa.int64()),
        pa.field("path", pa.string()),
        pa.field("rows", pa.int64()),
        *STATS_FIELDS,
        pa.field(WRITTEN, pa.string()),
    ]
)


@dataclass(frozen=True)
class PieceTask:
    """What every task of an Arrow engine job shares (pickled into the tasks)."""

    plan: BatchPlan
    source: Location
    target: Location
    columns: tuple[str, ...]  # the input columns to read
    tensor_types: pa.Schema  # the Arrow types of the tensor input columns, as Spark reads them
    other_types: pa.Schema  # and of the other input columns (null where a file lacks one)
    limits: BatchLimits
    attempts: str  # where task attempts write (the staging directory's `commit.ATTEMPTS`)
    pieces: tuple[Piece, ...]


def task_file(attempts: str, number: int) -> str:
    """The file task `number` writes under the job's staging directory, one per attempt
    (the driver commits the successful attempt's). Named by the attempt's id, unique in the
    application: a stage run again after a fetch failure numbers its attempts from 0 again,
    while a task of the earlier run may still be writing."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.taskAttemptId() if context is not None else 0
    return f"{attempts}/part-{number:05d}-attempt-{attempt}.parquet"


def run_piece(task: PieceTask, number: int) -> tuple[str, int, TaskStats]:
    """One piece into one Parquet file of this attempt: (file or "", rows, stats).

    A row failing under ``on_error="fail"``, a file holding a column in a wider type than
    the job's, or one that cannot be read (truncated, corrupt) is reported in the stats (no
    retry reads a file better), and the file is left for the cleanup.
    """
    stats = TaskStats()
    batches = read_as_spark(
        task.source,
        task.pieces,
        number,
        task.tensor_types,
        task.columns,
        task.limits,
        task.plan.locate_rows,
        task.other_types,
    )
    try:
        written, rows = write_task_file(
            task_file(task.attempts, number),
            task.target.filesystem(),
            counting(Counted.of(task.plan), run_batches(task.plan, batches, stats), stats),
        )
    except (InputFileError, InputTypeError) as exc:
        stats.failure = str(exc)
        return "", 0, stats
    return written, rows, stats


ROW_GROUP_BYTES = 64 << 20  # Arrow bytes gathered into one row group


def write_task_file(path: str, fs: Any, batches: Iterator[pa.RecordBatch]) -> tuple[str, int]:
    """`batches` into one Parquet file at `path`: (the path, or "" if there were no batches,
    and the rows written).

    Row groups hold about ROW_GROUP_BYTES, not a batch each. Only flat columns are
    dictionary encoded: a tensor's values seldom repeat, and trying a dictionary on them
    takes as long as the rest of the write (bench/spark/RESULTS.md)."""
    writer, rows, pending_bytes = None, 0, 0
    pending: list[pa.RecordBatch] = []
    try:
        for batch in batches:
            if writer is None:
                flat = [f.name for f in batch.schema if not pa.types.is_nested(f.type)]
                writer = pq.ParquetWriter(path, batch.schema, filesystem=fs, use_dictionary=flat)
            pending.append(batch)
            rows += batch.num_rows
            pending_bytes += batch.nbytes
            if pending_bytes >= ROW_GROUP_BYTES:
                _write_row_group(writer, pending)
                pending, pending_bytes = [], 0
        pause_point("write")  # tests only: the file open, its last rows and footer not written
        if writer is not None and pending:
            _write_row_group(writer, pending)
    finally:
        if writer is not None:
            writer.close()
    return (path if writer is not None else ""), rows


def _write_row_group(writer: pq.ParquetWriter, batches: list[pa.RecordBatch]) -> None:
    table = pa.Table.from_batches(batches)
    writer.write_table(table, row_group_size=max(1, table.num_rows))


def result_row(piece: int, path: str, rows: int, stats: TaskStats) -> pa.RecordBatch:
    """A task's result: its piece, its file ("" for none), the rows in it and its stats."""
    arrays: Sequence[Any] = [pa.array([piece]), pa.array([path]), pa.array([rows])]
    written = pa.array([json.dumps(stats.written)])
    columns = [*arrays, *stats.columns(1), written]
    return pa.RecordBatch.from_arrays(columns, schema=RESULT_SCHEMA)


def run_pieces(task: PieceTask, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function over the piece numbers: one result row per piece."""
    for batch in batches:
        for number in batch.column(0).to_pylist():
            yield result_row(number, *run_piece(task, number))
