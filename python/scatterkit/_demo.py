"""A command-line tour of the operations on realistic data, checked against NumPy.

Each step builds its inputs from a fixed seed, runs one operation, checks the
result with an independent NumPy formulation and reports the time taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import _api as sk


def _event_histogram(rng: np.random.Generator, scale: int) -> tuple[str, bool]:
    # Events (entity, value) folded into per-entity sums and maxima.
    entities, events = 1000 * scale, 200_000 * scale
    who = rng.integers(0, entities, events)
    value = rng.random(events)
    sums = sk.scatter_elements_update(np.zeros(entities), who, value, 0, reduction="sum")
    maxima = sk.scatter_elements_update(
        np.zeros(entities), who, value, 0, reduction="max", use_init_val=False
    )
    ref_sums = np.zeros(entities)
    np.add.at(ref_sums, who, value)
    ref_max = np.full(entities, -np.inf)
    np.maximum.at(ref_max, who, value)
    ok = np.array_equal(sums, ref_sums) and np.array_equal(
        maxima[np.isfinite(ref_max)], ref_max[np.isfinite(ref_max)]
    )
    return f"{events:,} events -> {entities:,} entity sums and maxima", ok


def _patch_grid(rng: np.random.Generator, scale: int) -> tuple[str, bool]:
    # Rows of a (256, 256, 8) grid replaced at random cells (last write wins).
    grid = rng.random((256 * scale, 256, 8), dtype=np.float32)
    cells = np.stack([rng.integers(0, 256 * scale, 5000), rng.integers(0, 256, 5000)], axis=1)
    patches = rng.random((5000, 8), dtype=np.float32)
    result = sk.scatter_nd_update(grid, cells, patches)
    expected = grid.copy()
    expected[cells[:, 0], cells[:, 1]] = patches  # NumPy: last write wins as well
    return f"{len(cells):,} patches written into a {grid.shape} grid", np.array_equal(
        result, expected
    )


def _frames(rng: np.random.Generator, scale: int) -> tuple[str, bool]:
    # Whole frames of a video-like tensor replaced along axis 1.
    video = rng.random((4 * scale, 64, 32, 32), dtype=np.float32)
    which = rng.integers(0, 64, 16)
    frames = rng.random((4 * scale, 16, 32, 32), dtype=np.float32)
    result = sk.scatter_update(video, which, frames, axis=1)
    expected = video.copy()
    for j, t in enumerate(which):
        expected[:, t] = frames[:, j]
    return f"{len(which)} frames replaced in a {video.shape} tensor", np.array_equal(
        result, expected
    )


def _windows(rng: np.random.Generator, scale: int) -> tuple[str, bool]:
    # Every other sample of a time series batch overwritten, walking backwards.
    series = rng.random((512 * scale, 4096))
    updates = rng.random((512 * scale, 2048))
    result = sk.slice_scatter(series, updates, -1, -(2**63), -2, 1)
    expected = series.copy()
    expected[:, ::-2] = updates
    return f"a strided window of {updates.shape} written into {series.shape}", np.array_equal(
        result, expected
    )


def _means(rng: np.random.Generator, scale: int) -> tuple[str, bool]:
    # Exact integer means per bucket (floor division), int64 data.
    buckets, n = 100, 100_000 * scale
    where = rng.integers(-buckets, buckets, n)  # negative indices count from the end
    value = rng.integers(-(10**12), 10**12, n)
    mean = sk.scatter_elements_update(
        np.zeros(buckets, np.int64), where, value, 0, reduction="mean", use_init_val=False
    )
    pos = where % buckets
    total = np.zeros(buckets, dtype=object)
    np.add.at(total, pos, value.astype(object))
    count = np.bincount(pos, minlength=buckets)
    ok = all(count[b] == 0 or mean[b] == total[b] // count[b] for b in range(buckets))
    return f"exact int64 means of {n:,} values in {buckets} buckets", ok


STEPS: list[tuple[str, Callable[[np.random.Generator, int], tuple[str, bool]]]] = [
    ("ScatterElementsUpdate-12 sum/max", _event_histogram),
    ("ScatterNDUpdate-3", _patch_grid),
    ("ScatterUpdate-3", _frames),
    ("SliceScatter-15", _windows),
    ("ScatterElementsUpdate-12 mean", _means),
]


def run_demo(scale: int = 1, seed: int = 0) -> int:
    """Runs every step; returns a process exit code (0 when every check passed)."""
    rng = np.random.default_rng(seed)
    print(f"scatterkit demo: {len(STEPS)} steps, {sk.get_num_threads()} threads, scale {scale}")
    failures = 0
    started = time.perf_counter()
    for number, (title, step) in enumerate(STEPS, 1):
        t0 = time.perf_counter()
        what, ok = step(rng, scale)
        failures += not ok
        status = "ok" if ok else "MISMATCH"
        seconds = time.perf_counter() - t0
        print(f"[{number}/{len(STEPS)}] {title:34s} {what} ... {status} ({seconds:.2f}s)")
    total = time.perf_counter() - started
    print(f"summary: {len(STEPS) - failures}/{len(STEPS)} steps match NumPy, {total:.2f}s")
    return 1 if failures else 0
