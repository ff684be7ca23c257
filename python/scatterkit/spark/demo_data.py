"""The demo's dataset: an event table, one event per row, in time order.

Columns (Parquet, written with pyarrow, a few files):

- ``user_id`` bigint
- ``category`` int (0..3), ``hour`` int (0..23), ``amount`` float (log-normal): a purchase
- ``day`` int (0..29, day 29 is today) and ``hour_of_month`` int (``day * 24 + hour``)
- ``today_amount`` float: the amount of today's events, null on other days;
  ``past_amount`` float: the amount of the days before, null today
- ``cell_x``, ``cell_y`` int (0..15), ``reading`` float, ``ts`` bigint: a sensor reading
  near the user's home cell and its time (seconds since the first day began)

Each user has at least one event (about 40), so every user makes one group. The events are
sorted by ``ts``, so each file holds events of every user. A few events are broken on
purpose, one per broken user: a category out of range (7), a reading at ``cell_x`` 16, and
an event stamped tomorrow (day 30, ``hour_of_month`` 720 and later).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CATEGORIES, HOURS, DAYS = 4, 24, 30
TODAY = DAYS - 1
SERIES = DAYS * HOURS
TILE = 16
EVENTS_PER_USER = 40


@dataclass
class DemoData:
    """Where the events went, how many, and which users were broken on purpose (by id)."""

    path: str
    users: int
    events: int
    files: int
    bad_category: list[int] = field(default_factory=list)  # an event of category 7
    bad_cell: list[int] = field(default_factory=list)  # a reading at cell_x 16
    tomorrow: list[int] = field(default_factory=list)  # an event of day 30

    @property
    def bad_users(self) -> set[int]:
        return set(self.bad_category) | set(self.bad_cell) | set(self.tomorrow)

    @property
    def bad_events(self) -> int:
        return len(self.bad_category) + len(self.bad_cell) + len(self.tomorrow)


def _nullable(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, mask=~valid)


def _events(rng: np.random.Generator, users: int) -> dict[str, np.ndarray]:
    counts = 1 + rng.poisson(EVENTS_PER_USER - 1, users)
    total = int(counts.sum())
    user = np.repeat(np.arange(users, dtype=np.int64), counts)
    # Spending peaks in the evening; categories are unevenly popular.
    hour_weights = 1.0 + np.sin(np.linspace(-np.pi / 2, 1.5 * np.pi, HOURS)) ** 2
    hour = rng.choice(HOURS, total, p=hour_weights / hour_weights.sum()).astype(np.int32)
    category = rng.choice(CATEGORIES, total, p=[0.4, 0.3, 0.2, 0.1]).astype(np.int32)
    day = rng.integers(0, DAYS, total, dtype=np.int32)
    # Readings cluster around each user's home cell: cells are read again, the newest wins.
    home = rng.integers(2, TILE - 2, (users, 2))[user]
    cells = np.clip(home + np.rint(rng.normal(0.0, 1.5, (total, 2))), 0, TILE - 1)
    return {
        "user_id": user,
        "category": category,
        "hour": hour,
        "amount": rng.lognormal(3.0, 1.0, total).astype(np.float32),
        "day": day,
        "cell_x": cells[:, 0].astype(np.int32),
        "cell_y": cells[:, 1].astype(np.int32),
        "reading": rng.gamma(2.0, 1.0, total).astype(np.float32),
        "second": rng.integers(0, 3600, total),
        "counts": counts,
    }


def generate(path: str, users: int, *, seed: int = 0, files: int = 4) -> DemoData:
    """Writes the events of `users` users under directory `path` (Parquet files) and
    describes them."""
    rng = np.random.default_rng(seed)
    os.makedirs(path, exist_ok=True)
    e = _events(rng, users)
    starts = np.concatenate([[0], np.cumsum(e["counts"])[:-1]])
    data = DemoData(path, users, len(e["user_id"]), files)

    # A handful of broken users, a few of each kind, one bad event each.
    bad = rng.choice(users, size=min(users, 3 * max(1, users // 5000)), replace=False)
    kinds = np.array_split(bad, 3)
    for u in kinds[0]:
        e["category"][starts[u]] = 7  # out of range: the user's spend tensors are in error
        data.bad_category.append(int(u))
    for u in kinds[1]:
        e["cell_x"][starts[u]] = TILE  # out of range: the reading is dropped and counted
        data.bad_cell.append(int(u))
    for u in kinds[2]:
        e["day"][starts[u]] = DAYS  # tomorrow: past the 30-day series, which is in error
        data.tomorrow.append(int(u))

    hour_of_month = e["day"] * HOURS + e["hour"]
    ts = hour_of_month.astype(np.int64) * 3600 + e["second"]
    table = pa.table(
        {
            "user_id": e["user_id"],
            "category": e["category"],
            "hour": e["hour"],
            "amount": e["amount"],
            "day": e["day"],
            "hour_of_month": hour_of_month,
            "today_amount": _nullable(e["amount"], e["day"] == TODAY),
            "past_amount": _nullable(e["amount"], e["day"] < TODAY),
            "cell_x": e["cell_x"],
            "cell_y": e["cell_y"],
            "reading": e["reading"],
            "ts": ts,
        }
    )
    table = table.take(np.argsort(ts, kind="stable"))  # an event log: in time order
    for old in glob.glob(os.path.join(path, "part-*.parquet")):  # a reused --workdir
        os.remove(old)
    bounds = np.linspace(0, data.events, files + 1).astype(int)
    for number, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        if hi > lo:
            part = os.path.join(path, f"part-{number:03d}.parquet")
            pq.write_table(table.slice(lo, hi - lo), part, row_group_size=64 * 1024)
    return data
