"""File work of a job with pyarrow's file systems: paths, and questions about the output.

These functions run where the files are: in a one-task Spark job (`cluster.on_cluster`),
so that a Spark Connect client needs no access to the cluster's storage. They serve the
paths pyarrow reaches from every executor: local or shared directories (``file:``) and
object stores (``s3://``, ``gs://``). Hive partition directories (``key=value``), which
Spark turns into columns, and file systems such as ``hdfs://`` go through Spark's own
reader and writer.

Reading the input (its files, its pieces) lives in `reading`, the commit in `commit`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

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


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def check_output_is_a_directory(target: Location) -> None:
    """Raises `EngineUnavailable` if the output path is a file (runs on the cluster):
    Spark's writer decides what becomes of it."""
    if target.filesystem().get_file_info(target.path).type == pafs.FileType.File:
        raise EngineUnavailable(f"the output {target.uri!r} is a file, not a directory")


def output_exists(target: Location) -> bool:
    """Whether anything is at the output path (runs on the cluster)."""
    return _exists(target.filesystem(), target.path)


def tree_bytes(location: Location) -> int:
    """Bytes of the files under a path (runs on the cluster)."""
    fs = location.filesystem()
    info = fs.get_file_info(location.path)
    if info.type == pafs.FileType.File:
        return int(info.size)
    selector = pafs.FileSelector(location.path, recursive=True)
    return sum(int(e.size) for e in fs.get_file_info(selector) if e.type == pafs.FileType.File)
