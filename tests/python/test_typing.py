"""The package ships type information (py.typed, _core.pyi): it must be right.

mypy checks the installed package with the repository's settings; stubtest checks that
_core.pyi and the compiled extension define the same names, and the signatures pybind11
writes into each function's docstring are compared with the stub's, so a binding whose
parameters change without its stub fails here.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

import scatterkit._core as core

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=600
    )


def run_mypy(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return run("mypy", "--config-file", str(PYPROJECT), "--cache-dir", str(cache), *args)


def test_package_type_checks(tmp_path: Path) -> None:
    proc = run_mypy("-p", "scatterkit", cache=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_core_stub_names_match_the_extension() -> None:
    proc = run("mypy.stubtest", "--mypy-config-file", str(PYPROJECT), "scatterkit._core")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def split_top_level(params: str) -> list[str]:
    """`params` split at the commas outside brackets."""
    parts, depth, current = [], 0, ""
    for ch in params:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [p for p in [*parts, current.strip()] if p]


def runtime_parameters(name: str) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter, from pybind11's docstring signature."""
    first = (getattr(core, name).__doc__ or "").splitlines()[0]
    assert first.startswith(f"{name}(") and ") -> " in first, first
    inner = first[len(name) + 1 : first.rindex(") -> ")]
    return [(p.split(":")[0].strip(), "=" in p) for p in split_top_level(inner)]


@functools.cache
def stub_functions() -> dict[str, ast.FunctionDef]:
    stub = Path(core.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


@pytest.mark.parametrize("name", sorted(stub_functions()))
def test_core_stub_parameters_match_the_extension(name: str) -> None:
    args = stub_functions()[name].args
    positional = args.posonlyargs + args.args
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    in_stub = [(a.arg, d) for a, d in zip(positional, defaults)]
    in_stub += [(a.arg, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    assert in_stub == runtime_parameters(name)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import scatterkit as sk\nsk.set_num_threads('2')\n", 'incompatible type "str"'),
        (
            "import numpy as np\nimport scatterkit as sk\n"
            "x: int = sk.scatter_update(np.zeros(3), [0], [1.0], 0)\n",
            "Incompatible types in assignment",
        ),
    ],
)
def test_user_code_gets_the_public_signatures(tmp_path: Path, source: str, expected: str) -> None:
    """A user's mistake is a type error: the public API is annotated, not Any."""
    user = tmp_path / "user.py"
    user.write_text(source)
    proc = run_mypy(str(user), cache=tmp_path / "cache")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert expected in proc.stdout, proc.stdout
