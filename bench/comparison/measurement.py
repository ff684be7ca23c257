"""Timing: one workload at one thread count, its implementations warmed up, checked and timed
in interleaved rounds; the results as cells (one per implementation) in rows."""

from __future__ import annotations

import gc
import resource
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import scatterkit as sk

from . import baseline
from .checks import check_output
from .implementations import UNCHECKED, NotAvailable, reference_impl
from .peers import PEERS
from .peers import SETUP as PEER_SETUP
from .scatterkit_rows import SETUP as OWN_SETUP
from .workloads import Case, Workload

# Above this many input bytes, peers run one at a time (each interleaved with the floor and
# scatterkit) and are freed in between: their copies of W1's 1.5 GB updates add up.
SERIAL_PEER_BYTES = 1 << 30
# Every row's setup, by its name in IMPLS.
SETUP: dict[str, Callable] = {**OWN_SETUP, **PEER_SETUP}


@dataclass
class Cell:
    """One implementation's timings on one row (seconds), and what its check or setup said."""

    samples: list[float] = field(default_factory=list)
    note: str = ""  # 'n/a' reason, or where the number comes from
    check: str = ""
    # The process's CPU time (every thread's) over each sample's wall time: how many CPUs the
    # call ran on, which a 2-thread call on a shared 2-CPU machine does not always get.
    cpus: list[float] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def median_cpus(self) -> float | None:
        return statistics.median(self.cpus) if self.cpus else None


def cpu_seconds() -> float:
    """This process's CPU time so far, user and system, all threads."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


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
                c0, t0 = cpu_seconds(), time.perf_counter()
                out = runners[impl]()
                t1, c1 = time.perf_counter(), cpu_seconds()
                del out
                cells[impl].samples.append(t1 - t0)
                cells[impl].cpus.append((c1 - c0) / max(t1 - t0, 1e-9))
    finally:
        gc.enable()
    runners.clear()
    gc.collect()


def set_threads(n: int, peers: list[str]) -> None:
    sk.set_num_threads(n)
    if baseline.BASELINE is not None:  # its own copy of the thread setting
        baseline.BASELINE.set_num_threads(n)
    if "PyTorch" in peers:
        import torch

        torch.set_num_threads(n)


def run_workload(w, c, threads, peers, repeats, budget, sk_reference) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    ref: dict[str, np.ndarray] = {}
    own = ["floor", "scatterkit", "scatterkit out="] + (["scatterkit inexact"] if w.exact else [])
    if w.preallocated:  # scatterkit out= only: a new array per call is nobody's formulation here
        own.remove("scatterkit")
    if baseline.BASELINE is not None:
        own.append("baseline")
    if w.group == "H":  # exact rows without the skew ratio's call: issue 33's, not 48's
        own += ["bare loop", "inputs read"] + (["sk uniform"] if w.skewed and not w.exact else [])
    elif w.exact:  # issue 48's read floor
        own.append("inputs read")
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


@dataclass
class Row:
    """One workload at one thread count: a cell per implementation, and the traffic model's
    bytes (traffic_bytes) behind its GB/s."""

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
