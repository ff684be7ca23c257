"""The rows that are not peers: the memcpy floor, scatterkit's calls, the build under
--baseline, and family H's references (the bare serial loop, the inputs read, scatterkit on
the uniform row's indices)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import bare_loop  # bench/bare_loop.py, beside this package
import numpy as np

import scatterkit as sk

from . import baseline
from .implementations import NotAvailable
from .workloads import Case, Workload


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
    if baseline.BASELINE is None:
        return NotAvailable("no --baseline")
    return setup_scatterkit(w, c, threads, lib=baseline.BASELINE)


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
    """Family H and exact rows of float32 ScatterElements (issue 48's read floor): one thread
    reading the indices and updates once, nothing else, whatever `threads` says: what memory
    allows a fold in C order. Returns the checksum, which no check compares."""
    if w.group != "H" and not (w.exact and w.op == "elements" and w.dtype == "float32"):
        return NotAvailable("family H and float32 ScatterElements exact rows only")
    lib = bare_loop.load()
    if isinstance(lib, str):
        return NotAvailable(lib)
    idx, upd = c.index_array.reshape(-1), c.updates.reshape(-1)  # contiguous: views
    return lambda: np.uint64(bare_loop.read(idx, upd))


def setup_scatterkit_out(w: Workload, c: Case, threads: int):
    """Into a preallocated output, as the floor writes into one."""
    if w.in_place:
        return NotAvailable("in place: the scatterkit row")
    out = np.zeros_like(c.data)
    return lambda: sk_call(w, c, c.data, out)


def setup_scatterkit_inexact(w: Workload, c: Case, threads: int):
    """An exact workload's call with exact=False: what exact=True costs, in the same rounds
    (into a preallocated output where the row's scatterkit call writes into one)."""
    if not w.exact:
        return NotAvailable("rows of exact workloads only")
    dst = np.zeros_like(c.data) if w.preallocated else None
    return lambda: sk_call(w, c, c.data, dst, exact=False)


SETUP: dict[str, Callable] = {
    "floor": setup_floor,
    "scatterkit": setup_scatterkit,
    "scatterkit out=": setup_scatterkit_out,
    "scatterkit inexact": setup_scatterkit_inexact,
    "baseline": setup_baseline,
    "bare loop": setup_bare_loop,
    "inputs read": setup_inputs_read,
    "sk uniform": setup_sk_uniform,
}
