#!/usr/bin/env python3
"""Spark-shaped batches through run_batch: exact=True beside exact=False.

10,000 rows, each 1,000 float32 updates (int64 indices in [0, 96)) into 96 zero bins: one
1-D ScatterElementsUpdate-12 sum (or mean) per row, use_init_val=True, the shape of the
Spark demo's 96 buckets, through `scatterkit._batch.run_batch` as the executors call it
(the threads split the rows). Both settings run on the same arrays in one process,
interleaved (the order alternates every round); medians. bench/README.md, "Exact sums".

    python bench/exact_batch.py                    # 10,000 rows, 1 and 2 threads, 25 repeats
    python bench/exact_batch.py --quick            # 1,000 rows, 5 repeats: a smoke run
    python bench/exact_batch.py --reductions sum --threads 2 --repeats 51
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time

import numpy as np

import scatterkit as sk
from scatterkit._batch import Ragged, run_batch

SEED = 3
BINS, UPDATES = 96, 1_000
OP = "ScatterElementsUpdate-12"


def ragged(values: np.ndarray, rows: int, per_row: int) -> Ragged:
    """`rows` 1-D rows of `per_row` values each, back to back."""
    return Ragged(
        values,
        np.arange(rows + 1, dtype=np.int64) * per_row,
        np.full(rows, per_row, np.int64),
        np.arange(rows + 1, dtype=np.int64),
    )


def make_batch(rows: int) -> tuple[Ragged, Ragged, Ragged]:
    """Data (zero bins), indices and updates (uniform in [0, 1)) of `rows` rows."""
    rng = np.random.default_rng([SEED, 7])
    data = ragged(np.zeros(rows * BINS, np.float32), rows, BINS)
    indices = ragged(rng.integers(0, BINS, rows * UPDATES, dtype=np.int64), rows, UPDATES)
    updates = ragged(rng.random(rows * UPDATES, dtype=np.float32), rows, UPDATES)
    return data, indices, updates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=None, help="rows (default: 10,000)")
    parser.add_argument("--threads", default="1,2", help="thread counts (default: 1,2)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default: 25)")
    parser.add_argument("--reductions", default="sum,mean", help="default: sum,mean")
    parser.add_argument("--quick", action="store_true", help="1,000 rows, 5 repeats")
    args = parser.parse_args(argv)
    rows = args.rows or (1_000 if args.quick else 10_000)
    repeats = args.repeats or (5 if args.quick else 25)
    threads = [int(t) for t in args.threads.split(",") if t]
    reductions = [r.strip() for r in args.reductions.split(",") if r.strip()]

    data, indices, updates = make_batch(rows)
    print(
        f"{rows:,} rows of {UPDATES:,} float32 updates into {BINS} bins, {OP} through "
        f"run_batch; {repeats} interleaved rounds, medians",
        flush=True,
    )
    table = []
    bad = []
    first_exact: dict[str, np.ndarray] = {}
    for red in reductions:
        for t in threads:
            sk.set_num_threads(t)
            runs = {
                exact: functools.partial(
                    run_batch, OP, data, updates, indices, reduction=red, exact=exact
                )
                for exact in (False, True)
            }
            outs = {}
            for exact, run in runs.items():  # warm-up, kept for the checks
                out, errors = run()
                if any(errors):
                    bad.append(f"{red}, {t} thread(s), exact={exact}: a row failed: {errors}")
                outs[exact] = out.copy()
            # Exact: the same bits at every thread count; inexact: close to it.
            same = np.array_equal(first_exact.setdefault(red, outs[True]), outs[True])
            close = np.allclose(outs[False], outs[True], rtol=1e-5, atol=1e-6)
            if not same:
                bad.append(f"{red}, {t} thread(s): exact bits differ from {threads[0]} thread(s)")
            if not close:
                bad.append(f"{red}, {t} thread(s): exact=False is not close to exact=True")
            samples: dict[bool, list[float]] = {False: [], True: []}
            gc.collect()
            gc.disable()
            try:
                for r in range(repeats):
                    for exact in (False, True) if r % 2 == 0 else (True, False):
                        t0 = time.perf_counter()
                        runs[exact]()
                        samples[exact].append(time.perf_counter() - t0)
            finally:
                gc.enable()
            inexact_ms = statistics.median(samples[False]) * 1e3
            exact_ms = statistics.median(samples[True]) * 1e3
            table.append((red, t, inexact_ms, exact_ms, exact_ms / inexact_ms))
            print(
                f"  {red:<4} threads={t}: exact=False {inexact_ms:.3g} ms, "
                f"exact=True {exact_ms:.3g} ms, exact/inexact {exact_ms / inexact_ms:.3f}",
                flush=True,
            )
    print()
    print("| reduction | thr | exact=False ms | exact=True ms | exact/inexact |")
    print("| --- | --- | --- | --- | --- |")
    for red, t, inexact_ms, exact_ms, ratio in table:
        print(f"| {red} | {t} | {inexact_ms:.3g} | {exact_ms:.3g} | {ratio:.3f} |")
    print()
    print("\n".join(bad) if bad else "Checks passed: exact bits equal across thread counts.")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
