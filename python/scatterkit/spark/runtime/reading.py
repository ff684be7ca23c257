"""Reading the input's Parquet files as Spark reads them, with pyarrow: one place for the
driver (listing the input and splitting it into pieces) and the tasks (the Arrow engine's,
and the map tasks of its aggregation).

Like Spark's reader, it skips hidden files, takes each column in the type Spark read it as
(widening a narrower one, refusing a wider one) and names the file it cannot read
(`InputFileError`) or whose types disagree (`InputTypeError`), with another file where one
is found.
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
from .steps import FILE_COLUMN, ROW_COLUMN
from .storage import Location

_ROWS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
# Arrow batches sent to the Python workers (and read by the Arrow engine's tasks): bounded
# in rows and in bytes, so that large tensors (millions of elements per row) make batches of
# a few megabytes and the int32 list offsets Spark uses cannot overflow. A few megabytes, not
# tens: a task's batches then stay in cache and stream through Spark's JVM and its Python
# worker one after another (bench/spark/RESULTS.md, "Arrow batch size").
ARROW_BATCH_CONF: dict[str, str] = {_ROWS_KEY: "4096", _BYTES_KEY: str(4 * 1024 * 1024)}


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


@dataclass(frozen=True)
class Piece:
    """A task's share of the input: row groups [first_group, stop_group) of one file."""

    path: str
    first_group: int = 0
    stop_group: int | None = None  # None: to the end of the file


def input_files(fs: pafs.FileSystem, root: str) -> list[str]:
    """The Parquet files under `root` (a file, or a directory searched recursively).

    Like Spark, skips names starting with ``_`` or ``.`` (``_SUCCESS``, checksums).
    Raises `EngineUnavailable` for Hive partition directories (``key=value``).
    """
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no input at {root!r}")
    if info.type == pafs.FileType.File:
        return [root]
    files = []
    for entry in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        relative = posixpath.relpath(entry.path, root)
        parts = relative.split("/")
        if any(p.startswith(("_", ".")) for p in parts) or entry.type != pafs.FileType.File:
            continue
        if any("=" in p for p in parts[:-1]):
            raise EngineUnavailable(f"{root!r} has partition directories ({relative!r})")
        files.append(entry.path)
    if not files:
        raise FileNotFoundError(f"no Parquet files under {root!r}")
    return sorted(files)


def split_pieces(fs: pafs.FileSystem, files: list[str], tasks: int) -> list[Piece]:
    """One piece per file; fewer files than `tasks` are split at row-group boundaries,
    their footers read (`InputFileError` names one that cannot be)."""
    if len(files) >= tasks:
        return [Piece(f) for f in files]
    per_file = -(-tasks // len(files))
    pieces = []
    for f in files:
        handle, parquet = open_parquet(fs, f)  # a bad footer named here as in a task
        with handle:
            groups = parquet.metadata.num_row_groups
        parts = max(1, min(per_file, groups))
        bounds = [groups * k // parts for k in range(parts + 1)]
        pieces += [Piece(f, a, b) for a, b in zip(bounds, bounds[1:])]
    return pieces


def plan_input(source: Location, tasks: int) -> tuple[Piece, ...]:
    """The input's pieces for an Arrow engine job (runs on the cluster).

    Raises FileNotFoundError for a missing or empty input, `EngineUnavailable` where
    Spark's reader is needed, `InputFileError` for a footer it reads and cannot."""
    fs = source.filesystem()
    return tuple(split_pieces(fs, input_files(fs, source.path), tasks))


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


def _as_spark_reads(
    batch: pa.RecordBatch, types: pa.Schema, other_types: pa.Schema | None = None
) -> pa.RecordBatch:
    """The batch with `types`' columns cast to the types Spark reads them as, and the
    columns of `types` and of `other_types` that the file lacks all null, as Spark reads
    them.

    pyarrow keeps Parquet's own types (uint16, say) where Spark widens them (int): the
    steps must see what the other engine's steps see. Every cast widens
    (`check_file_types` has refused any other). The columns of `other_types` (passed
    through, not read as tensors) keep the types the file holds.
    """
    for field in (*types, *(other_types or ())):
        if batch.schema.get_field_index(field.name) < 0:
            batch = batch.append_column(field.name, pa.nulls(batch.num_rows, field.type))
    for field in types:
        at = batch.schema.get_field_index(field.name)
        if batch.schema.field(at).type != field.type:
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


def read_as_spark(
    source: Location,
    pieces: Sequence[Piece],
    number: int,
    types: pa.Schema,
    columns: Sequence[str],
    limits: BatchLimits,
    locate_rows: bool = False,
    other_types: pa.Schema | None = None,
) -> Iterator[pa.RecordBatch]:
    """Piece `number`'s batches of `columns` (with each row's file and index if
    `locate_rows`), the columns of `types` in the types Spark reads them as; a column of
    `types` or `other_types` that a file lacks is all null there, as in Spark.

    Raises `InputFileError` for a file that cannot be read, `InputTypeError` for one holding
    a column in a type wider than `types`' (naming another of `pieces`' files that agrees,
    where one does), both as the first batch is asked for."""
    piece = pieces[number]
    fs, root = source.filesystem(), source.path
    handle, parquet = open_parquet(fs, piece.path)
    with handle:
        others = agreeing_file(fs, root, (p.path for p in pieces), piece.path)
        check_file_types(parquet.schema_arrow, types, file_name(root, piece.path), others)
        for batch in read_piece(parquet, piece, list(columns), locate_rows, limits):
            yield _as_spark_reads(batch, types, other_types)


def first_fields(source: Location, columns: Sequence[str], field: str) -> dict[str, str]:
    """Each struct column's first non-null `field` value in the input's files (in name
    order, row group by row group, reading that field alone), where one is found: what a
    job asks of the first rows without a Spark job. Raises `InputFileError` for a file it
    cannot read."""
    fs = source.filesystem()
    found: dict[str, str] = {}
    for path in input_files(fs, source.path):
        handle, parquet = open_parquet(fs, path)
        with handle:
            present = set(parquet.schema_arrow.names)
            wanted = [c for c in columns if c not in found and c in present]
            for group in range(parquet.metadata.num_row_groups):
                if not wanted:
                    break
                try:
                    table = parquet.read_row_group(group, columns=[f"{c}.{field}" for c in wanted])
                except _READING_ERRORS as exc:
                    raise unreadable(path, exc) from exc
                for column in wanted:
                    values = (
                        table.column(column).combine_chunks().flatten()[0].drop_null()
                    )  # parent nulls too
                    if len(values):
                        found[column] = str(values[0].as_py())
                wanted = [c for c in wanted if c not in found]
        if len(found) == len(columns):
            break
    return found
