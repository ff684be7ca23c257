"""The one commit of every job (both engines, with or without an aggregation): an output
appears whole, or not at all, and a crash at any step loses nothing.

A job writes into a staging directory, a hidden sibling of the output
(``.NAME.scatterkit-ID``), never into the output itself. Once every task succeeded, the
commit completes the staging directory (the successful attempts' files under their final
names, ``_SUCCESS``) and puts it in the output's place:

- no output yet: one rename;
- an output to replace: on Linux, one ``renameat2(RENAME_EXCHANGE)`` swaps the two
  directories, and the old output, now in the staging path, is removed.

Both are atomic on a local or shared POSIX file system, so at every instant the output
path holds the complete old output or the complete new one. A crash leaves at most a
hidden sibling; the next job that writes the output removes it (`clean_leftovers`), as
does ``scatterkit-spark clean OUTPUT``.

Where the file system cannot exchange (ENOTSUP, EINVAL: some network file systems), the
old output first steps aside to ``.NAME.scatterkit-ID.old``: a crash between the two
renames leaves no output, and the next job (or ``clean``) renames the old one back.

Object stores (``s3://``, ``gs://``) have no rename; there the commit removes the old
``_SUCCESS`` first, then the old files, copies the new ones in, and writes ``_SUCCESS``
last: an output is complete exactly when it holds ``_SUCCESS``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import posixpath
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .faults import hold, requested
from .storage import Location

MARK = ".scatterkit-"  # in every staging directory's name: .NAME.scatterkit-ID
ATTEMPTS = "_attempts"  # the task attempts' files, inside the staging directory
SUCCESS = "_SUCCESS"
# Tests only: "STEP:PATH" makes the commit write PATH and wait at STEP, where the test
# kills the process. The steps, in order: "commit" (the tasks are done), "staged" (the
# staging directory is complete), then "exchanged" (the old output is in the staging
# path) or, where the output is replaced by two renames, "set-aside" (asking for this
# step makes the commit take that way).
PAUSE_ENV = "SCATTERKIT_TEST_COMMIT_PAUSE"


def _pausing_at(step: str) -> str | None:
    return requested(PAUSE_ENV, step)


def _pause(step: str) -> None:
    signal = _pausing_at(step)
    if signal is not None:
        hold(signal)  # until the test kills this process


def _is_local(location: Location) -> bool:
    return "://" not in location.uri


def _exists(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def _remove(fs: pafs.FileSystem, path: str) -> None:
    kind = fs.get_file_info(path).type
    if kind == pafs.FileType.Directory:
        fs.delete_dir(path)
    elif kind == pafs.FileType.File:
        fs.delete_file(path)


_AT_FDCWD, _RENAME_NOREPLACE, _RENAME_EXCHANGE = -100, 1, 2


def _renameat2(source: str, target: str, flags: int) -> bool:
    """``renameat2(source, target, flags)``: False where the system or the file system
    has no such rename; other failures raise OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    call = getattr(libc, "renameat2", None)
    if call is None:  # not Linux, or a C library before glibc 2.28
        return False
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), source, None, target)


def _siblings(target: Location) -> tuple[str, str]:
    parent, name = posixpath.split(target.path.rstrip("/"))
    return parent, f".{name}{MARK}"


def clean_leftovers(target: Location) -> list[str]:
    """Removes what crashed jobs left beside `target` (their staging directories), and
    puts back an old output a crash left set aside. Returns what it removed or restored.
    Two jobs must not write one output at once: each would take the other's staging for
    a leftover."""
    fs = target.filesystem()
    parent, prefix = _siblings(target)
    if not _exists(fs, parent):
        return []
    found = []
    entries = fs.get_file_info(pafs.FileSelector(parent))
    for entry in sorted(entries, key=lambda e: e.path):
        if not posixpath.basename(entry.path).startswith(prefix):
            continue
        if entry.path.endswith(".old") and not _exists(fs, target.path):
            fs.move(entry.path, target.path)  # the crash came between the two renames
            found.append(f"restored {target.path} from {entry.path}")
        else:
            _remove(fs, entry.path)
            found.append(f"removed {entry.path}")
    return found


@dataclass(frozen=True)
class Staging:
    """Where a job writes before its commit: a hidden sibling of the output."""

    target: Location
    path: str  # the staging directory
    output_existed: bool

    @property
    def location(self) -> Location:
        uri = self.target.uri
        return Location(
            self.path if "://" not in uri else uri.replace(self.target.path, self.path, 1),
            self.path,
        )

    @property
    def attempts(self) -> str:
        """Where task attempts write their files (one file per attempt)."""
        return f"{self.path}/{ATTEMPTS}"


def stage(target: Location, overwrite: bool, make: bool = True) -> Staging:
    """Prepares a job's staging directory (runs on the cluster): removes what crashed jobs
    left, then raises FileExistsError if the output exists and not `overwrite`. `make`
    False leaves the directory for Spark's writer to make."""
    fs = target.filesystem()
    clean_leftovers(target)
    existed = _exists(fs, target.path)
    if existed and not overwrite:
        raise FileExistsError(f"output {target.uri!r} already exists")
    parent, prefix = _siblings(target)
    staging = Staging(target, f"{parent}/{prefix}{uuid.uuid4().hex[:12]}", existed)
    if make:
        fs.create_dir(staging.attempts, recursive=True)
    return staging


def commit(staging: Staging, written: list[str] | None, empty_schema: pa.Schema) -> None:
    """Completes the staging directory and puts it in the output's place (runs on the
    cluster). `written`: the task attempts' files to keep (the Arrow engine), or None
    where Spark's writer wrote the directory (its files and ``_SUCCESS``)."""
    _pause("commit")
    fs = staging.target.filesystem()
    if written is not None:
        name = posixpath.basename(staging.path).rsplit("-", 1)[-1]
        for number, path in enumerate(sorted(written)):
            fs.move(path, f"{staging.path}/part-{number:05d}-{name}.parquet")
        if not written:  # an empty input still gives a readable output, with its schema
            part = f"{staging.path}/part-00000.parquet"
            pq.write_table(empty_schema.empty_table(), part, filesystem=fs)
        _remove(fs, staging.attempts)
        with fs.open_output_stream(f"{staging.path}/{SUCCESS}"):
            pass
    _pause("staged")
    if _is_local(staging.target):
        _replace_local(staging)
    else:
        _replace_by_copy(fs, staging)


def _replace_local(staging: Staging) -> None:
    target = staging.target.path
    if not os.path.lexists(target):
        if not _renameat2(staging.path, target, _RENAME_NOREPLACE):
            os.rename(staging.path, target)
        return
    two_renames = _pausing_at("set-aside") is not None
    if not two_renames and _renameat2(staging.path, target, _RENAME_EXCHANGE):
        _pause("exchanged")
    else:
        aside = staging.path + ".old"
        os.rename(target, aside)
        _pause("set-aside")
        os.rename(staging.path, target)
        staging = Staging(staging.target, aside, True)
    # the staging path (or the set-aside one) now holds the old output
    _remove(pafs.LocalFileSystem(), staging.path)


def _replace_by_copy(fs: pafs.FileSystem, staging: Staging) -> None:
    target = staging.target.path
    if _exists(fs, target):
        _remove(fs, f"{target}/{SUCCESS}")  # first: a reader now sees an incomplete output
        for entry in fs.get_file_info(pafs.FileSelector(target)):
            _remove(fs, entry.path)
    else:
        fs.create_dir(target, recursive=True)
    for entry in fs.get_file_info(pafs.FileSelector(staging.path)):
        name = posixpath.basename(entry.path)
        if name != SUCCESS:
            fs.move(entry.path, f"{target}/{name}")
    with fs.open_output_stream(f"{target}/{SUCCESS}"):  # last: the output is complete
        pass
    _remove(fs, staging.path)


def abort(staging: Staging) -> None:
    """Removes the staging directory of a job that failed (runs on the cluster); an old
    output stays as it was."""
    _remove(staging.target.filesystem(), staging.path)
