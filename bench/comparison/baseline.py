"""The build under --baseline: another installed copy of scatterkit, imported beside this one.

An A/B of two builds in one process: DIR holds another installed copy of the package
(`pip install --no-deps --no-build-isolation --target DIR <checkout>`). It is copied to a
temporary directory as package `scatterkit_baseline` and imported from there. That works
because the package's modules import each other relatively (absolute_self_imports checks)
and because the extension's init symbol, PyInit__core, does not depend on the package name.
The copy also gives the extension a path of its own, so the dynamic loader maps a second
image even when DIR holds the very file imported as scatterkit.
"""

from __future__ import annotations

import ast
import atexit
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import scatterkit as sk

from .environment import describe_build

# The build under --baseline, imported under another name (use, load_baseline), and where it
# came from; None and "" without --baseline.
BASELINE_NAME = "scatterkit_baseline"
BASELINE: Any = None
BASELINE_BUILD = ""


# Not copied: the Spark integration imports `scatterkit` by name (and the benchmark never
# uses it), the C++ headers and CMake files, and bytecode compiled for the original path.
BASELINE_SKIP = ("spark", "include", "cmake", "__pycache__")


def absolute_self_imports(package_dir: Path, name: str = "scatterkit") -> list[str]:
    """Import statements under `package_dir` that name package `name` absolutely.

    Each would bind a renamed copy of the package to the original, so that the "baseline"
    would run the current build. Found from the syntax tree: docstring examples do not count.
    Returns "file:line: module" entries.
    """

    def own(module: str | None) -> bool:
        return module is not None and (module == name or module.startswith(name + "."))

    found = []
    for path in sorted(Path(package_dir).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules = [node.module or ""]
            else:
                continue
            rel = path.relative_to(package_dir)
            found += [f"{rel}:{node.lineno}: {m}" for m in modules if own(m)]
    return found


def extension_files(package_dir: Path) -> list[Path]:
    """The package's `_core` extension modules that this interpreter can load."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return sorted(
        p
        for p in Path(package_dir).glob("_core*")
        if any(p.name == "_core" + suffix for suffix in suffixes)
    )


def load_baseline(directory: Path, into: Path) -> tuple[ModuleType, str]:
    """Import DIR/scatterkit, copied under `into`, as package `scatterkit_baseline`.

    Returns the module and its describe_build text (the original path, the original _core's
    mtime). Raises ValueError when DIR holds no package this interpreter can load, or one
    that imports itself by name.
    """
    src = Path(directory).resolve() / "scatterkit"
    if not (src / "__init__.py").is_file():
        raise ValueError(
            f"{src / '__init__.py'} not found: --baseline takes the directory given to "
            "`pip install --target`"
        )
    if not extension_files(src):
        raise ValueError(
            f"no _core extension for this Python in {src} "
            f"(looked for _core{{{', '.join(importlib.machinery.EXTENSION_SUFFIXES)}}})"
        )
    if BASELINE_NAME in sys.modules:
        raise ValueError(f"{BASELINE_NAME} is imported already")
    dest = Path(into) / BASELINE_NAME
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(*BASELINE_SKIP))
    absolute = absolute_self_imports(dest)
    if absolute:
        raise ValueError(
            f"{src} imports scatterkit by name, so a renamed copy would run the current "
            "build: " + "; ".join(absolute)
        )
    spec = importlib.util.spec_from_file_location(
        BASELINE_NAME, dest / "__init__.py", submodule_search_locations=[str(dest)]
    )
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {dest}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[BASELINE_NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for key in [k for k in sys.modules if k.split(".")[0] == BASELINE_NAME]:
            del sys.modules[key]
        raise
    core = Path(module._core.__file__)
    if core.parent != dest or core.samefile(sk._core.__file__):
        raise ValueError(f"{BASELINE_NAME}._core came from {core}, not from the copy in {dest}")
    return module, describe_build(src, src / core.name)


def use(directory: Path) -> None:
    """Makes the build under `directory` this run's baseline (BASELINE, BASELINE_BUILD): copied
    into a temporary directory, removed at exit, and imported from there (load_baseline, whose
    ValueError it passes on)."""
    global BASELINE, BASELINE_BUILD
    copy = tempfile.mkdtemp(prefix="scatterkit-baseline-")
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    BASELINE, BASELINE_BUILD = load_baseline(directory, Path(copy))
