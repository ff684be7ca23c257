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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..core.errors import (
    EngineUnavailable,
    InputFileError,
    InputTypeError,
    input_file_message,
    input_types_message,
)
from .faults import pause_point
from .stats import ARROW_FIELDS as STATS_FIELDS
from .stats import TaskStats
from .steps import FILE_COLUMN, ROW_COLUMN, BatchPlan, run_batches
from .storage import Location, Piece, input_files

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


# Finds another input file for a message: (column, its type in this file, the job's type)
# to (the file's name, its type), or None.
OtherFile = Callable[[str, pa.DataType, pa.DataType], "tuple[str, pa.DataType] | None"]
_OTHER_FILES = 100  # footers read at most to name another file in a message


def check_file_types(
    file_schema: pa.Schema, types: pa.Schema, name: str, other: OtherFile | None = None
) -> None:
    """Raises `InputTypeError` if a file's column would lose values as `types`' type,
    naming the file `other` finds holding it in a type the job reads (`agreeing_file`).

    Spark takes a job's schema from one file; another file may hold a column in a
    narrower type (Spark widens it as it reads, as does `_as_spark_reads`) or in a wider
    one, which Spark's reader refuses and a cast would round (double to float).
    """
    for field in types:
        at = file_schema.get_field_index(field.name)
        found = file_schema.field(at).type if at >= 0 else None
        if found is not None and not _widens(found, field.type):
            agreeing = other(field.name, found, field.type) if other is not None else None
            message = input_types_message(name, field.name, found, agreeing, field.type)
            raise InputTypeError(message)


def file_name(root: str, path: str) -> str:
    """How a message names an input file: its path under the input directory `root`."""
    name = posixpath.relpath(path, root)
    return posixpath.basename(path) if name == "." else name


def _file_schema(fs: pafs.FileSystem, path: str) -> pa.Schema | None:
    """The Arrow schema of the file at `path` (None if its footer cannot be read)."""
    try:
        with fs.open_input_file(path) as handle:
            return pq.ParquetFile(handle).schema_arrow
    except (pa.ArrowException, OSError):
        return None


def _column_type(schema: pa.Schema | None, column: str) -> pa.DataType | None:
    at = schema.get_field_index(column) if schema is not None else -1
    return schema.field(at).type if schema is not None and at >= 0 else None


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    return _widens(a, b) and _widens(b, a)  # a list's field name aside


def agreeing_file(fs: pafs.FileSystem, root: str, paths: Iterable[str], own: str) -> OtherFile:
    """`check_file_types`' `other`: the first of `paths` (but `own`) holding the column in
    a type the job reads and other than `own`'s."""
    paths = tuple(paths)

    def find(column: str, found: pa.DataType, wanted: pa.DataType) -> tuple[str, Any] | None:
        others = [p for p in dict.fromkeys(paths) if p != own][:_OTHER_FILES]
        for path in others:
            kind = _column_type(_file_schema(fs, path), column)
            if kind is not None and _widens(kind, wanted) and not _same_type(kind, found):
                return file_name(root, path), kind
        return None

    return find


def disagreeing_files(
    source: Location, path: str | None, column: str | None
) -> tuple[str, str, str, str, str] | None:
    """Two input files holding a column in different types, as (column, file, its type,
    other file, its type), for a message (runs on the cluster): the file at `path` (where
    Spark named one) and another, else the first two that differ; on `column`, else on
    the first column that differs. None if none is found, or pyarrow cannot list the input."""
    fs = source.filesystem()
    try:
        files = input_files(fs, source.path)[:_OTHER_FILES]
    except (EngineUnavailable, FileNotFoundError, pa.ArrowException, OSError):
        return None
    first = path if path is not None else next(iter(files), None)
    schema = _file_schema(fs, first) if first is not None else None
    if first is None or schema is None:
        return None
    columns = [column] if column is not None else schema.names
    for other in (f for f in files if f != first):
        theirs = _file_schema(fs, other)
        for name in columns:
            a, b = _column_type(schema, name), _column_type(theirs, name)
            if a is not None and b is not None and not _same_type(a, b):
                names = file_name(source.path, first), file_name(source.path, other)
                return name, names[0], str(a), names[1], str(b)
    return None


# pyarrow raises ArrowInvalid or OSError for a file's bytes, OSError for its file system;
# ArrowMemoryError is an ArrowException too, but no fault of the file's.
_READING_ERRORS = (pa.ArrowException, OSError)


def unreadable(path: str, exc: BaseException) -> InputFileError:
    """`exc`, raised reading the input file at `path`, as an `InputFileError` naming it.
    pyarrow says what is wrong with a file's bytes without an errno; the file system's
    errors (a missing file, a permission) carry one. Running out of memory is no fault of
    the file's: a MemoryError is raised again as it is."""
    if isinstance(exc, MemoryError):
        raise exc
    detail = " ".join(str(exc).split()) or type(exc).__name__
    by_system = isinstance(exc, OSError) and exc.errno is not None
    return InputFileError(input_file_message(path, detail, corrupt=not by_system))


def open_parquet(fs: pafs.FileSystem, path: str) -> tuple[Any, pq.ParquetFile]:
    """The input file at `path` open (close the handle), or `InputFileError` naming it."""
    try:
        handle = fs.open_input_file(path)
    except _READING_ERRORS as exc:
        raise unreadable(path, exc) from exc
    try:
        return handle, pq.ParquetFile(handle)
    except _READING_ERRORS as exc:
        handle.close()
        raise unreadable(path, exc) from exc


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
    """The piece's batches of `columns` (with each row's file and index if `locate_rows`);
    `InputFileError` naming the file where its bytes cannot be read."""
    metadata = parquet.metadata
    stop = metadata.num_row_groups if piece.stop_group is None else piece.stop_group
    groups = range(piece.first_group, stop)
    if not groups:
        return
    row = sum(metadata.row_group(g).num_rows for g in range(piece.first_group))
    name = posixpath.basename(piece.path)
    batches = parquet.iter_batches(
        batch_size=_batch_rows(metadata, groups, limits), row_groups=list(groups), columns=columns
    )
    while True:
        try:  # a corrupt page shows only now, as the batch holding it is read
            batch = next(batches, None)
        except _READING_ERRORS as exc:
            raise unreadable(piece.path, exc) from exc
        if batch is None:
            return
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
    piece = task.pieces[number]
    stats = TaskStats()
    path = task_file(task.attempts, number)
    fs, root = task.source.filesystem(), task.source.path
    try:
        handle, parquet = open_parquet(fs, piece.path)
    except InputFileError as exc:
        stats.failure = str(exc)
        return "", 0, stats
    with handle:
        try:
            others = agreeing_file(fs, root, (p.path for p in task.pieces), piece.path)
            check_file_types(
                parquet.schema_arrow, task.tensor_types, file_name(root, piece.path), others
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
        try:
            written, rows = write_task_file(
                path, task.target.filesystem(), run_batches(task.plan, batches, stats)
            )
        except InputFileError as exc:
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
    return pa.RecordBatch.from_arrays([*arrays, *stats.columns(1)], schema=RESULT_SCHEMA)


def run_pieces(task: PieceTask, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function over the piece numbers: one result row per piece."""
    for batch in batches:
        for number in batch.column(0).to_pylist():
            yield result_row(number, *run_piece(task, number))
