"""``scatterkit-spark pack``: the executors' Python environment as one archive.

A fresh virtual environment gets the scatterkit wheel, numpy and pyarrow (the driver's
versions), and venv-pack turns it into a ``.tar.gz`` that Spark unpacks next to each
executor (``--archives env.tar.gz#environment``, ``PYSPARK_PYTHON=./environment/bin/python``).
A compiled extension cannot travel through ``--py-files``: a zip cannot load a shared library.

The venv links to this machine's Python interpreter (as venv-pack does): executors need the
same Python at the same path (same image, or conda-pack for a self-contained interpreter).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import deque
from collections.abc import Sequence
from pathlib import Path

_SKIPPED_METADATA = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
_TAIL_LINES = 10  # of a failed command's output, in the RuntimeError


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def wheel_from_installed(dest: Path, name: str = "scatterkit") -> Path:
    """Re-packs the installed distribution `name` into a wheel in `dest` (no compiler needed).

    The wheel holds exactly the files the driver imports: the package and its metadata
    (byte-code caches, installer records and scripts are left out and regenerated).
    """
    dist = metadata.distribution(name)
    files = [str(f) for f in dist.files or []]
    info_dir = next((f.split("/")[0] for f in files if f.endswith(".dist-info/WHEEL")), None)
    if info_dir is None:
        raise RuntimeError(f"{name} has no WHEEL metadata; pass --wheel or --source")
    if not any("/_core" in f and f.endswith((".so", ".pyd")) for f in files):
        raise RuntimeError(
            f"the installed {name} has no compiled extension listed (an editable install?); "
            "pass --wheel WHEEL or --source DIR"
        )
    wheel_meta = Path(str(dist.locate_file(f"{info_dir}/WHEEL"))).read_text()
    tags = [
        line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")
    ]
    if len(tags) != 1:
        raise RuntimeError(f"{name}: expected one wheel tag, got {tags}")
    project = dist.metadata["Name"].replace("-", "_")
    target = dest / f"{project}-{dist.version}-{tags[0]}.whl"
    records = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for rel in sorted(files):
            parts = rel.split("/")
            skipped = (
                rel.startswith("..")
                or "__pycache__" in parts
                or (parts[0] == info_dir and parts[-1] in _SKIPPED_METADATA)
            )
            if skipped:
                continue
            data = Path(str(dist.locate_file(rel))).read_bytes()
            wheel.writestr(rel, data)
            records.append(f"{rel},{_record_hash(data)},{len(data)}")
        records.append(f"{info_dir}/RECORD,,")
        wheel.writestr(f"{info_dir}/RECORD", "\n".join(records) + "\n")
    return target


def wheel_from_source(source: Path, dest: Path) -> Path:
    """Builds the wheel from a source tree with ``pip wheel --no-deps``."""
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dest), str(source)]
    _run(cmd, f"building the wheel from {source}")
    wheels = sorted(dest.glob("scatterkit-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip built no scatterkit wheel from {source}")
    return wheels[-1]


def _run(cmd: Sequence[str], what: str) -> None:
    """Runs `cmd`, echoing its output; RuntimeError with the output's last lines if it fails."""
    print("+", " ".join(cmd), flush=True)
    tail: deque[str] = deque(maxlen=_TAIL_LINES)
    with subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(line, end="", flush=True)
            if line.strip():
                tail.append(line.rstrip())
    if process.returncode:
        output = "".join(f"\n  {line}" for line in tail) or " (no output)"
        raise RuntimeError(f"{what} failed (exit code {process.returncode}):{output}")


def _pinned(name: str) -> str:
    return f"{name}=={metadata.version(name)}"


def pack(
    output: str | os.PathLike[str] = "scatterkit-env.tar.gz",
    *,
    wheel: str | os.PathLike[str] | None = None,
    source: str | os.PathLike[str] | None = None,
    extra: Sequence[str] = (),
    compress_level: int = 1,
) -> Path:
    """Builds the executor environment archive; returns its path.

    The wheel is `wheel`, else built from `source`, else re-packed from this
    interpreter's installed scatterkit. numpy and pyarrow are pinned to the driver's
    versions; `extra` adds requirements (e.g. ``pandas`` for pandas UDFs).

    Raises FileNotFoundError for a missing `wheel` or `source`, RuntimeError when a step
    (building the wheel, making the venv, pip install) fails, with its last lines of output.
    """
    # Checked up front: a plain message, not pip failing later on in a fresh venv.
    if wheel is not None and not Path(wheel).is_file():
        raise FileNotFoundError(f"wheel {os.fspath(wheel)!r} not found (or not a file)")
    if source is not None and not Path(source).is_dir():
        raise FileNotFoundError(f"source directory {os.fspath(source)!r} not found")
    import venv_pack

    out = Path(output).resolve()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="scatterkit-pack-") as tmp:
        tmp_path = Path(tmp)
        if wheel is not None:
            wheel_path = Path(wheel).resolve()
        elif source is not None:
            wheel_path = wheel_from_source(Path(source).resolve(), tmp_path)
        else:
            wheel_path = wheel_from_installed(tmp_path)
        print(f"wheel: {wheel_path.name}", flush=True)
        env = tmp_path / "env"
        _run([sys.executable, "-m", "venv", "--without-pip", str(env)], "creating the venv")
        python = env / "bin" / "python"
        requirements = [str(wheel_path), _pinned("numpy"), _pinned("pyarrow"), *extra]
        pip = [sys.executable, "-m", "pip", "--python", str(python), "install"]
        install = [*pip, "--no-input", "--disable-pip-version-check", "--quiet", *requirements]
        _run(install, f"pip install of {wheel_path.name}, numpy and pyarrow into the venv")
        out.parent.mkdir(parents=True, exist_ok=True)
        venv_pack.pack(prefix=str(env), output=str(out), force=True, compress_level=compress_level)
    size = out.stat().st_size / 1e6
    print(f"packed {out} ({size:,.1f} MB) in {time.perf_counter() - started:,.1f} s", flush=True)
    return out
