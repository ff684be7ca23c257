"""bench/compare.py --baseline: another installed build, imported as scatterkit_baseline
(bench/comparison/baseline.py).

The helpers are tested on small files; one subprocess runs a tiny A/B of the installed
build against a copy of itself (no second build needed).
"""

from __future__ import annotations

import importlib.machinery
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scatterkit as sk

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/comparison, compare.py's modules
from comparison import baseline, peers, tables  # noqa: E402
from comparison.measurement import Cell, Row  # noqa: E402
from comparison.workloads import Workload  # noqa: E402

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def write_package(root: Path, files: dict[str, str]) -> Path:
    """root/scatterkit with the given modules and an (empty, never loaded) _core extension."""
    pkg = root / "scatterkit"
    for name, text in {"__init__.py": "", **files}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(textwrap.dedent(text))
    (pkg / f"_core{SUFFIX}").write_bytes(b"")
    return pkg


def test_parse_peers():
    assert peers.parse_peers("") is None
    assert peers.parse_peers(" , ") is None
    assert peers.parse_peers("none") == []
    assert peers.parse_peers("None") == []
    assert peers.parse_peers("numpy,PyTorch") == ["PyTorch", "NumPy"]  # in PEERS order
    assert peers.parse_peers("onnx runtime") == ["ONNX Runtime"]
    with pytest.raises(ValueError, match="no such peer: torch"):
        peers.parse_peers("torch,NumPy")
    with pytest.raises(ValueError, match="no such peer: none"):
        peers.parse_peers("none,NumPy")


def test_available_peers_imports_only_the_wanted():
    assert peers.available_peers([]) == ([], {})
    assert peers.available_peers(["NumPy"]) == (["NumPy"], {})


def test_geomean():
    assert tables.geomean([]) is None
    assert tables.geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert tables.geomean([1.0, 1.0, 8.0]) == pytest.approx(2.0)


def test_absolute_self_imports(tmp_path):
    pkg = write_package(
        tmp_path,
        {
            "a.py": '''
                """>>> import scatterkit as sk  (a docstring example: not an import)"""
                import numpy as np, scatterkit as sk
                from . import _core
                from ._api import scatter_update
                import scatterkit_other
            ''',
            "sub/b.py": """
                from .. import a
                from scatterkit.sub import c
                def f():
                    import scatterkit.sub
            """,
        },
    )
    found = baseline.absolute_self_imports(pkg)
    assert found == [
        "a.py:3: scatterkit",
        "sub/b.py:3: scatterkit.sub",
        "sub/b.py:5: scatterkit.sub",
    ]


def test_the_package_imports_itself_relatively(tmp_path):
    """What load_baseline copies (all but BASELINE_SKIP) names no scatterkit module."""
    src = ROOT / "python/scatterkit"
    shutil.copytree(src, tmp_path / "copy", ignore=shutil.ignore_patterns(*baseline.BASELINE_SKIP))
    assert baseline.absolute_self_imports(tmp_path / "copy") == []
    # The Spark integration does import it by name: that is why it is left out.
    assert baseline.absolute_self_imports(src / "spark")


def test_extension_files(tmp_path):
    pkg = write_package(tmp_path, {})
    (pkg / "_core.pyi").write_text("")
    (pkg / "_core.cpython-39-x86_64-linux-gnu.so.bak").write_bytes(b"")
    assert baseline.extension_files(pkg) == [pkg / f"_core{SUFFIX}"]


def test_load_baseline_refuses(tmp_path):
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(ValueError, match="pip install --target"):
        baseline.load_baseline(tmp_path, into)
    pkg = write_package(tmp_path, {"_api.py": "from scatterkit import _core\n"})
    with pytest.raises(ValueError, match=r"imports scatterkit by name.*_api.py:1"):
        baseline.load_baseline(tmp_path, into)
    (pkg / f"_core{SUFFIX}").unlink()
    with pytest.raises(ValueError, match="no _core extension"):
        baseline.load_baseline(tmp_path, tmp_path / "elsewhere")
    assert baseline.BASELINE_NAME not in sys.modules


def test_baseline_table():
    w = Workload("W2", "W2", "elements", "W2")
    cell = Cell

    def row(threads, sk_ms, base_ms, check="="):
        cells = {"scatterkit": cell([sk_ms / 1e3]), "baseline": cell([base_ms / 1e3], "", check)}
        return Row(w, threads, cells, 1)

    assert tables.baseline_table([Row(w, 1, {"scatterkit": cell([1.0])}, 1)]) == ""
    text = tables.baseline_table([row(1, 2.0, 1.0), row(2, 1.0, 2.0), row(2, 4.0, 4.0)])
    lines = text.splitlines()
    assert lines[0].split("|")[1:-1] == [
        " workload ",
        " thr ",
        " sk ms ",
        " baseline ms ",
        " sk/baseline ",
        " baseline check ",
    ]
    assert [ln.split("|")[5].strip() for ln in lines[2:5]] == ["2.000", "0.500", "1.000"]
    per_thread = "(1 thread(s): 2.000, 2 thread(s): 0.707)"
    assert lines[-1] == f"Geometric mean of sk/baseline: 1.000 over 3 rows {per_thread}."


def test_ab_run_against_a_copy_of_the_installed_build(tmp_path):
    """A tiny --baseline --peers none run: the baseline is timed, checked equal, tabled."""
    dest = tmp_path / "base"
    shutil.copytree(
        Path(sk.__file__).parent,
        dest / "scatterkit",
        ignore=shutil.ignore_patterns(*baseline.BASELINE_SKIP),
    )
    out = tmp_path / "RESULTS.md"
    args = ["--quick", "--workloads", "W2", "--threads", "1", "--repeats", "3"]
    args += ["--peers", "none", "--baseline", str(dest), "--out", str(out)]
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench/compare.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "note:" not in run.stdout  # no peer was even tried
    text = out.read_text()
    assert f"imported as `scatterkit_baseline`, version {sk.__version__}) from {dest}" in text
    table = text.split("## scatterkit / baseline", 1)[1]
    for name in ("W2 ", "W2 in-place ", "W2 f16/i32 "):
        cells = next(ln for ln in table.splitlines() if ln.startswith(f"| {name}")).split("|")
        assert float(cells[5]) > 0 and cells[6].strip() == "=", cells
    assert "Geometric mean of sk/baseline:" in table
    assert "No disagreement found." in text
