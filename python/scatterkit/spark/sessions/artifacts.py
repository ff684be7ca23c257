"""Shipping scatterkit to the Python workers of a Spark Connect server with ``addArtifacts``.

A Spark Connect session has a directory of its own on each executor
(``SparkFiles.getRootDirectory()``, ``.../userFiles-*/<session uuid>``): its Python workers
run there, it is ``sys.path[0]`` before a task's functions are unpickled, and an archive
added with ``spark.addArtifacts("x.zip#alias", archive=True)`` is unpacked into its
subdirectory ``alias``. So `ship_library` adds a zip of the *contents* of the package
directory under the alias ``scatterkit``: the workers then ``import scatterkit`` from
``<session dir>/scatterkit/`` with no bootstrap at all, and functions pickled by reference
(scatterkit's own column functions) work as they are.

The wheel itself cannot be used as it is: as a ``pyfile`` (a zip on ``sys.path``) its
compiled extension does not load (zipimport reads no shared libraries), and as an archive it
unpacks to ``<alias>/scatterkit/``, one level too deep. For such an archive (or the one
``scatterkit-spark pack`` builds: ``environment/lib/python3.X/site-packages``), `on_workers`
wraps a ``mapInArrow`` function so that the directory is put on ``sys.path`` before the
function (and with it, its references to scatterkit) is unpickled.

The shipped extension is compiled code: the workers' Python must be the version the wheel
was built for (``cp311`` ...) on a compatible platform (glibc at least the build machine's
for a plain ``linux_x86_64`` wheel), with NumPy >= 2 and pyarrow installed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PACKAGE = "scatterkit"


def library_archive(wheel: str | os.PathLike[str], dest: Path) -> Path:
    """A zip in `dest` of the files of the wheel's package directory, at the zip's root.

    Unpacked into a directory named ``scatterkit`` it is the importable package. The name
    holds a digest of the contents, and its bytes depend on them alone. Raises ValueError if
    the wheel has no compiled extension.
    """
    prefix = PACKAGE + "/"
    with zipfile.ZipFile(wheel) as source:
        members = [
            info
            for info in source.infolist()
            if info.filename.startswith(prefix) and not info.is_dir()
        ]
        if not any(info.filename.startswith(prefix + "_core.") for info in members):
            raise ValueError(f"{os.fspath(wheel)!r} holds no compiled {PACKAGE}/_core extension")
        digest = hashlib.sha256()
        contents = []
        for info in sorted(members, key=lambda i: i.filename):
            data = source.read(info)
            digest.update(info.filename.encode() + b"\0" + data)
            contents.append((info.filename[len(prefix) :], data))
    target = dest / f"{PACKAGE}-{digest.hexdigest()[:16]}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in contents:  # fixed dates: the same wheel gives the same bytes
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, data, zipfile.ZIP_DEFLATED)
    return target


def ship_library(spark: Any, *, wheel: str | os.PathLike[str] | None = None) -> str:
    """Adds scatterkit to the Spark Connect session `spark`; returns the directory name.

    The package comes from `wheel`, else from this interpreter's installed scatterkit
    (re-packed, see `scatterkit.spark.sessions.pack.wheel_from_installed`). It is unpacked as
    ``<session dir>/scatterkit`` next to each Python worker, which imports it from there
    (ahead of any scatterkit installed on the workers). Calling it again with the same
    package is harmless (the same bytes); a different build needs a new session.
    """
    with tempfile.TemporaryDirectory(prefix="scatterkit-ship-") as tmp:
        if wheel is None:
            from .pack import wheel_from_installed

            wheel = wheel_from_installed(Path(tmp))
        archive = library_archive(wheel, Path(tmp))
        spark.addArtifacts(f"{archive}#{PACKAGE}", archive=True)
    return PACKAGE


def on_workers(
    fn: Callable[[Iterator[Any]], Iterator[Any]], *, path: str
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """`fn` for ``mapInArrow``/``mapInPandas``, run with the session's `path` on sys.path.

    `path` is relative to the session's directory, e.g. the alias of an archive added with
    ``addArtifacts`` (``"wheel"`` for ``wheel.zip#wheel``), or
    ``"environment/lib/python3.11/site-packages"`` for ``env.tar.gz#environment``.
    `fn` travels as pickled bytes, loaded on the worker only once `path` is on sys.path:
    what it refers to (``import scatterkit`` included) is imported from there. The
    wrapper itself refers to nothing outside the standard library and pyspark.
    """
    from pyspark import cloudpickle

    payload = cloudpickle.dumps(fn)

    def bootstrap(batches: Iterator[Any]) -> Iterator[Any]:
        import os
        import pickle
        import sys

        from pyspark import SparkFiles

        directory = os.path.abspath(os.path.join(SparkFiles.getRootDirectory(), path))
        if directory not in sys.path:
            sys.path.insert(0, directory)
        return pickle.loads(payload)(batches)

    return bootstrap
