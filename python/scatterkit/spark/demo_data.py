"""The demo's dataset: one row per user, with raw events, a map tile and a time series.

Columns (Parquet, written with pyarrow, a few files):

- ``user_id`` bigint
- ``event_bucket`` array<int>: each event's bucket, ``category * 24 + hour`` (4 x 24 = 96)
- ``event_amount`` array<float>: each event's amount (log-normal)
- ``tile`` tensor float[16, 16]: an activity heat map
- ``cells`` tensor int[k, 2] and ``cell_values`` array<float>[k]: fresh readings of k cells
- ``series`` array<float>[720]: 30 days of hourly values; ``latest`` array<float>[24]: the
  newest day, to be written over the series' last 24 hours

A few rows are broken on purpose (an event bucket out of range, a tile whose shape does
not match its values, a missing series): the job must keep them with their messages.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .tensors import _without_rows

CATEGORIES, HOURS = 4, 24
BUCKETS = CATEGORIES * HOURS
TILE = 16
SERIES = 30 * HOURS


@dataclass
class DemoData:
    """Where the dataset went and which rows were broken on purpose (by user id)."""

    path: str
    rows: int
    files: int
    bad_buckets: list[int] = field(default_factory=list)
    bad_tiles: list[int] = field(default_factory=list)
    null_series: list[int] = field(default_factory=list)

    @property
    def bad_rows(self) -> set[int]:
        return set(self.bad_buckets) | set(self.bad_tiles) | set(self.null_series)


def _lists(values: np.ndarray, lengths: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    arrow_mask = None
    if mask is not None:  # null rows hold no elements, as in tensor_array
        offsets, values = _without_rows(offsets, values, ~mask)
        arrow_mask = pa.array(mask)
    return pa.ListArray.from_arrays(
        pa.array(offsets.astype(np.int32)), pa.array(values), mask=arrow_mask
    )


def _tensors(values: np.ndarray, sizes: np.ndarray, shapes: np.ndarray) -> pa.StructArray:
    """A tensor struct column: flat values, elements per row, one shape per row (rows x rank)."""
    rows, rank = shapes.shape
    value_list = _lists(values, sizes)
    shape_list = _lists(shapes.astype(np.int32).ravel(), np.full(rows, rank))
    return pa.StructArray.from_arrays([value_list, shape_list], names=["values", "shape"])


def _events(rng: np.random.Generator, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    counts = rng.poisson(40, rows)
    total = int(counts.sum())
    # Spending peaks in the evening; categories are unevenly popular.
    hour_weights = 1.0 + np.sin(np.linspace(-np.pi / 2, 1.5 * np.pi, HOURS)) ** 2
    hours = rng.choice(HOURS, total, p=hour_weights / hour_weights.sum())
    categories = rng.choice(CATEGORIES, total, p=[0.4, 0.3, 0.2, 0.1])
    buckets = (categories * HOURS + hours).astype(np.int32)
    amounts = rng.lognormal(3.0, 1.0, total).astype(np.float32)
    return counts, buckets, amounts


def generate(path: str, rows: int, *, seed: int = 0, files: int = 4) -> DemoData:
    """Writes the dataset under directory `path` (Parquet files) and describes it."""
    rng = np.random.default_rng(seed)
    os.makedirs(path, exist_ok=True)
    counts, buckets, amounts = _events(rng, rows)
    tiles = rng.gamma(2.0, 1.0, rows * TILE * TILE).astype(np.float32)
    tile_shapes = np.tile([TILE, TILE], (rows, 1))
    cell_counts = rng.integers(1, 9, rows)
    cells = rng.integers(0, TILE, (int(cell_counts.sum()), 2)).astype(np.int32)
    cell_shapes = np.stack([cell_counts, np.full(rows, 2)], axis=1)
    cell_values = rng.gamma(2.0, 1.0, int(cell_counts.sum())).astype(np.float32)
    series = rng.normal(100.0, 15.0, rows * SERIES).astype(np.float32)
    latest = rng.normal(100.0, 15.0, rows * HOURS).astype(np.float32)

    # A handful of broken rows, a few of each kind, at fixed places.
    data = DemoData(path, rows, files)
    bad = rng.choice(rows, size=min(rows, 3 * max(1, rows // 5000)), replace=False)
    kinds = np.array_split(bad, 3)
    starts = np.concatenate([[0], np.cumsum(counts)])
    for r in kinds[0]:
        if counts[r]:
            buckets[starts[r]] = BUCKETS + 7  # out of range
            data.bad_buckets.append(int(r))
    for r in kinds[1]:
        tile_shapes[r] = [TILE, TILE - 1]  # 240 claimed for 256 values
        data.bad_tiles.append(int(r))
    series_mask = np.zeros(rows, bool)
    series_mask[kinds[2]] = True
    data.null_series.extend(int(r) for r in kinds[2])

    table = pa.table(
        {
            "user_id": np.arange(rows, dtype=np.int64),
            "event_bucket": _lists(buckets, counts),
            "event_amount": _lists(amounts, counts),
            "tile": _tensors(tiles, np.full(rows, TILE * TILE), tile_shapes),
            "cells": _tensors(cells.ravel(), cell_counts * 2, cell_shapes),
            "cell_values": _lists(cell_values, cell_counts),
            "series": _lists(series, np.full(rows, SERIES), mask=series_mask),
            "latest": _lists(latest, np.full(rows, HOURS)),
        }
    )
    for old in glob.glob(os.path.join(path, "part-*.parquet")):  # a reused --workdir
        os.remove(old)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for number, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        if hi > lo:
            part = os.path.join(path, f"part-{number:03d}.parquet")
            pq.write_table(table.slice(lo, hi - lo), part, row_group_size=1024)
    return data
