"""File work of a job with pyarrow's file systems: paths, the input's pieces, the commit.

These functions run where the files are: in a one-task Spark job (`cluster.on_cluster`),
so that a Spark Connect client needs no access to the cluster's storage. They serve the
paths pyarrow reaches from every executor: local or shared directories (``file:``) and
object stores (``s3://``, ``gs://``). Hive partition directories (``key=value``), which
Spark turns into columns, and file systems such as ``hdfs://`` go through Spark's own
reader and writer.

Commit protocol: task attempts write under ``<output>/_temporary/<job>/``; only after
every task succeeded are the files of the successful attempts moved into ``<output>``,
the old output replaced (``mode="overwrite"``) and ``_SUCCESS`` written. A failed job
leaves the old output, or no output, as it was.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..core.errors import EngineUnavailable

SCHEMES = ("", "file", "s3", "gs", "gcs")  # where pyarrow's own file systems reach
GLOB_CHARACTERS = "*?[{"  # Hadoop's glob syntax, which only Spark's reader expands


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


def check_output_apart(input_uri: str, output_uri: str, input_path: str, output_path: str) -> None:
    """Raises ValueError if the output (resolved: `output_uri`) is the input or holds it."""
    output_uri = output_uri.rstrip("/")
    if input_uri == output_uri or input_uri.startswith(output_uri + "/"):
        raise ValueError(f"the output {output_path!r} would replace the input {input_path!r}")


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


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


@dataclass(frozen=True)
class InputPlan:
    """The Arrow engine's work: the input's pieces and the output's temporary directory."""

    pieces: tuple[Piece, ...]
    job_dir: str  # under <output>/_temporary
    output_existed: bool


def plan_input(source: Location, target: Location, tasks: int, overwrite: bool) -> InputPlan:
    """Lists the input and prepares the output of an Arrow engine job (runs on the cluster).

    Raises FileExistsError if the output exists and not `overwrite`, FileNotFoundError for
    a missing or empty input, `EngineUnavailable` where Spark's reader or writer is needed.
    """
    fs = target.filesystem()
    kind = fs.get_file_info(target.path).type
    if kind == pafs.FileType.File:  # tasks write under the output directory
        raise EngineUnavailable(f"the output {target.uri!r} is a file, not a directory")
    in_fs = source.filesystem()
    files = input_files(in_fs, source.path)
    existed = kind != pafs.FileType.NotFound
    if existed and not overwrite:
        raise FileExistsError(
            f'output {target.uri!r} already exists (mode "overwrite" replaces it)'
        )
    pieces = split_pieces(in_fs, files, tasks)
    job_dir = f"{target.path}/_temporary/{uuid.uuid4().hex[:12]}"
    fs.create_dir(job_dir, recursive=True)
    return InputPlan(tuple(pieces), job_dir, existed)


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


def finish(
    target: Location,
    plan: InputPlan,
    written: list[str] | None,
    empty_schema: pa.Schema,
    overwrite: bool,
) -> None:
    """Commits the `written` files (None: the job failed, nothing is committed), then
    removes the job's temporary files (runs on the cluster)."""
    fs = target.filesystem()
    try:
        if written is not None:
            commit(fs, target.path, plan.job_dir, written, empty_schema, overwrite)
    finally:
        cleanup(fs, target.path, plan.job_dir, created=not plan.output_existed)


def output_exists(target: Location) -> bool:
    """Whether anything is at the output path (runs on the cluster)."""
    return _exists(target.filesystem(), target.path)


def replace_directory(staging: Location, target: Location) -> None:
    """Moves a finished job's `staging` directory to `target`, replacing what was there
    (the Spark engine's commit; runs on the cluster)."""
    fs = target.filesystem()
    info = fs.get_file_info(target.path)
    if info.type == pafs.FileType.Directory:
        fs.delete_dir(target.path)
    elif info.type == pafs.FileType.File:
        fs.delete_file(target.path)
    fs.move(staging.path, target.path)


def remove_directory(location: Location) -> None:
    """Removes a directory if it is there (runs on the cluster)."""
    fs = location.filesystem()
    if _exists(fs, location.path):
        fs.delete_dir(location.path)


def tree_bytes(location: Location) -> int:
    """Bytes of the files under a path (runs on the cluster)."""
    fs = location.filesystem()
    info = fs.get_file_info(location.path)
    if info.type == pafs.FileType.File:
        return int(info.size)
    selector = pafs.FileSelector(location.path, recursive=True)
    return sum(int(e.size) for e in fs.get_file_info(selector) if e.type == pafs.FileType.File)
