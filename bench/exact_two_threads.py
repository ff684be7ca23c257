#!/usr/bin/env python3
"""What a 2-thread exact sum gets from the second CPU (issue 48 item 2), on family H's rows.

On a shared 2-CPU machine a 2-thread call often runs on one CPU: other work holds the second.
Per row, in rounds whose order rotates, this times scatterkit's sum with exact=True and
exact=False at 1 and 2 threads (into preallocated outputs, as compare.py's family H), the
read of the inputs (bare_loop.py), PyTorch's scatter_reduce_ at 2 threads and NumPy's
`add.at` (16M bins and more) where installed, and a spin loop (a fixed amount of arithmetic
split between 2 OpenMP threads, no memory). It prints medians of wall time and of the
process's CPU time (all threads) and their ratio, the CPUs the call ran on; the spin loop's
2-thread speedup says how much of a second CPU there was in those rounds.

    python bench/exact_two_threads.py 4096:u:i64,1048576:s:i64,134217728:s:i64 [--rounds 9]

A row is BINS:u|s:i64|i32 (uniform or skewed indices, compare.py's arrays for that row).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

import scatterkit as sk

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bare_loop  # noqa: E402
from comparison.workloads import HISTOGRAM_UPDATES, SEED, histogram_indices  # noqa: E402

SPIN = r"""
#include <stdint.h>
double spin(int64_t n, int threads) {
  double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    double a = 1.0;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) a = a * 1.0000001 + 1e-9;
    total += a;
  }
  return total;
}
"""
SPIN_STEPS = 40_000_000  # about 65 ms on one Zen 4 core


def spin_library() -> ctypes.CDLL:
    """The spin loop, compiled with the system's cc and OpenMP at first use."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise SystemExit(f"no C compiler ({cc})")
    key = hashlib.sha256((SPIN + cc).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"scatterkit-spin-{key}.so"
    if not path.exists():
        with tempfile.TemporaryDirectory() as tmp:
            src, built = Path(tmp) / "spin.c", Path(tmp) / "spin.so"
            src.write_text(SPIN)
            cmd = [cc, "-O2", "-fopenmp", "-shared", "-fPIC", str(src), "-o", str(built)]
            subprocess.run(cmd, check=True)
            os.replace(built, path)
    lib = ctypes.CDLL(str(path))
    lib.spin.restype = ctypes.c_double
    lib.spin.argtypes = [ctypes.c_int64, ctypes.c_int]
    return lib


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def row_calls(bins: int, skewed: bool, index_dtype: str) -> dict[str, Callable[[], object]]:
    """The row's calls by name, on compare.py's arrays for it."""
    rng = np.random.default_rng([SEED, 33, bins, int(skewed)])
    idx = histogram_indices(HISTOGRAM_UPDATES, bins, skewed, rng).astype(index_dtype)
    upd = np.random.default_rng([SEED, 33, 0]).random(HISTOGRAM_UPDATES, dtype=np.float32)
    data = np.zeros(bins, np.float32)

    def scatterkit_call(threads: int, exact: bool) -> Callable[[], object]:
        out = np.zeros_like(data)

        def run() -> object:
            sk.set_num_threads(threads)
            return sk.scatter_elements_update(
                data, idx, upd, 0, reduction="sum", out=out, exact=exact
            )

        return run

    spin = spin_library()
    calls: dict[str, Callable[[], object]] = {
        "exact 1 thr": scatterkit_call(1, True),
        "exact 2 thr": scatterkit_call(2, True),
        "inexact 1 thr": scatterkit_call(1, False),
        "inexact 2 thr": scatterkit_call(2, False),
        "read (1 thr)": lambda: bare_loop.read(idx, upd),
        "spin 1 thr": lambda: spin.spin(SPIN_STEPS, 1),
        "spin 2 thr": lambda: spin.spin(SPIN_STEPS, 2),
    }
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        t_data, t_upd = torch.from_numpy(data), torch.from_numpy(upd)
        t_idx = torch.from_numpy(idx.astype(np.int64))
        t_out = torch.empty_like(t_data)

        def pytorch() -> object:
            torch.set_num_threads(2)
            t_out.copy_(t_data)
            return t_out.scatter_reduce_(0, t_idx, t_upd, "sum", include_self=True)

        calls["PyTorch 2 thr"] = pytorch
    if bins >= 1 << 24:  # the fastest peer on the largest tables in compare.py's runs
        np_out = np.zeros_like(data)

        def numpy_add_at() -> object:
            np.copyto(np_out, data)
            np.add.at(np_out, idx, upd)
            return np_out

        calls["NumPy"] = numpy_add_at
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", help="BINS:u|s:i64|i32, comma-separated")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} at {time.strftime('%H:%M:%S')}", flush=True)
    for spec in args.rows.split(","):
        bins_text, dist, short = spec.split(":")
        index_dtype = {"i64": "int64", "i32": "int32"}[short]
        calls = row_calls(int(bins_text), dist == "s", index_dtype)
        names = list(calls)
        for call in calls.values():
            call()  # warm-up
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpus: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                c0, w0 = cpu_seconds(), time.perf_counter()
                calls[name]()
                w1, c1 = time.perf_counter(), cpu_seconds()
                wall[name].append(w1 - w0)
                cpus[name].append((c1 - c0) / (w1 - w0))
        dist_name = "skewed" if dist == "s" else "uniform"
        print(
            f"\nH {bins_text} sum {short} {dist_name}, {args.rounds} rounds, medians, load "
            f"{os.getloadavg()[0]:.2f}"
        )
        for name in names:
            w, c = statistics.median(wall[name]), statistics.median(cpus[name])
            print(f"  {name:<14} {w * 1e3:8.2f} ms  {c:4.2f} CPUs")
        speedup = statistics.median(wall["spin 1 thr"]) / statistics.median(wall["spin 2 thr"])
        print(f"  spin loop at 2 threads: {speedup:.2f}x one thread", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
