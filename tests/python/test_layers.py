"""The Spark package's layers (.importlinter) hold, and its modules import in no cycle.

Both checks read the source tree (python/), not the installed copy, so that they judge
the code under review. A copy of the package with one import turned the wrong way shows
that the check fails when it should."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("importlinter", reason="import-linter is in the test extra")

CYCLES = textwrap.dedent(
    """
    import grimp

    graph = grimp.build_graph("scatterkit", cache_dir=None)
    modules = sorted(m for m in graph.modules if m.startswith("scatterkit.spark"))
    found = set()
    for a in modules:
        for b in graph.find_modules_directly_imported_by(a):
            if b.startswith("scatterkit.spark") and graph.find_shortest_chain(b, a):
                found.add(" -> ".join(sorted((a, b))))
    print("\\n".join(sorted(found)))
    """
)


def _run(args: list[str], source: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _lint(source: Path) -> subprocess.CompletedProcess:
    lint = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command"]
    lint[-1] += "; sys.exit(lint_imports_command(['--no-cache']))"
    return _run(lint, source)


def test_the_spark_layers_hold_on_the_source_tree():
    done = _lint(ROOT / "python")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_no_module_of_the_spark_package_is_in_an_import_cycle():
    done = _run([sys.executable, "-c", CYCLES], ROOT / "python")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"modules importing each other:\n{done.stdout}"


def test_a_wrong_way_import_breaks_the_contract_and_a_cycle_is_found(tmp_path):
    copy = tmp_path / "python"
    shutil.copytree(ROOT / "python", copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    steps = copy / "scatterkit/spark/runtime/steps.py"
    # The executor's step runner reaching up into the job's driver code: both checks object.
    steps.write_text(steps.read_text() + "\nfrom ..jobs import run as _wrong_way  # noqa\n")
    done = _lint(copy)
    assert done.returncode != 0
    assert "scatterkit.spark.runtime.steps -> scatterkit.spark.jobs.run" in done.stdout
    assert "BROKEN" in done.stdout
    cycles = _run([sys.executable, "-c", CYCLES], copy)
    assert "scatterkit.spark.jobs.run -> scatterkit.spark.runtime.steps" in cycles.stdout
