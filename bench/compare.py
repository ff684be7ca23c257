#!/usr/bin/env python3
"""Compare scatterkit with its peers on the canonical workloads (bench/README.md).

Peers: OpenVINO's CPU plugin, PyTorch (CPU), ONNX Runtime and NumPy; each one that is
installed. Everything runs in one process: per workload and thread count, one warm-up call
per implementation (its output is checked against scatterkit's), then repeats in
round-robin order, rotated every round, so that noise from a loaded machine hits every
implementation alike. Prints medians and writes RESULTS.md and results.png.

    python bench/compare.py                        # every workload at 1 and 2 threads
    python bench/compare.py --quick                # small shapes: a smoke run (results to /tmp)
    python bench/compare.py --workloads W2,W3 --threads 2 --repeats 5
    python bench/compare.py --baseline DIR --peers none   # A/B: this build against DIR's
    python bench/compare.py --workloads H --out /tmp/h.md # the histogram sweep (issue 33)

Family H (histograms at every table size) runs only when named in --workloads: 10M float32
updates into 1-D tables of 4K to 128M bins, sum and max, int64 and int32 indices, uniform and
skewed indices; every implementation writes into a preallocated output (scatterkit `out=`).

Rows named "exact" run scatterkit with exact=True (the real sum rounded once), the peers with
their usual sums, and scatterkit with exact=False beside them ("scatterkit inexact").
bench/README.md explains the workloads, the peers' formulations and how to read the ratios.
"""

from __future__ import annotations

import argparse
import ast
import atexit
import functools
import gc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

# Imported before any peer: scatterkit sets OMP_WAIT_POLICY=PASSIVE unless it is set already,
# and every OpenMP runtime loaded after it (PyTorch bundles its own) then waits the same way.
import scatterkit as sk

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bare_loop  # bench/bare_loop.py, beside this file


def describe_build(package_dir: Path, core_file: Path) -> str:
    """Where a build of the package is and when its extension was written (its mtime)."""
    built = time.localtime(os.path.getmtime(core_file))
    return f"{package_dir}, extension built {time.strftime('%Y-%m-%d %H:%M', built)}"


# What this process runs, recorded before anyone can reinstall the package under it.
SK_BUILD = describe_build(Path(sk.__file__).parent, Path(sk._core.__file__))
# The build under --baseline, imported under another name (load_baseline), and where it came
# from; None and "" without --baseline.
BASELINE_NAME = "scatterkit_baseline"
BASELINE: Any = None
BASELINE_BUILD = ""
SEED = 3
HERE = Path(__file__).resolve().parent
IMPLS = [
    "floor",
    "scatterkit",
    "scatterkit out=",
    "scatterkit inexact",  # rows of exact workloads only: the same call with exact=False
    "baseline",  # with --baseline only: the scatterkit call through the build under DIR
    "bare loop",  # family H only: the serial loop in C, no check (bare_loop.py)
    "inputs read",  # family H only: one thread reading the indices and updates (bare_loop.py)
    "sk uniform",  # family H skewed rows only: scatterkit out= on the uniform row's indices
    "OpenVINO",
    "PyTorch",
    "ONNX Runtime",
    "NumPy",
]
PEERS = ["OpenVINO", "PyTorch", "ONNX Runtime", "NumPy"]
# Rows that give no output to check: the floors, and a skewed row's uniform call (another
# histogram).
UNCHECKED = ("floor", "inputs read", "sk uniform")
# Above this many input bytes, peers run one at a time (each interleaved with the floor and
# scatterkit) and are freed in between: their copies of W1's 1.5 GB updates add up.
SERIAL_PEER_BYTES = 1 << 30
# Tolerances for reductions whose float additions a peer may order differently.
RTOL = {"float32": 1e-5, "float16": 5e-3}
ATOL = {"float32": 1e-6, "float16": 1e-3}


# --- workloads -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str  # "W3 sum f16/i32"
    group: str  # "W3"
    op: str  # "update", "elements", "nd" or "slice"
    family: str  # workloads of one family share their arrays
    reduction: str = "none"
    in_place: bool = False
    dtype: str = "float32"
    index_dtype: str = "int64"
    exact: bool = False  # scatterkit with exact=True; peers run their usual (inexact) sums
    bins: int = 0  # family H: the table size
    skewed: bool = False  # family H: half of the indices in the first 1% of the bins
    # Every implementation writes into an output allocated once (family H): scatterkit
    # `out=` is the reference and the row's scatterkit time, PyTorch and NumPy copy data into
    # their own preallocated output and run in place, ONNX Runtime binds its output (IOBinding).
    preallocated: bool = False


def canonical_workloads() -> list[Workload]:
    f16: dict[str, Any] = {"dtype": "float16", "index_dtype": "int32"}
    w = [
        Workload("W1", "W1", "update", "W1"),
        Workload("W2", "W2", "elements", "W2"),
        Workload("W2 in-place", "W2", "elements", "W2", in_place=True),
        Workload("W2 f16/i32", "W2", "elements", "W2", **f16),
    ]
    for red in ("sum", "max", "mean"):
        w.append(Workload(f"W3 {red}", "W3", "elements", "W2", reduction=red))
    for red in ("sum", "max", "mean"):
        w.append(Workload(f"W3 {red} f16/i32", "W3", "elements", "W2", reduction=red, **f16))
    w += [
        Workload("W4", "W4", "nd", "W4"),
        Workload("W4 in-place", "W4", "nd", "W4", in_place=True),
        Workload("W5", "W5", "slice", "W5"),
        Workload("W6 sum", "W6", "elements", "W6", reduction="sum"),
        Workload("W6 max", "W6", "elements", "W6", reduction="max"),
        Workload("W6 sum exact", "W6", "elements", "W6", reduction="sum", exact=True),
        Workload("W6 mean exact", "W6", "elements", "W6", reduction="mean", exact=True),
    ]
    return w


# Family H (issue 33): the table sizes, 4K to 128M bins (16 KB to 512 MB of float32), and
# the updates per histogram; --quick runs the two smallest sizes with few updates.
HISTOGRAM_BINS = (1 << 12, 1 << 16, 1 << 20, 1 << 24, 1 << 27)
HISTOGRAM_UPDATES = 10_000_000
HISTOGRAM_QUICK_BINS = (1 << 12, 1 << 16)
HISTOGRAM_QUICK_UPDATES = 100_000


def bins_label(bins: int) -> str:
    """4096 -> '4K', 1 << 20 -> '1M', 1 << 27 -> '128M'."""
    for shift, unit in ((20, "M"), (10, "K")):
        if bins >= 1 << shift and bins % (1 << shift) == 0:
            return f"{bins >> shift}{unit}"
    return str(bins)


def histogram_workloads(bins_list: tuple[int, ...] = HISTOGRAM_BINS) -> list[Workload]:
    """Family H: per table size and distribution, sum and max with int64 then int32 indices
    (so that each size's arrays are made once per index type)."""
    w = []
    for bins in bins_list:
        for skewed in (False, True):
            dist = "skewed" if skewed else "uniform"
            for index_dtype, short in (("int64", "i64"), ("int32", "i32")):
                for red in ("sum", "max"):
                    w.append(
                        Workload(
                            f"H {bins_label(bins)} {red} {short} {dist}",
                            "H",
                            "elements",
                            f"H{bins}{dist[0]}",
                            reduction=red,
                            index_dtype=index_dtype,
                            bins=bins,
                            skewed=skewed,
                            preallocated=True,
                        )
                    )
    return w


def histogram_indices(n: int, bins: int, skewed: bool, rng: np.random.Generator) -> np.ndarray:
    """n int64 indices in [0, bins): uniform, or (skewed) half uniform in the first 1% of the
    bins (bins // 100, at least 1) and half uniform in all of them, shuffled."""
    if not skewed:
        return rng.integers(0, bins, n, dtype=np.int64)
    hot = max(1, bins // 100)
    idx = np.concatenate(
        [rng.integers(0, hot, n // 2, dtype=np.int64), rng.integers(0, bins, n - n // 2)]
    )
    rng.shuffle(idx)
    return idx


@dataclass
class Case:
    """The arrays of one workload family, and what the checks and GB/s need from them."""

    data: np.ndarray
    indices: np.ndarray | None
    updates: np.ndarray
    axis: int
    slice: tuple[int, int, int] | None = None  # start, stop, step
    numpy_key: Any = None  # the NumPy index expression that addresses the targets
    dup_mask: np.ndarray | None = None  # True where several updates hit one element
    distinct: int = 0  # elements of data hit by at least one update
    # Family H skewed rows: the uniform row's indices (same table size and index type), so that
    # the skew ratio's two times come from the same rounds.
    uniform_indices: np.ndarray | None = None
    pristine: tuple[int, ...] = ()  # fingerprint of the inputs as made

    def __post_init__(self) -> None:
        self.pristine = self.fingerprint()

    def fingerprint(self) -> tuple[int, ...]:
        """Cheap checksums of the inputs: no implementation may write into them."""
        arrays = (self.data, self.indices, self.updates)
        return tuple(
            int(a.reshape(-1).view(np.uint8)[: a.nbytes // 8 * 8].view(np.uint64).sum())
            for a in arrays
            if a is not None
        )

    @property
    def index_array(self) -> np.ndarray:
        """The indices of an op that has them (every op but SliceScatter)."""
        if self.indices is None:
            raise ValueError("a SliceScatter workload has no indices")
        return self.indices

    @property
    def slice_bounds(self) -> tuple[int, int, int]:
        """start, stop, step of a SliceScatter workload."""
        if self.slice is None:
            raise ValueError("only a SliceScatter workload has a slice")
        return self.slice


def family_shapes(family: str, quick: bool) -> dict[str, Any]:
    outer = 100 if quick else 1000
    if family == "W1":
        n = 20 if quick else 1000
        return {"data": (n, 256, 10, 15), "indices": (125, 20), "axis": 1}
    if family == "W2":
        return {"data": (outer, 256, 7, 7), "indices": (125, 20, 7, 6), "axis": 0}
    if family == "W4":
        return {"data": (outer, 256, 10, 15), "indices": (25, 125, 3), "axis": 0}
    if family == "W5":
        return {"data": (outer, 256, 10, 15), "slice": (0, 256, 2), "axis": 1}
    if family == "W6":
        n = 100_000 if quick else 1_000_000
        return {"data": (n,), "indices": (10 * n,), "axis": 0, "zeros": True}
    raise ValueError(family)


def rng_for(family: str, stream: int) -> np.random.Generator:
    return np.random.default_rng([SEED, int(family[1:]), stream])


def make_histogram_case(w: Workload, quick: bool) -> Case:
    """Family H: a table of zeros, the indices (the same values for int64 and int32) and
    float32 updates in [0, 1). No duplicate mask: every H workload has a reduction."""
    n = HISTOGRAM_QUICK_UPDATES if quick else HISTOGRAM_UPDATES

    def indices_of(skewed: bool) -> np.ndarray:
        rng = np.random.default_rng([SEED, 33, w.bins, int(skewed)])
        return histogram_indices(n, w.bins, skewed, rng).astype(w.index_dtype)

    indices = indices_of(w.skewed)
    updates = np.random.default_rng([SEED, 33, 0]).random(n, dtype=np.float32)
    data = np.zeros(w.bins, np.dtype(w.dtype))
    case = Case(data, indices, updates.astype(w.dtype, copy=False), 0, None, (indices,))
    if w.skewed:
        case.uniform_indices = indices_of(False)
    return case


def make_case(w: Workload, quick: bool) -> Case:
    if w.group == "H":
        return make_histogram_case(w, quick)
    s = family_shapes(w.family, quick)
    dtype, axis = np.dtype(w.dtype), s["axis"]
    data_shape = s["data"]
    if s.get("zeros"):
        data = np.zeros(data_shape, dtype)
    else:
        data = rng_for(w.family, 0).random(data_shape, dtype=np.float32).astype(dtype, copy=False)
    rng = rng_for(w.family, 1)
    if w.op == "slice":
        start, stop, step = s["slice"]
        upd_shape = list(data_shape)
        upd_shape[axis] = len(range(start, stop, step))
        updates = rng.random(upd_shape, dtype=np.float32).astype(dtype, copy=False)
        key = (slice(None),) * axis + (slice(start, stop, step),)
        return Case(data, None, updates, axis, s["slice"], key, None, updates.size)
    idx_shape = s["indices"]
    if w.op == "nd":
        k = idx_shape[-1]
        cols = [rng.integers(0, data_shape[j], idx_shape[:-1]) for j in range(k)]
        indices = np.stack(cols, axis=-1)
    else:
        indices = rng.integers(0, data_shape[axis], idx_shape)
    indices = indices.astype(w.index_dtype)
    rank = len(data_shape)
    if w.op == "update":
        upd_shape = data_shape[:axis] + idx_shape + data_shape[axis + 1 :]
        key = (slice(None),) * axis + (indices,)
        counts = np.bincount(indices.reshape(-1), minlength=data_shape[axis])
        mask = (counts >= 2).reshape((1,) * axis + (-1,) + (1,) * (rank - axis - 1))
        per_target = data.size // data_shape[axis]
        distinct = int(np.count_nonzero(counts)) * per_target
    elif w.op == "elements":
        upd_shape = idx_shape
        key = tuple(
            indices if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (rank - d - 1))
            for d, n in enumerate(idx_shape)
        )
        flat = np.ravel_multi_index(np.broadcast_arrays(*key), data_shape)
        counts = np.bincount(flat.reshape(-1), minlength=data.size)
        mask = (counts >= 2).reshape(data_shape)
        distinct = int(np.count_nonzero(counts))
    else:  # nd
        k = idx_shape[-1]
        upd_shape = idx_shape[:-1] + data_shape[k:]
        key = tuple(indices[..., j] for j in range(k))
        slabs = np.ravel_multi_index(key, data_shape[:k])
        counts = np.bincount(slabs.reshape(-1), minlength=int(np.prod(data_shape[:k])))
        mask = (counts >= 2).reshape(data_shape[:k] + (1,) * (rank - k))
        distinct = int(np.count_nonzero(counts)) * int(np.prod(data_shape[k:]))
    updates = rng_for(w.family, 2).random(upd_shape, dtype=np.float32).astype(dtype, copy=False)
    return Case(data, indices, updates, axis, None, key, mask, distinct)


def traffic_bytes(w: Workload, c: Case) -> int:
    """Bytes the op must move at least (bench/README.md; the same model as the C++ benches).

    Out of place: read data + write the output + indices + the updates that reach the output
    (one per distinct target for 'none', all of them for a reduction). In place: indices +
    read those updates + write their targets. The memcpy floor moves 2 * data bytes.
    """
    index_bytes = 0 if c.indices is None else c.indices.nbytes
    needed = c.distinct * c.data.itemsize if w.reduction == "none" else c.updates.nbytes
    if w.in_place:
        return index_bytes + 2 * needed
    return 2 * c.data.nbytes + index_bytes + needed


# --- the baseline build (--baseline) ------------------------------------------------------
#
# An A/B of two builds in one process: DIR holds another installed copy of the package
# (`pip install --no-deps --no-build-isolation --target DIR <checkout>`). It is copied to a
# temporary directory as package `scatterkit_baseline` and imported from there. That works
# because the package's modules import each other relatively (absolute_self_imports checks)
# and because the extension's init symbol, PyInit__core, does not depend on the package name.
# The copy also gives the extension a path of its own, so the dynamic loader maps a second
# image even when DIR holds the very file imported as scatterkit.

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


# --- implementations -----------------------------------------------------------------------
#
# setup_<impl>(w, c, threads) returns a zero-argument callable that runs the op once and
# returns its output (anything np.asarray accepts), or a string saying why the
# implementation cannot express the workload ("n/a"). Setup (model compilation, index
# reshaping, working copies) is never timed.


class NotAvailable(str):
    pass


def setup_floor(w: Workload, c: Case, threads: int):
    out = np.zeros_like(c.data)

    def run():
        np.copyto(out, c.data)
        return out

    return run


def sk_call(
    w: Workload,
    c: Case,
    data: np.ndarray,
    out: np.ndarray | None,
    exact: bool | None = None,
    lib: Any = sk,
):
    """The op as a user writes it; exact=True on exact workloads unless `exact` says otherwise.

    `lib` is the package that runs it: scatterkit, or the build under --baseline.
    """
    exact = w.exact if exact is None else exact
    if w.op == "update":
        return lib.scatter_update(data, c.indices, c.updates, c.axis, out=out)
    if w.op == "elements":
        return lib.scatter_elements_update(
            data, c.indices, c.updates, c.axis, reduction=w.reduction, out=out, exact=exact
        )
    if w.op == "nd":
        return lib.scatter_nd_update(data, c.indices, c.updates, out=out, exact=exact)
    start, stop, step = c.slice_bounds
    return lib.slice_scatter(data, c.updates, start, stop, step, c.axis, out=out)


def setup_scatterkit(w: Workload, c: Case, threads: int, lib: Any = sk):
    """What a user writes: a new array per call (in place: out=data; on workloads where every
    implementation writes into a preallocated output, out= one)."""
    if w.in_place:
        work = c.data.copy()
        return lambda: sk_call(w, c, work, work, lib=lib)
    if w.preallocated:
        dst = np.zeros_like(c.data)
        return lambda: sk_call(w, c, c.data, dst, lib=lib)
    return lambda: sk_call(w, c, c.data, None, lib=lib)


def setup_baseline(w: Workload, c: Case, threads: int):
    """The scatterkit row's very call, through the build under --baseline."""
    if BASELINE is None:
        return NotAvailable("no --baseline")
    return setup_scatterkit(w, c, threads, lib=BASELINE)


def setup_bare_loop(w: Workload, c: Case, threads: int):
    """Family H: data copied into a preallocated output, then the bare serial loop, one
    thread whatever `threads` says: what a fold in C order costs with nothing around it."""
    if w.group != "H":
        return NotAvailable("family H only")
    lib = bare_loop.load()
    if isinstance(lib, str):
        return NotAvailable(lib)
    out = np.zeros_like(c.data)
    idx = c.index_array

    def run():
        np.copyto(out, c.data)
        bare_loop.fold(out, idx, c.updates, w.reduction)
        return out

    return run


def setup_sk_uniform(w: Workload, c: Case, threads: int):
    """Family H skewed rows: `scatterkit out=` on the uniform row's indices, in the same rounds
    as the skewed call, for the skew ratio (a ratio of two times taken minutes apart moved
    with whatever else the machine ran in between)."""
    if c.uniform_indices is None:
        return NotAvailable("skewed family H rows only")
    uniform = replace(c, indices=c.uniform_indices, uniform_indices=None)
    out = np.zeros_like(c.data)
    return lambda: sk_call(w, uniform, uniform.data, out)


def setup_inputs_read(w: Workload, c: Case, threads: int):
    """Family H: one thread reading the indices and updates once, nothing else, whatever
    `threads` says: what memory allows a fold in C order. Returns the checksum, which no
    check compares."""
    if w.group != "H":
        return NotAvailable("family H only")
    lib = bare_loop.load()
    if isinstance(lib, str):
        return NotAvailable(lib)
    idx = c.index_array
    return lambda: np.uint64(bare_loop.read(idx, c.updates))


def setup_scatterkit_out(w: Workload, c: Case, threads: int):
    """Into a preallocated output, as the floor writes into one."""
    if w.in_place:
        return NotAvailable("in place: the scatterkit row")
    out = np.zeros_like(c.data)
    return lambda: sk_call(w, c, c.data, out)


def setup_scatterkit_inexact(w: Workload, c: Case, threads: int):
    """An exact workload's call with exact=False: what exact=True costs, in the same rounds."""
    if not w.exact:
        return NotAvailable("rows of exact workloads only")
    return lambda: sk_call(w, c, c.data, None, exact=False)


def setup_numpy(w: Workload, c: Case, threads: int):
    key, upd = c.numpy_key, c.updates
    if w.reduction == "none":

        def apply(out):
            out[key] = upd
    elif w.reduction == "sum":

        def apply(out):
            np.add.at(out, key, upd)
    elif w.reduction == "max":

        def apply(out):
            np.maximum.at(out, key, upd)
    else:  # mean with the initial value: (data + sum) / (1 + count)

        def apply(out):
            np.add.at(out, key, upd)
            count = np.ones_like(out)
            np.add.at(count, key, 1)
            np.divide(out, count, out=out)

    if w.in_place:
        work = c.data.copy()

        def run_in_place():
            apply(work)
            return work

        return run_in_place

    if w.preallocated:
        dst = np.empty_like(c.data)

        def run_into():
            np.copyto(dst, c.data)
            apply(dst)
            return dst

        return run_into

    def run():
        out = c.data.copy()
        apply(out)
        return out

    return run


def setup_torch(w: Workload, c: Case, threads: int):
    import torch

    data, upd, axis = torch.from_numpy(c.data), torch.from_numpy(c.updates), c.axis
    if w.op == "update":
        idx = torch.from_numpy(c.index_array.reshape(-1).astype(np.int64, copy=False))
        shape = (*c.data.shape[:axis], idx.numel(), *c.data.shape[axis + 1 :])
        src = upd.reshape(shape)

        def apply(t):
            t.index_copy_(axis, idx, src)
    elif w.op == "elements":
        idx = torch.from_numpy(c.indices)
        if w.reduction == "none":

            def apply(t):
                t.scatter_(axis, idx, upd)
        else:
            how = {"sum": "sum", "max": "amax", "mean": "mean"}[w.reduction]

            def apply(t):
                t.scatter_reduce_(axis, idx, upd, how, include_self=True)
    elif w.op == "nd":
        key = tuple(torch.from_numpy(np.ascontiguousarray(k)) for k in c.numpy_key)

        def apply(t):
            t.index_put_(key, upd)
    else:
        key = c.numpy_key

        def apply(t):
            t[key] = upd

    if w.in_place:
        work = data.clone()

        def run_in_place():
            apply(work)
            return work.numpy()

        return run_in_place

    if w.preallocated:
        dst = torch.empty_like(data)

        def run_into():
            dst.copy_(data)
            apply(dst)
            return dst.numpy()

        return run_into

    def run():  # out of place: clone + in-place op, what a user writes
        t = data.clone()
        apply(t)
        return t.numpy()

    return run


def nd_indices_for(w: Workload, c: Case) -> np.ndarray:
    """ScatterND index tuples addressing what ScatterUpdate / a strided slice addresses."""
    axis = c.axis
    if w.op == "update":
        last = c.index_array.astype(np.int64)
    else:
        start, stop, step = c.slice_bounds
        last = np.arange(start, stop, step, dtype=np.int64)
    lead = c.data.shape[:axis]
    grids = [
        np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(lead) - d - 1 + last.ndim))
        for d, n in enumerate(lead)
    ]
    parts = np.broadcast_arrays(*grids, last.reshape((1,) * len(lead) + last.shape))
    return np.stack(parts, axis=-1)


def setup_ort(w: Workload, c: Case, threads: int):
    import onnx
    import onnxruntime as ort
    from onnx import helper

    if w.in_place:
        return NotAvailable("no in-place API")
    if w.reduction == "mean":
        return NotAvailable("ScatterElements has no mean")
    if w.op == "elements":
        node = helper.make_node(
            "ScatterElements",
            ["data", "indices", "updates"],
            ["out"],
            axis=c.axis,
            reduction={"none": "none", "sum": "add", "max": "max"}[w.reduction],
        )
        indices, updates = c.index_array, c.updates
    else:  # ScatterND; ScatterUpdate and SliceScatter as exporters write them
        node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["out"])
        indices = c.index_array if w.op == "nd" else nd_indices_for(w, c)
        updates = c.updates
    elem = helper.np_dtype_to_tensor_dtype
    graph = helper.make_graph(
        [node],
        w.name,
        [
            helper.make_tensor_value_info("data", elem(c.data.dtype), c.data.shape),
            helper.make_tensor_value_info("indices", elem(indices.dtype), indices.shape),
            helper.make_tensor_value_info("updates", elem(updates.dtype), updates.shape),
        ],
        [helper.make_tensor_value_info("out", elem(c.data.dtype), c.data.shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.checker.check_model(model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 4
    # Spinning workers would steal the core from whatever is timed next in the round robin.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feeds = {"data": c.data, "indices": indices, "updates": updates}
    if w.preallocated:  # the output bound once, written by every run
        dst = np.empty_like(c.data)
        binding = sess.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        binding.bind_output("out", "cpu", 0, dst.dtype, list(dst.shape), dst.ctypes.data)

        def run_into():
            sess.run_with_iobinding(binding)
            return dst

        return run_into
    return lambda: sess.run(None, feeds)[0]


def setup_openvino(w: Workload, c: Case, threads: int):
    import openvino as ov
    import openvino.opset3 as ops3
    import openvino.opset12 as ops12
    import openvino.opset15 as ops15

    if w.in_place:
        return NotAvailable("no in-place API")
    types = {"float32": ov.Type.f32, "float16": ov.Type.f16, "int32": ov.Type.i32}
    types["int64"] = ov.Type.i64
    data = ops15.parameter(list(c.data.shape), types[str(c.data.dtype)], name="data")
    upd = ops15.parameter(list(c.updates.shape), types[str(c.updates.dtype)], name="updates")
    params, feeds = [data], [c.data]
    if c.indices is not None:
        idx = ops15.parameter(list(c.indices.shape), types[str(c.indices.dtype)], name="indices")
        params.append(idx)
        feeds.append(c.indices)
    params.append(upd)
    feeds.append(c.updates)
    axis = ops15.constant(np.int64(c.axis))
    if w.op == "update":
        node = ops3.scatter_update(data, idx, upd, axis)
    elif w.op == "elements":
        node = ops12.scatter_elements_update(data, idx, upd, axis, w.reduction, True)
    elif w.op == "nd":
        node = ops15.scatter_nd_update(data, idx, upd, "none")
    else:
        start, stop, step = (np.array([v], np.int64) for v in c.slice_bounds)
        node = ops15.slice_scatter(data, upd, start, stop, step, np.array([c.axis], np.int64))
    model = ov.Model([node.output(0)], params, w.name)
    config = {
        "INFERENCE_NUM_THREADS": threads,
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        # Pinned plugin threads would skew every other implementation timed in this process.
        "ENABLE_CPU_PINNING": False,
    }
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()

    def run():
        # Zero-copy in and out: OpenVINO's fastest path. Its output buffer is reused.
        return request.infer(feeds, share_inputs=True, share_outputs=True)[0]

    return run


SETUP: dict[str, Callable] = {
    "floor": setup_floor,
    "scatterkit": setup_scatterkit,
    "scatterkit out=": setup_scatterkit_out,
    "scatterkit inexact": setup_scatterkit_inexact,
    "baseline": setup_baseline,
    "bare loop": setup_bare_loop,
    "inputs read": setup_inputs_read,
    "sk uniform": setup_sk_uniform,
    "OpenVINO": setup_openvino,
    "PyTorch": setup_torch,
    "ONNX Runtime": setup_ort,
    "NumPy": setup_numpy,
}
PEER_MODULES = {
    "OpenVINO": ["openvino"],
    "PyTorch": ["torch"],
    "ONNX Runtime": ["onnxruntime", "onnx"],
    "NumPy": ["numpy"],
}
# Peers whose result for duplicate targets without a reduction is documented as undefined.
UNORDERED_DUPLICATES = {"OpenVINO", "PyTorch", "ONNX Runtime"}


def parse_peers(text: str) -> list[str] | None:
    """--peers: None for all peers (empty text), [] for "none", else the peers named
    (case-insensitive, in PEERS order). Raises ValueError on a name that is no peer."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if not names:
        return None
    if names == ["none"]:
        return []
    unknown = sorted(set(names) - {p.lower() for p in PEERS})
    if unknown:
        raise ValueError(f"no such peer: {', '.join(unknown)} (peers: {', '.join(PEERS)}, none)")
    return [p for p in PEERS if p.lower() in names]


def available_peers(wanted: list[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """The peers of `wanted` (None: all) that import, and why the others do not. A peer that
    is not wanted is not imported: an A/B run with --peers none loads no other runtime."""
    found, missing = [], {}
    for peer, modules in PEER_MODULES.items():
        if wanted is not None and peer not in wanted:
            continue
        try:
            for m in modules:
                __import__(m)
            found.append(peer)
        except ImportError as e:
            missing[peer] = f"not installed ({e.name})"
    return found, missing


# --- checks --------------------------------------------------------------------------------


def check_output(w: Workload, c: Case, impl: str, ref: np.ndarray, got: np.ndarray) -> str:
    """How `got` compares with scatterkit's `ref`: '=', '≈ …', '= off dups …' or 'MISMATCH …'."""
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"MISMATCH: {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}"
    equal = (got == ref) | (np.isnan(got) & np.isnan(ref))
    if equal.all():
        return "="
    if w.reduction in ("sum", "mean"):  # float addition order may differ
        a, b = got.astype(np.float64), ref.astype(np.float64)
        rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), ATOL[w.dtype])))
        if np.allclose(a, b, rtol=RTOL[w.dtype], atol=ATOL[w.dtype]):
            return f"≈ (max rel diff {rel:.1e})"
        return f"MISMATCH: max rel diff {rel:.1e}"
    differ = ~equal
    if w.reduction == "none" and c.dup_mask is not None:
        off_dups = differ & ~c.dup_mask
        if not off_dups.any():
            why = "undefined order" if impl in UNORDERED_DUPLICATES else "order differs"
            return f"= off dups ({int(differ.sum())} dup elements differ: {why})"
        differ = off_dups
    first = tuple(int(i) for i in np.argwhere(differ)[0])
    return (
        f"MISMATCH: {int(differ.sum())} elements differ, first at {first}: "
        f"{got[first]!r} vs scatterkit {ref[first]!r}"
    )


# --- measurement ---------------------------------------------------------------------------


@dataclass
class Cell:
    samples: list[float] = field(default_factory=list)
    note: str = ""  # 'n/a' reason, or where the number comes from
    check: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


def failure_note(e: Exception) -> str:
    """A one-line reason from a peer's exception (ORT's is after 'Status Message:')."""
    text = str(e).split("Status Message:", 1)[-1].strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first[:150]}"


def measure_block(
    w: Workload,
    c: Case,
    threads: int,
    impls: list[str],
    cells: dict[str, Cell],
    ref: dict[str, np.ndarray],
    repeats: int,
    budget: float,
) -> None:
    """Warm up, check and time `impls` interleaved; adds samples to `cells`."""
    runners: dict[str, Callable] = {}
    quota: dict[str, int] = {}
    for impl in impls:
        cell = cells.setdefault(impl, Cell())
        try:
            runner = SETUP[impl](w, c, threads)
        except Exception as e:  # a peer that cannot build this op
            runner = NotAvailable(failure_note(e))
        if isinstance(runner, str):
            cell.note = str(runner)
            continue
        t0 = time.perf_counter()
        try:
            out = runner()
        except Exception as e:  # e.g. ORT has no float16 ScatterElements add
            cell.note = failure_note(e)
            continue
        warm = time.perf_counter() - t0
        got = np.array(out, copy=True)
        del out
        if c.fingerprint() != c.pristine:
            cell.note = "MUTATED its inputs"
            c.pristine = c.fingerprint()
        if impl == reference_impl(w):
            ref["scatterkit"] = got
            cell.check = "reference"
        elif impl not in UNCHECKED and not cell.check:
            base = ref.get("scatterkit")
            cell.check = "?" if base is None else check_output(w, c, impl, base, got)
        del got
        runners[impl] = runner
        quota[impl] = max(3, min(repeats, int(budget / max(warm, 1e-9))))
    names = list(runners)
    gc.collect()
    gc.disable()
    try:
        for r in range(max(quota.values(), default=0)):
            order = names[r % len(names) :] + names[: r % len(names)]
            for impl in order:
                if r >= quota[impl]:
                    continue
                t0 = time.perf_counter()
                out = runners[impl]()
                t1 = time.perf_counter()
                del out
                cells[impl].samples.append(t1 - t0)
    finally:
        gc.enable()
    runners.clear()
    gc.collect()


def reference_impl(w: Workload) -> str:
    """The scatterkit row every output is checked against, and the row's scatterkit time:
    `scatterkit out=` where every implementation writes into a preallocated output."""
    return "scatterkit out=" if w.preallocated else "scatterkit"


def set_threads(n: int, peers: list[str]) -> None:
    sk.set_num_threads(n)
    if BASELINE is not None:  # its own copy of the thread setting
        BASELINE.set_num_threads(n)
    if "PyTorch" in peers:
        import torch

        torch.set_num_threads(n)


def run_workload(w, c, threads, peers, repeats, budget, sk_reference) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    ref: dict[str, np.ndarray] = {}
    own = ["floor", "scatterkit", "scatterkit out="] + (["scatterkit inexact"] if w.exact else [])
    if w.preallocated:  # scatterkit out= only: a new array per call is nobody's formulation here
        own.remove("scatterkit")
    if BASELINE is not None:
        own.append("baseline")
    if w.group == "H":
        own += ["bare loop", "inputs read"] + (["sk uniform"] if w.skewed else [])
    serial = c.data.nbytes + c.updates.nbytes > SERIAL_PEER_BYTES
    if serial:  # one peer at a time, each interleaved with the floor and scatterkit
        for peer in peers or [None]:
            block = own + ([peer] if peer else [])
            measure_block(w, c, threads, block, cells, ref, repeats, budget)
            gc.collect()
    else:
        measure_block(w, c, threads, own + peers, cells, ref, repeats, budget)
    # scatterkit's promise: the same bits at every thread count.
    mine = ref.get("scatterkit")
    if mine is not None:
        first = sk_reference.setdefault(w.name, (threads, mine))
        if first[0] != threads:
            same = np.array_equal(first[1], mine, equal_nan=True)
            cells[reference_impl(w)].check = (
                f"reference; same bits as at {first[0]} thread(s)"
                if same
                else f"MISMATCH: other bits than at {first[0]} thread(s)"
            )
    if serial:
        for peer in peers:
            cell = cells[peer]
            cell.note = "; ".join(s for s in (cell.note, "peers run one at a time") if s)
    return cells


# --- reporting -----------------------------------------------------------------------------


def fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["| " + " | ".join(h.ljust(n) for h, n in zip(headers, widths)) + " |"]
    lines.append("| " + " | ".join("-" * n for n in widths) + " |")
    lines += ["| " + " | ".join(c.ljust(n) for c, n in zip(r, widths)) + " |" for r in rows]
    return "\n".join(lines)


@dataclass
class Row:
    workload: Workload
    threads: int
    cells: dict[str, Cell]
    traffic: int

    def median(self, impl: str) -> float | None:
        cell = self.cells.get(impl)
        return cell.median if cell else None

    @property
    def sk_impl(self) -> str:
        """The scatterkit row this row's ratios use (reference_impl)."""
        return reference_impl(self.workload)

    def best_peer(self) -> tuple[str | None, float | None]:
        times = {p: t for p in PEERS if (t := self.median(p)) is not None}
        if not times:
            return None, None
        name = min(times, key=times.__getitem__)
        return name, times[name]


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a / b


def peer_cells(row: Row) -> list[str]:
    """Each peer's median in ms, marked † where the peer ran on one thread only."""
    cells = []
    for p in PEERS:
        cell = row.cells.get(p)
        text = fmt_ms(cell.median if cell else None)
        if cell and cell.note.startswith("1 thread"):
            text += " †"
        cells.append(text)
    return cells


def summary_table(rows: list[Row]) -> str:
    headers = ["workload", "thr", "floor ms", "sk ms", "sk out= ms", "sk GB/s", "sk/floor"]
    headers += ["out=/floor", "sk/best peer", "best peer", *(f"{p} ms" for p in PEERS)]
    out = []
    for row in rows:
        sk_t, floor = row.median(row.sk_impl), row.median("floor")
        best_name, best = row.best_peer()
        peer_ms = peer_cells(row)
        out.append(
            [
                row.workload.name,
                str(row.threads),
                fmt_ms(floor),
                fmt_ms(row.median("scatterkit")),
                fmt_ms(row.median("scatterkit out=")),
                "n/a" if sk_t is None else f"{row.traffic / sk_t / 1e9:.2f}",
                fmt_ratio(ratio(sk_t, floor)),
                fmt_ratio(ratio(row.median("scatterkit out="), floor)),
                fmt_ratio(ratio(sk_t, best)),
                best_name or "n/a",
                *peer_ms,
            ]
        )
    return markdown_table(headers, out)


def detail_table(rows: list[Row]) -> str:
    headers = ["workload", "thr", "implementation", "ms", "GB/s", "x floor", "x best peer"]
    headers += ["n", "check / note"]
    out = []
    for row in rows:
        floor = row.median("floor")
        _, best = row.best_peer()
        for impl in IMPLS:
            cell = row.cells.get(impl)
            if cell is None:
                continue
            t = cell.median
            text = "; ".join(s for s in (cell.check, cell.note) if s)
            out.append(
                [
                    row.workload.name,
                    str(row.threads),
                    impl,
                    fmt_ms(t),
                    "n/a" if t is None else f"{row.traffic / t / 1e9:.2f}",
                    fmt_ratio(ratio(t, floor)),
                    fmt_ratio(ratio(t, best)) if impl != "floor" else "",
                    str(len(cell.samples)),
                    text,
                ]
            )
    return markdown_table(headers, out)


def exact_table(rows: list[Row]) -> str:
    """Rows of exact workloads: what exact=True costs next to exact=False and to the peers.

    `exact/inexact` compares with scatterkit's own exact=False call, timed in the same rounds;
    `exact/best peer` with the fastest peer's usual (inexact) sum at the same thread count.
    """
    headers = ["workload", "thr", "sk exact ms", "sk inexact ms", "exact/inexact"]
    headers += ["best peer ms", "exact/best peer", "best peer"]
    out = []
    for row in rows:
        if not row.workload.exact:
            continue
        exact, inexact = row.median("scatterkit"), row.median("scatterkit inexact")
        best_name, best = row.best_peer()
        out.append(
            [
                row.workload.name,
                str(row.threads),
                fmt_ms(exact),
                fmt_ms(inexact),
                fmt_ratio(ratio(exact, inexact)),
                fmt_ms(best),
                fmt_ratio(ratio(exact, best)),
                best_name or "n/a",
            ]
        )
    return markdown_table(headers, out) if out else ""


def last_level_cache_bytes() -> int | None:
    """The size of cpu0's largest data or unified cache (sysfs), None when unknown."""
    best = None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            size = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
        best = size if best is None else max(best, size)
    return best


def histogram_table(rows: list[Row], llc: int | None = None) -> str:
    """Family H: scatterkit (`out=`) against the fastest peer per row, and each skewed row
    against scatterkit's own time on the uniform indices of the same size, reduction, index
    type and thread count, timed in the same rounds (`sk uniform`). `target` is issue 33's
    bound on sk/best peer: 0.5 for tables larger than the last-level cache (`llc` bytes), else
    0.8, and `target ms` the time it allows; `skew target` is 1.2. `bare loop ms` is the
    serial loop in C (bare_loop.py) in the same rounds: a `target ms` below it asks a fold in
    C order to beat that loop; `read ms` is one thread reading the indices and updates: a
    `target ms` below it asks one thread to fold faster than memory lets it read them."""
    hist = [r for r in rows if r.workload.group == "H"]
    if not hist:
        return ""

    headers = ["bins", "red", "index", "indices", "thr", "memcpy ms", "sk out= ms"]
    headers += ["best peer ms", "best peer", "sk/best peer", "target", "met", "target ms"]
    headers += ["bare loop ms", "sk/bare loop", "read ms", "skewed/uniform"]
    headers += [f"{p} ms" for p in PEERS]
    out = []
    for row in hist:
        w = row.workload
        sk_t = row.median(row.sk_impl)
        best_name, best = row.best_peer()
        r = ratio(sk_t, best)
        bare = row.median("bare loop")
        target = 0.5 if llc is not None and w.bins * np.dtype(w.dtype).itemsize > llc else 0.8
        skew = ""
        if w.skewed:
            own = ratio(sk_t, row.median("sk uniform"))
            skew = fmt_ratio(own) + ("" if own is None or own <= 1.2 else " (>1.2)")
        peer_ms = peer_cells(row)
        out.append(
            [
                f"{w.bins:,}",
                w.reduction,
                "i64" if w.index_dtype == "int64" else "i32",
                "skewed" if w.skewed else "uniform",
                str(row.threads),
                fmt_ms(row.median("floor")),
                fmt_ms(sk_t),
                fmt_ms(best),
                best_name or "n/a",
                fmt_ratio(r),
                f"{target:g}",
                "n/a" if r is None else ("yes" if r <= target else "no"),
                fmt_ms(None if best is None else target * best),
                fmt_ms(bare),
                fmt_ratio(ratio(sk_t, bare)),
                fmt_ms(row.median("inputs read")),
                skew,
                *peer_ms,
            ]
        )
    return markdown_table(headers, out)


def geomean(values: list[float]) -> float | None:
    """The geometric mean of positive ratios; None for none."""
    return statistics.geometric_mean(values) if values else None


def baseline_table(rows: list[Row]) -> str:
    """scatterkit against the build under --baseline, timed in the same rounds.

    Per workload and thread count both medians and `sk/baseline` (below 1: this build is
    faster), then the geometric mean of those ratios, overall and per thread count. Empty
    without --baseline.
    """
    headers = ["workload", "thr", "sk ms", "baseline ms", "sk/baseline", "baseline check"]
    out = []
    ratios: dict[int, list[float]] = {}
    for row in rows:
        cell = row.cells.get("baseline")
        if cell is None:
            continue
        sk_t, base = row.median(row.sk_impl), cell.median
        r = ratio(sk_t, base)
        if r is not None:
            ratios.setdefault(row.threads, []).append(r)
        out.append(
            [
                row.workload.name,
                str(row.threads),
                fmt_ms(sk_t),
                fmt_ms(base),
                fmt_ratio(r),
                "; ".join(s for s in (cell.check, cell.note) if s),
            ]
        )
    if not out:
        return ""
    every = [r for rs in ratios.values() for r in rs]
    mean = f"Geometric mean of sk/baseline: {fmt_ratio(geomean(every))} over {len(every)} rows"
    if len(ratios) > 1:
        per_thread = (f"{t} thread(s): {fmt_ratio(geomean(v))}" for t, v in sorted(ratios.items()))
        mean += f" ({', '.join(per_thread)})"
    return markdown_table(headers, out) + "\n\n" + mean + "."


def problems(rows: list[Row]) -> list[str]:
    found = []
    for row in rows:
        for impl, cell in row.cells.items():
            if "MISMATCH" in cell.check or "MUTATED" in cell.note:
                what = "; ".join(s for s in (cell.check, cell.note) if s)
                found.append(f"{row.workload.name}, {row.threads} thread(s), {impl}: {what}")
    return found


def in_place_speedups(rows: list[Row]) -> list[str]:
    lines = []
    for row in rows:
        if not row.workload.in_place:
            continue
        base = row.workload.name.replace(" in-place", "")
        for other in rows:
            if other.workload.name == base and other.threads == row.threads:
                s = ratio(other.median("scatterkit"), row.median("scatterkit"))
                if s is not None:
                    lines.append(f"{base}, {row.threads} thread(s): in place {s:.1f}x faster")
    return lines


def package_versions() -> dict[str, str]:
    names = ["scatterkit", "numpy", "torch", "openvino", "onnxruntime", "onnx", "matplotlib"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@functools.cache
def source_revision() -> str:
    """The commit of the checkout this script is in, '+' if it has uncommitted changes
    (asked once, when the run starts: the run itself writes RESULTS.md and the chart)."""
    try:
        git = ["git", "-C", str(HERE)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_info() -> dict[str, str]:
    info = {"cpu": platform.processor() or "?", "logical cpus": str(os.cpu_count())}
    try:
        # The first processor's block, "key : value" per line.
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
        cpu = {
            key.strip(): value.strip()
            for key, sep, value in (ln.partition(":") for ln in first.splitlines())
            if sep
        }
        info["cpu"] = cpu.get("model name", info["cpu"])
        # A virtual machine may name only the brand: family and model tell the core.
        if "cpu family" in cpu or "model" in cpu:
            info["cpu"] += f" (family {cpu.get('cpu family', '?')}, model {cpu.get('model', '?')})"
        flags = cpu.get("flags", "").split()
        simd = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
        info["simd"] = ", ".join(simd) or "none of avx2/avx512"
    except OSError:
        pass
    caches = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = (
                (index / name).read_text().strip() for name in ("level", "type", "size")
            )
        except OSError:
            continue
        if kind != "Instruction":
            caches.append(f"L{level}{'d' if kind == 'Data' else ''} {size}")
    if caches:
        info["caches"] = ", ".join(caches)
    try:
        mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1]
        info["memory"] = f"{int(mem) / 2**20:.1f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    info["os"] = f"{platform.system()} {platform.release()}"
    return info


def plot(rows: list[Row], threads: list[int], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no chart"
    every = [i for i in IMPLS if i != "floor"]
    palette = ["#1b7837", "#7fbf7b", "#a6dba0", "#b2182b"]  # scatterkit's rows, the baseline
    palette += ["#4d4d4d", "#bababa", "#d9f0d3"]  # the bare loop, the inputs read, sk uniform
    palette += ["#762a83", "#e08214", "#2166ac", "#999999"]  # the peers
    colors = dict(zip(every, palette))
    # Only what ran (the baseline, say, runs with --baseline only), each in its own color.
    impls = [i for i in every if any(r.median(i) is not None for r in rows)]
    fig, axes = plt.subplots(len(threads), 1, figsize=(14, 4.2 * len(threads)), squeeze=False)
    for ax, t in zip(axes[:, 0], threads):
        sel = [r for r in rows if r.threads == t]
        width = 0.8 / len(impls)
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for x, row in enumerate(sel):
                v = ratio(row.median(impl), row.median("floor"))
                if v is not None:
                    xs.append(x + (k - (len(impls) - 1) / 2) * width)
                    ys.append(v)
            ax.bar(xs, ys, width, label=impl, color=colors[impl])
        ax.axhline(1.0, color="black", lw=0.8)
        ax.axhline(1.15, color="black", lw=0.6, ls="--")
        ax.set_yscale("log")
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels([r.workload.name for r in sel], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("time / memcpy floor (log)")
        ax.set_title(
            f"{t} thread(s): median time relative to np.copyto(out, data); lower is better"
        )
        ax.grid(axis="y", which="both", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, ncol=len(impls), fontsize=9, loc="upper center")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return ""


# Sections of the results file written by hand (notes on runs of their own): a run that
# rewrites the file keeps them, at its end.
KEPT_SECTIONS = ("## Histograms at every table size",)


def kept_sections(text: str) -> str:
    """The KEPT_SECTIONS of a results file: each from its heading to the next '## ' heading
    (or the end), in file order; '' when there is none."""
    kept: list[str] = []
    keeping = False
    for line in text.splitlines():
        if line.startswith("## "):
            keeping = any(line.startswith(h) for h in KEPT_SECTIONS)
        if keeping:
            kept.append(line)
    return "\n".join(kept).strip("\n")


def write_results(path: Path, rows, args, peers, missing, started, elapsed, load, rss) -> str:
    versions = package_versions()
    info = machine_info()
    command = "python bench/compare.py " + " ".join(sys.argv[1:])
    lines = [
        "# scatterkit vs peers: results",
        "",
        f"Generated by `{command.strip()}` on {started} in {elapsed / 60:.1f} min "
        f"(up to {args.repeats} interleaved repeats, medians; see bench/README.md).",
        "",
        "## Machine",
        "",
        f"- CPU: {info.get('cpu')} ({info.get('logical cpus')} logical CPUs; {info.get('simd')})"
        + (f"; caches of cpu0: {info['caches']}" if "caches" in info else ""),
        f"- memory: {info.get('memory', '?')}; {info.get('os')}",
        f"- load average (1 min) at start / end: {load[0]:.2f} / {load[1]:.2f}"
        " (a shared machine: other work ran during the measurements)",
        f"- peak resident memory of this run: {rss / 2**30:.1f} GiB",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"- scatterkit imported from {SK_BUILD}; this checkout: {source_revision()}",
        *(
            [
                f"- baseline (`--baseline`, imported as `{BASELINE_NAME}`, version "
                f"{BASELINE.__version__}) from {BASELINE_BUILD}"
            ]
            if BASELINE is not None
            else []
        ),
        f"- OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} (scatterkit and "
        "PyTorch's OpenMP); ONNX Runtime spinning off; OpenVINO CPU pinning off",
        "",
    ]
    if missing:
        lines += ["Skipped: " + "; ".join(f"{p}: {why}" for p, why in missing.items()), ""]
    bad = problems(rows)
    lines += [
        "## Summary",
        "",
        "`sk` is scatterkit called as a user writes it (a new array per call; in place:",
        "`out=data`); `sk out=` writes into a preallocated array, as the floor",
        "(`np.copyto(out, data)`) does. `sk/floor`, `out=/floor` and `sk/best peer` are ratios",
        "of medians from the same run (lower is better). † NumPy is single-threaded: its",
        "1-thread number is repeated.",
        "",
        summary_table(rows),
        "",
    ]
    speedups = in_place_speedups(rows)
    if speedups:
        lines += ["In place vs out of place (scatterkit): " + "; ".join(speedups) + ".", ""]
    versus = baseline_table(rows)
    if versus:
        lines += [
            "## scatterkit / baseline",
            "",
            "The same call as `sk` through the build under `--baseline`, in the same rounds;",
            "`sk/baseline` is the ratio of the medians (below 1: this build is faster).",
            "",
            versus,
            "",
        ]
    exact = exact_table(rows)
    if exact:
        lines += [
            "## Exact sums",
            "",
            "scatterkit with `exact=True` (the real sum rounded once, the same bits at every",
            "thread count) against the same call with `exact=False` (`scatterkit inexact`, timed",
            "in the same rounds) and against the fastest peer's usual sum.",
            "",
            exact,
            "",
        ]
    hist = histogram_table(rows, last_level_cache_bytes())
    if hist:
        lines += [
            "## Histograms (H)",
            "",
            "Family H (issue 33): every implementation writes into a preallocated output",
            "(scatterkit `out=`, PyTorch and NumPy copy data into theirs and run in place, ONNX",
            "Runtime through IOBinding, OpenVINO into its reused output); `memcpy` is the floor,",
            "a copy of the table. `sk/best peer` is scatterkit's median over the fastest peer's",
            "from the same rounds; `target` is issue 33's bound (0.5 for tables larger than the",
            "last-level cache, else 0.8) and `target ms` the time it allows; `bare loop` is",
            "the serial loop `out[idx[i]] += upd[i]` (or max) in C, one thread, no index check",
            "(bench/bare_loop.py), after the same copy, timed in the same rounds: a `target ms`",
            "below it asks a fold in C order to beat that loop; `read` is one thread reading",
            "the indices and updates and nothing else: a `target ms` below it asks one thread to",
            "fold faster than memory lets it read them. `skewed/uniform` is",
            "scatterkit's skewed time over its time on the uniform row's indices, timed in the",
            "same rounds (`sk uniform`; target 1.2).",
            "",
            hist,
            "",
        ]
    lines += [
        "## Correctness",
        "",
        "Every implementation's output (from its warm-up call) is compared with scatterkit's "
        "at the same thread count: `=` bitwise equal; `≈` within "
        f"rtol {RTOL['float32']:g} (float32) / {RTOL['float16']:g} (float16) for sum and "
        "mean, whose float additions a peer may order differently; `= off dups` equal "
        "everywhere but elements hit by several updates without a reduction, where "
        "OpenVINO, PyTorch and ONNX Runtime leave the order undefined. For scatterkit itself "
        "the check says whether 2 threads gave the same bits as 1 thread.",
        "",
    ]
    lines += ["Disagreements:", ""] + [f"- {p}" for p in bad] if bad else ["No disagreement found."]
    lines += ["", "## All implementations", "", detail_table(rows), ""]
    kept = kept_sections(path.read_text(encoding="utf-8")) if path.is_file() else ""
    if kept:
        lines += [kept]
    path.write_text("\n".join(lines) + "\n")
    return "\n".join(lines)


# --- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    global BASELINE, BASELINE_BUILD
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        default="",
        help="e.g. W1,W3 (default: W1-W6); H, the histogram sweep, only when named",
    )
    parser.add_argument(
        "--histogram-bins",
        default="",
        help="table sizes of family H, e.g. 4096,1048576 (default: 4K, 64K, 1M, 16M, 128M; "
        "with --quick: 4K, 64K)",
    )
    parser.add_argument("--threads", default="1,2", help="thread counts (default: 1,2)")
    parser.add_argument("--repeats", type=int, default=25, help="timed repeats (default: 25)")
    parser.add_argument(
        "--budget",
        type=float,
        default=10.0,
        help="seconds per implementation and workload; slow ones get fewer repeats (min 3)",
    )
    parser.add_argument("--quick", action="store_true", help="small shapes: a smoke run")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default: bench/RESULTS.md; with --quick, one in the temp directory, "
        "so that a smoke run never replaces the committed results)",
    )
    parser.add_argument("--png", type=Path, default=None, help="chart (default: next to --out)")
    parser.add_argument(
        "--peers",
        default="",
        help="only these peers, e.g. PyTorch,NumPy, or none (default: all)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time the scatterkit installed in DIR (pip install --target DIR) as "
        "'baseline', beside this one: an A/B of two builds in one process",
    )
    args = parser.parse_args(argv)
    try:
        wanted_peers = parse_peers(args.peers)
    except ValueError as e:
        parser.error(str(e))
    source_revision()
    if args.baseline is not None:
        copy = tempfile.mkdtemp(prefix="scatterkit-baseline-")
        atexit.register(shutil.rmtree, copy, ignore_errors=True)
        try:
            BASELINE, BASELINE_BUILD = load_baseline(args.baseline, Path(copy))
        except ValueError as e:
            parser.error(f"--baseline: {e}")
        print(
            f"baseline: {BASELINE_NAME} {BASELINE.__version__} from {BASELINE_BUILD}; "
            f"scatterkit {sk.__version__} from {SK_BUILD}",
            flush=True,
        )
    if args.out is None:
        args.out = (
            Path(tempfile.gettempdir()) / "scatterkit-bench" / "RESULTS.md"
            if args.quick
            else HERE / "RESULTS.md"
        )
    threads = [int(t) for t in args.threads.split(",") if t]
    groups = {g.strip().upper() for g in args.workloads.split(",") if g.strip()}
    workloads = [w for w in canonical_workloads() if not groups or w.group in groups]
    if "H" in groups:
        bins = HISTOGRAM_QUICK_BINS if args.quick else HISTOGRAM_BINS
        if args.histogram_bins:
            try:
                bins = tuple(int(b) for b in args.histogram_bins.split(",") if b.strip())
            except ValueError:
                parser.error(f"--histogram-bins: not integers: {args.histogram_bins!r}")
            if not bins or min(bins) < 1:
                parser.error(f"--histogram-bins: sizes must be >= 1: {args.histogram_bins!r}")
        workloads += histogram_workloads(bins)
    if not workloads:
        parser.error(f"no workload matches {args.workloads!r}")
    peers, missing = available_peers(wanted_peers)
    for peer, why in missing.items():
        print(f"note: {peer} skipped: {why}", flush=True)

    started = time.strftime("%Y-%m-%d %H:%M")
    t_start, load_start = time.perf_counter(), os.getloadavg()[0]
    rows: list[Row] = []
    sk_reference: dict[str, tuple[int, np.ndarray]] = {}
    numpy_cells: dict[str, Cell] = {}
    case_key, case = None, None
    total = len(workloads) * len(threads)
    step = 0
    for w in workloads:
        key = (w.family, w.dtype, w.index_dtype)
        if key != case_key:
            case = None
            gc.collect()
            case, case_key = make_case(w, args.quick), key
        assert case is not None
        traffic = traffic_bytes(w, case)
        for t in threads:
            step += 1
            elapsed = time.perf_counter() - t_start
            print(
                f"[{step}/{total}] {w.name:<16} threads={t}  ({elapsed:.0f} s elapsed)",
                end="",
                flush=True,
            )
            set_threads(t, peers)
            # NumPy is single-threaded: measured at the first thread count only.
            run_peers = [p for p in peers if p != "NumPy" or w.name not in numpy_cells]
            cells = run_workload(w, case, t, run_peers, args.repeats, args.budget, sk_reference)
            if "NumPy" in peers:
                if "NumPy" in cells:
                    numpy_cells[w.name] = cells["NumPy"]
                else:
                    first = numpy_cells[w.name]
                    cells["NumPy"] = Cell(first.samples, f"1 thread: {first.note}".strip(": "))
                    cells["NumPy"].check = first.check
            row = Row(w, t, cells, traffic)
            rows.append(row)
            best_name, best = row.best_peer()
            sk_t, floor = row.median(row.sk_impl), row.median("floor")
            versus = (
                f", sk/baseline {fmt_ratio(ratio(sk_t, row.median('baseline')))}"
                if BASELINE is not None
                else ""
            )
            print(
                f"  sk {fmt_ms(sk_t)} ms, floor {fmt_ms(floor)} ms, "
                f"sk/floor {fmt_ratio(ratio(sk_t, floor))}, "
                f"sk/best peer {fmt_ratio(ratio(sk_t, best))} ({best_name or '-'}){versus}",
                flush=True,
            )
    elapsed = time.perf_counter() - t_start
    load_end = os.getloadavg()[0]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    args.out.parent.mkdir(parents=True, exist_ok=True)
    png = args.png or args.out.with_name("results.png")
    note = plot(rows, threads, png)
    write_results(
        args.out, rows, args, peers, missing, started, elapsed, (load_start, load_end), rss
    )
    print()
    print(summary_table(rows))
    versus = baseline_table(rows)
    if versus:
        print()
        print("scatterkit / baseline (same rounds; below 1: this build is faster)")
        print(versus)
    print()
    print(detail_table(rows))
    exact = exact_table(rows)
    if exact:
        print()
        print(exact)
    hist = histogram_table(rows, last_level_cache_bytes())
    if hist:
        print()
        print("Histograms (H): scatterkit out= / fastest peer")
        print(hist)
    bad = problems(rows)
    print()
    print("Disagreements:\n" + "\n".join(f"  {p}" for p in bad) if bad else "No disagreement.")
    print(f"wrote {args.out}" + (f" and {png}" if not note else f" ({note})"))
    print(f"{elapsed / 60:.1f} min, peak RSS {rss / 2**30:.1f} GiB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
