"""The Arrow engine's task: its pieces of the input, every step, one Parquet file out.

Through Spark SQL every tensor element is converted twice in the JVM on each side of the
Python worker (Parquet to rows, rows to Arrow, and back), which costs more than the
operations themselves (bench/spark/RESULTS.md). Here a task reads its pieces with pyarrow,
runs the steps (`steps.run_batches`) and writes its own Parquet file with pyarrow, under the
job's temporary directory; the driver commits the files of the successful attempts.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import InputTypeError
from .faults import pause_point
from .stats import ARROW_FIELDS as STATS_FIELDS
from .stats import TaskStats
from .steps import FILE_COLUMN, ROW_COLUMN, BatchPlan, run_batches
from .storage import Location, Piece

_ROWS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
# Arrow batches sent to the Python workers (and read by the Arrow engine's tasks): bounded
# in rows and in bytes, so that large tensors (millions of elements per row) still make
# batches of a few tens of megabytes and the int32 list offsets Spark uses cannot overflow.
ARROW_BATCH_CONF: dict[str, str] = {_ROWS_KEY: "4096", _BYTES_KEY: str(64 * 1024 * 1024)}
# One row per piece: where its file went and how many rows it holds, and the stats.
RESULT_SCHEMA = pa.schema(
    [
        pa.field("piece", pa.int64()),
        pa.field("path", pa.string()),
        pa.field("rows", pa.int64()),
        *STATS_FIELDS,
    ]
)


@dataclass(frozen=True)
class BatchLimits:
    """Arrow batches: at most `rows` rows and about `bytes` bytes, as Spark's own batches
    (the same two settings, so that ``--conf`` changes both engines alike)."""

    rows: int = int(ARROW_BATCH_CONF[_ROWS_KEY])
    bytes: int = int(ARROW_BATCH_CONF[_BYTES_KEY])

    @classmethod
    def from_conf(cls, conf: Any) -> BatchLimits:
        """The limits a SparkConf sets (non-positive values mean "no limit", as in Spark)."""
        rows = int(conf.get(_ROWS_KEY, str(cls.rows)))
        size = _byte_size(conf.get(_BYTES_KEY, str(cls.bytes)))
        return cls(rows if rows > 0 else 2**31 - 1, size if size > 0 else 2**62)


def _byte_size(text: str) -> int:
    """A Spark byte-size setting: a number of bytes, or one with a unit ("64m", "1gb")."""
    found = re.fullmatch(r"\s*(-?\d+)\s*([kmgtp]?)b?\s*", text, flags=re.IGNORECASE)
    if found is None:
        raise ValueError(f"{_BYTES_KEY}: cannot read {text!r} as a size in bytes")
    return int(found.group(1)) << (10 * " kmgtp".index(found.group(2).lower() or " "))


def _batch_rows(metadata: pq.FileMetaData, groups: range, limits: BatchLimits) -> int:
    """Rows per batch so that a batch stays near `limits.bytes` (tensors can be large)."""
    rows = sum(metadata.row_group(g).num_rows for g in groups)
    size = sum(metadata.row_group(g).total_byte_size for g in groups)
    if rows == 0 or size == 0:
        return limits.rows
    return max(1, min(limits.rows, limits.bytes * rows // size))


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether every value of `source` is a value of `target`, so a cast loses nothing."""
    if source == target:
        return True
    if pa.types.is_integer(source) and pa.types.is_integer(target):
        low, high = _integer_range(source)
        return _integer_range(target)[0] <= low and high <= _integer_range(target)[1]
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return source.bit_width <= target.bit_width
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(is_a(source) for is_a in lists) and any(is_a(target) for is_a in lists):
        return _widens(source.value_type, target.value_type)
    if pa.types.is_struct(source) and pa.types.is_struct(target):
        names = [source.field(i).name for i in range(source.num_fields)]
        return sorted(names) == sorted(
            target.field(i).name for i in range(target.num_fields)
        ) and all(_widens(source.field(n).type, target.field(n).type) for n in names)
    return False


def _integer_range(t: pa.DataType) -> tuple[int, int]:
    if pa.types.is_signed_integer(t):
        return -(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1
    return 0, 2**t.bit_width - 1


def check_file_types(file_schema: pa.Schema, types: pa.Schema, name: str) -> None:
    """Raises `InputTypeError` if a file's column would lose values as `types`' type.

    Spark takes a job's schema from one file; another file may hold a column in a
    narrower type (Spark widens it as it reads, as does `_as_spark_reads`) or in a wider
    one, which Spark's reader refuses and a cast would round (double to float).
    """
    for field in types:
        at = file_schema.get_field_index(field.name)
        if at >= 0 and not _widens(file_schema.field(at).type, field.type):
            raise InputTypeError(
                f"file {name!r} holds column {field.name!r} as {file_schema.field(at).type}, "
                f"which the job reads as {field.type} (the type Spark took from another "
                f"file) only by losing values; write every file with one type"
            )


def _as_spark_reads(batch: pa.RecordBatch, types: pa.Schema) -> pa.RecordBatch:
    """The batch with `types`' columns cast to the types Spark reads them as.

    pyarrow keeps Parquet's own types (uint16, say) where Spark widens them (int): the
    steps must see what the other engine's steps see. Every cast widens
    (`check_file_types` has refused the others).
    """
    for field in types:
        at = batch.schema.get_field_index(field.name)
        if at >= 0 and batch.schema.field(at).type != field.type:
            batch = batch.set_column(at, field.name, batch.column(at).cast(field.type))
    return batch


def read_piece(
    parquet: pq.ParquetFile,
    piece: Piece,
    columns: list[str],
    locate_rows: bool,
    limits: BatchLimits,
) -> Iterator[pa.RecordBatch]:
    metadata = parquet.metadata
    stop = metadata.num_row_groups if piece.stop_group is None else piece.stop_group
    groups = range(piece.first_group, stop)
    if not groups:
        return
    row = sum(metadata.row_group(g).num_rows for g in range(piece.first_group))
    name = posixpath.basename(piece.path)
    for batch in parquet.iter_batches(
        batch_size=_batch_rows(metadata, groups, limits), row_groups=list(groups), columns=columns
    ):
        if locate_rows:  # what Spark's _metadata.file_name / row_index give the other engine
            n = batch.num_rows
            batch = batch.append_column(FILE_COLUMN, pa.array([name] * n, pa.string()))
            batch = batch.append_column(ROW_COLUMN, pa.array(range(row, row + n), pa.int64()))
        row += batch.num_rows
        yield batch


@dataclass(frozen=True)
class PieceTask:
    """What every task of an Arrow engine job shares (pickled into the tasks)."""

    plan: BatchPlan
    source: Location
    target: Location
    columns: tuple[str, ...]  # the input columns to read
    tensor_types: pa.Schema  # the Arrow types of the tensor input columns, as Spark reads them
    limits: BatchLimits
    attempts: str  # where task attempts write (the staging directory's `commit.ATTEMPTS`)
    pieces: tuple[Piece, ...]


def task_file(attempts: str, number: int) -> str:
    """The file task `number` writes under the job's temporary directory, one per attempt
    (the driver commits the successful attempt's)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    return f"{attempts}/part-{number:05d}-attempt-{attempt}.parquet"


def run_piece(task: PieceTask, number: int) -> tuple[str, int, TaskStats]:
    """One piece into one Parquet file of this attempt: (file or "", rows, stats).

    A row failing under ``on_error="fail"``, or a file holding a column in a wider type than
    the job's, is reported in the stats, and the file is left for the cleanup.
    """
    piece = task.pieces[number]
    stats = TaskStats()
    path = task_file(task.attempts, number)
    with task.source.filesystem().open_input_file(piece.path) as handle:
        parquet = pq.ParquetFile(handle)
        try:
            check_file_types(
                parquet.schema_arrow, task.tensor_types, posixpath.basename(piece.path)
            )
        except InputTypeError as exc:
            stats.failure = str(exc)
            return "", 0, stats
        batches = (
            _as_spark_reads(batch, task.tensor_types)
            for batch in read_piece(
                parquet, piece, list(task.columns), task.plan.locate_rows, task.limits
            )
        )
        written, rows = write_task_file(
            path, task.target.filesystem(), run_batches(task.plan, batches, stats)
        )
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
    return pa.RecordBatch.from_arrays([*arrays, *stats.columns(1)], schema=RESULT_SCHEMA)


def run_pieces(task: PieceTask, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function over the piece numbers: one result row per piece."""
    for batch in batches:
        for number in batch.column(0).to_pylist():
            yield result_row(number, *run_piece(task, number))
