"""The job's Arrow engine: Spark schedules the tasks, the executors do Parquet with pyarrow.

Through Spark SQL (``engine="spark"``), every tensor element is converted twice in
the JVM on each side of the Python worker: Parquet columns to rows, rows to Arrow, and
back. That conversion costs more than the operations themselves (bench/spark/RESULTS.md).
This engine skips it: each task reads its share of the input Parquet files with pyarrow,
runs the same batch plan (`process_batches`) and writes a Parquet file with pyarrow.

Commit protocol: task attempts write under ``<output>/_temporary/<job>/``; only after
every task succeeded does the driver move the files of the successful attempts into
``<output>``, replace the old output (``mode="overwrite"``) and write ``_SUCCESS``.
A failed job leaves the old output, or no output, as it was.

It applies where pyarrow reaches the paths from every executor: local or shared
directories (``file:``), and object stores pyarrow knows (``s3://``, ``gs://``). Hive
partition directories (``key=value``), which Spark turns into columns, and file
systems such as ``hdfs://`` go through ``engine="spark"``; ``engine="auto"`` chooses.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ._pipeline import FILE_COLUMN, ROW_COLUMN, BatchPlan, process_batches
from .session import DEFAULT_CONF

SCHEMES = ("", "file", "s3", "gs", "gcs")  # where pyarrow's own file systems reach
GLOB_CHARACTERS = "*?[{"  # Hadoop's glob syntax, which only Spark's reader expands
_ROWS_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
_BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"


@dataclass(frozen=True)
class BatchLimits:
    """Arrow batches: at most `rows` rows and about `bytes` bytes, as Spark's own batches
    (the same two settings, so that ``--conf`` changes both engines alike)."""

    rows: int = int(DEFAULT_CONF[_ROWS_KEY])
    bytes: int = int(DEFAULT_CONF[_BYTES_KEY])

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


class EngineUnavailable(ValueError):
    """The Arrow engine cannot serve these paths; ``engine="spark"`` can."""


@dataclass(frozen=True)
class Location:
    """A path resolved for pyarrow: the URI (re-resolved on executors) and the path in it."""

    uri: str
    path: str

    def filesystem(self) -> pafs.FileSystem:
        if "://" not in self.uri:
            return pafs.LocalFileSystem()
        return pafs.FileSystem.from_uri(self.uri)[0]


def _local_path(path: str) -> str | None:
    """The local path of `path` if it is one: plain, ``file:///p`` or Hadoop's ``file:/p``."""
    if not path.lower().startswith("file:"):
        return None if "://" in path else path
    rest = path[len("file:") :]
    if rest.startswith("//"):  # file://host/p names another machine's file system
        rest = rest[2:]
        if not rest.startswith("/"):
            raise EngineUnavailable(f"{path!r} names a host; pyarrow reads local files only")
    return rest


def locate(path: str) -> Location:
    """Resolves `path` for pyarrow, or raises `EngineUnavailable` saying why not."""
    if any(c in path for c in GLOB_CHARACTERS):
        raise EngineUnavailable(f"{path!r} is a glob pattern, which Spark's reader expands")
    local = _local_path(path)
    if local is not None:
        return Location(os.path.abspath(local), os.path.abspath(local))
    scheme = path.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise EngineUnavailable(f"pyarrow does not read {scheme}:// paths here")
    try:
        _, inner = pafs.FileSystem.from_uri(path)
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise EngineUnavailable(f"pyarrow cannot open {path!r}: {exc}") from None
    return Location(path, inner)


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
    """One piece per file; fewer files than `tasks` are split at row-group boundaries."""
    if len(files) >= tasks:
        return [Piece(f) for f in files]
    per_file = -(-tasks // len(files))
    pieces = []
    for f in files:
        with fs.open_input_file(f) as handle:
            groups = pq.ParquetFile(handle).metadata.num_row_groups
        parts = max(1, min(per_file, groups))
        bounds = [groups * k // parts for k in range(parts + 1)]
        pieces += [Piece(f, a, b) for a, b in zip(bounds, bounds[1:])]
    return pieces


def _batch_rows(metadata: pq.FileMetaData, groups: range, limits: BatchLimits) -> int:
    """Rows per batch so that a batch stays near `limits.bytes` (tensors can be large)."""
    rows = sum(metadata.row_group(g).num_rows for g in groups)
    size = sum(metadata.row_group(g).total_byte_size for g in groups)
    if rows == 0 or size == 0:
        return limits.rows
    return max(1, min(limits.rows, limits.bytes * rows // size))


class InputTypeError(RuntimeError):
    """An input file holds a column in a type the job's type cannot hold exactly."""


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


def _read_piece(
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


def run_task(
    plan: BatchPlan,
    stats: Any,
    source: Location,
    target: Location,
    columns: list[str],
    tensor_types: pa.Schema,
    limits: BatchLimits,
    job_dir: str,
    index: int,
    pieces: Iterator[Piece],
) -> Iterator[tuple[int, str, int]]:
    """One task: its piece through the plan into one Parquet file of this attempt.

    Reads from `source`'s file system and writes under `job_dir` on `target`'s.
    `tensor_types` are the Arrow types of the tensor input columns as Spark reads them.

    Yields (task index, file written or "", rows written).
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    attempt = context.attemptNumber() if context is not None else 0
    in_fs, out_fs = source.filesystem(), target.filesystem()
    for number, piece in enumerate(pieces):
        path = f"{job_dir}/part-{index:05d}-{number}-attempt-{attempt}.parquet"
        with in_fs.open_input_file(piece.path) as handle:
            parquet = pq.ParquetFile(handle)
            check_file_types(parquet.schema_arrow, tensor_types, posixpath.basename(piece.path))
            batches = (
                _as_spark_reads(batch, tensor_types)
                for batch in _read_piece(parquet, piece, columns, plan.locate_rows, limits)
            )
            writer, rows = None, 0
            try:
                for out in process_batches(plan, stats, batches):
                    if writer is None:
                        writer = pq.ParquetWriter(path, out.schema, filesystem=out_fs)
                    writer.write_batch(out)
                    rows += out.num_rows
            finally:
                if writer is not None:
                    writer.close()
        yield index, path if writer is not None else "", rows


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def commit(
    fs: pafs.FileSystem,
    output: str,
    job_dir: str,
    written: list[str],
    empty_schema: pa.Schema,
    overwrite: bool,
) -> None:
    """Moves the task files into `output` (replacing what was there) and marks success."""
    if overwrite:
        for entry in fs.get_file_info(pafs.FileSelector(output)):
            if posixpath.basename(entry.path) != "_temporary":
                if entry.type == pafs.FileType.Directory:
                    fs.delete_dir(entry.path)
                else:
                    fs.delete_file(entry.path)
    for number, path in enumerate(sorted(written)):
        fs.move(path, f"{output}/part-{number:05d}-{posixpath.basename(job_dir)}.parquet")
    if not written:  # an empty input still gives a readable output, with its schema
        pq.write_table(empty_schema.empty_table(), f"{output}/part-00000.parquet", filesystem=fs)
    with fs.open_output_stream(f"{output}/_SUCCESS"):
        pass


def cleanup(fs: pafs.FileSystem, output: str, job_dir: str, created: bool) -> None:
    """Removes this job's temporary files (and the output directory if it made it)."""
    if _exists(fs, job_dir):
        fs.delete_dir(job_dir)
    temporary = posixpath.dirname(job_dir)
    if _exists(fs, temporary) and not fs.get_file_info(pafs.FileSelector(temporary)):
        fs.delete_dir(temporary)
    if created and _exists(fs, output) and not fs.get_file_info(pafs.FileSelector(output)):
        fs.delete_dir(output)


@dataclass(frozen=True)
class ArrowPaths:
    """The input files and the output, resolved for the Arrow engine."""

    source: Location
    target: Location
    files: tuple[str, ...]


def check_output_apart(input_uri: str, output_uri: str, input_path: str, output_path: str) -> None:
    """Raises ValueError if the output (resolved: `output_uri`) is the input or holds it."""
    output_uri = output_uri.rstrip("/")
    if input_uri == output_uri or input_uri.startswith(output_uri + "/"):
        raise ValueError(f"the output {output_path!r} would replace the input {input_path!r}")


def resolve_paths(input_path: str, output_path: str) -> ArrowPaths:
    """Resolves the job's paths, or raises `EngineUnavailable` (nothing has run yet).

    Raises ValueError if the output would replace the input (or a directory holding it).
    """
    source, target = locate(input_path), locate(output_path)
    check_output_apart(source.uri, target.uri, input_path, output_path)
    if target.filesystem().get_file_info(target.path).type == pafs.FileType.File:
        # Its tasks write under the output directory; Spark's writer replaces a file.
        raise EngineUnavailable(f"the output {output_path!r} is a file, not a directory")
    return ArrowPaths(source, target, tuple(input_files(source.filesystem(), source.path)))


def run_arrow_job(
    sc: Any,
    plan: BatchPlan,
    output_schema: pa.Schema,
    paths: ArrowPaths,
    columns: list[str],
    tensor_types: pa.Schema,
    *,
    overwrite: bool,
    stats: Any,
) -> int:
    """Runs `plan` over the input files into the output; returns the rows written.

    `columns` are the input columns to read, `tensor_types` the Arrow types of those the
    steps read as tensors, as Spark would read them (see `run_task`).

    Raises FileExistsError if the output exists and not `overwrite`, and Spark's error
    if a task fails (then nothing is committed and an old output stays as it was).
    """
    fs = paths.target.filesystem()
    output = paths.target.path
    existed = _exists(fs, output)
    if existed and not overwrite:
        raise FileExistsError(
            f'output {paths.target.uri!r} already exists (mode "overwrite" replaces it)'
        )
    pieces = split_pieces(paths.source.filesystem(), list(paths.files), sc.defaultParallelism)
    job_dir = f"{output}/_temporary/{uuid.uuid4().hex[:12]}"
    fs.create_dir(job_dir, recursive=True)
    try:
        limits = BatchLimits.from_conf(sc.getConf())
        task = functools.partial(
            run_task,
            plan,
            stats,
            paths.source,
            paths.target,
            columns,
            tensor_types,
            limits,
            job_dir,
        )
        reports = sc.parallelize(pieces, len(pieces)).mapPartitionsWithIndex(task).collect()
        written = [path for _, path, _ in reports if path]
        commit(fs, output, job_dir, written, output_schema, overwrite)
    finally:
        cleanup(fs, output, job_dir, created=not existed)
    return sum(rows for _, _, rows in reports)
