"""A run: every workload at every thread count, in order, one progress line per row."""

from __future__ import annotations

import gc
import os
import resource
import time
from dataclasses import dataclass

import numpy as np

from . import baseline
from .measurement import Cell, Row, run_workload, set_threads
from .tables import fmt_ms, fmt_ratio, ratio
from .workloads import Case, Workload, make_case, traffic_bytes


@dataclass
class Run:
    """The rows of a run and what the results file says about the run itself."""

    rows: list[Row]
    started: str  # local time at the start, "%Y-%m-%d %H:%M"
    elapsed: float  # seconds
    load: tuple[float, float]  # the 1-minute load average at the start and at the end
    rss: int  # the process's peak resident memory, bytes


def run_all(
    workloads: list[Workload],
    threads: list[int],
    peers: list[str],
    repeats: int,
    budget: float,
    quick: bool,
) -> Run:
    """Measures each workload at each thread count (run_workload), the arrays of a family made
    once; NumPy, single-threaded, at the first thread count only, its cell repeated at the
    others."""
    started = time.strftime("%Y-%m-%d %H:%M")
    t_start, load_start = time.perf_counter(), os.getloadavg()[0]
    rows: list[Row] = []
    sk_reference: dict[str, tuple[int, np.ndarray]] = {}
    numpy_cells: dict[str, Cell] = {}
    case_key: tuple[str, str, str] | None = None
    case: Case | None = None
    total = len(workloads) * len(threads)
    step = 0
    for w in workloads:
        key = (w.family, w.dtype, w.index_dtype)
        if key != case_key:
            case = None
            gc.collect()
            case, case_key = make_case(w, quick), key
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
            cells = run_workload(w, case, t, run_peers, repeats, budget, sk_reference)
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
                if baseline.BASELINE is not None
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
    return Run(rows, started, elapsed, (load_start, load_end), rss)
