"""``scatterkit-spark demo``: generate an event table, run the job on Spark, check a sample.

The job groups the events, one per row, by user and builds each user's tensors with the
aggregation step: spend per category and hour (sum, max and mean), 30 days of hourly spend
before today, today's hourly spend, and the newest reading of each cell of a map tile. A
per-row step then writes today into the series' last 24 hours (SliceScatter-15). A sample of
users (every broken one among them) is recomputed from their events with scatterkit's
single-call NumPy API and compared bit for bit; the broken users must carry their errors and
the dropped events their counts, and the summary's event counts must add up.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

import scatterkit as sk

from .demo_data import CATEGORIES, HOURS, SERIES, TILE, DemoData, generate
from .jobs.run import run_job
from .jobs.summary import JobSummary
from .reader import read_tensors
from .sessions.session import build_session, end_session, where_it_runs
from .specs.job_spec import JobSpec


def _spend(reduction: str) -> dict[str, Any]:
    return {
        "indices": ["category", "hour"],
        "updates": "amount",
        "shape": [CATEGORIES, HOURS],
        "reduction": reduction,
        "dtype": "float",
        "on_error": "keep",
    }


DEMO_SPEC: dict[str, Any] = {
    "aggregate": {
        "by": ["user_id"],
        "aggregates": {
            "spend_sum": _spend("sum"),
            "spend_max": _spend("max"),
            "spend_mean": _spend("mean"),
            "series": {
                "indices": ["hour_of_month"],
                "updates": "past_amount",  # null today: today's hours hold 0
                "shape": [SERIES],
                "reduction": "sum",
                "dtype": "float",
                "on_error": "keep",
            },
            "latest": {
                "indices": ["hour"],
                "updates": "today_amount",  # null before today: skipped
                "shape": [HOURS],
                "reduction": "sum",
                "dtype": "float",
            },
            "tile": {
                "indices": ["cell_x", "cell_y"],
                "updates": "reading",
                "shape": [TILE, TILE],
                "reduction": "none",
                "order_by": "ts",  # the newest reading wins
                "fill": math.nan,  # a cell never read
                "dtype": "float",
                "on_error": "drop",
                # a map for a vision model: its bytes, read back with read_tensors
                "layout": "binary",
            },
        },
    },
    "steps": [
        {
            "op": "SliceScatter-15",
            "attributes": {"start": -HOURS, "stop": SERIES, "step": 1, "axis": 0},
            "inputs": {"data": "series", "updates": "latest"},
            "output": "series_updated",
        },
    ],
}

_AGGREGATES: dict[str, dict[str, Any]] = DEMO_SPEC["aggregate"]["aggregates"]
_F32 = np.float32


# -- the events, as pyarrow reads them back -------------------------------------------------


def _columns(table: pa.Table) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each column as (values, valid): nulls read as 0 with valid False."""
    out = {}
    for name in table.column_names:
        column = table.column(name)
        valid = np.asarray(pc.is_valid(column), bool)
        out[name] = (np.asarray(column.fill_null(0)), valid)
    return out


def _coordinates_ok(
    agg: dict[str, Any], events: dict[str, tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """Per event: every coordinate present and in range (negatives wrap once)."""
    ok = np.ones(len(events["user_id"][0]), bool)
    for column, extent in zip(agg["indices"], agg["shape"]):
        values, valid = events[column]
        ok &= valid & (values >= -extent) & (values < extent)
    return ok


def _present(agg: dict[str, Any], events: dict[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per event: a value to fold (a null value, or a null order_by, is skipped)."""
    present = events[agg["updates"]][1].copy()
    if agg.get("order_by"):
        present &= events[agg["order_by"]][1]
    return present


# -- one user, recomputed with the NumPy API --------------------------------------------------


def _expected_tensor(
    agg: dict[str, Any], events: dict[str, tuple[np.ndarray, np.ndarray]], use: np.ndarray
) -> np.ndarray:
    """One aggregate over the events in `use` (all of them in range), in one NumPy API call."""
    shape, reduction = tuple(agg["shape"]), agg["reduction"]
    fill = agg.get("fill", 0)
    index = np.stack([events[c][0][use] for c in agg["indices"]], axis=-1).astype(np.int64)
    values = events[agg["updates"]][0][use].astype(_F32)
    if reduction == "sum":  # the fill, 0, is the sum's identity: untargeted elements keep it
        return sk.scatter_nd_update(
            np.full(shape, fill, _F32), index, values, reduction="sum", exact=True
        )
    if reduction == "none":  # in (order_by, value) order: the last one, the newest, wins
        order = np.lexsort((values, events[agg["order_by"]][0][use]))
        return sk.scatter_nd_update(np.full(shape, fill, _F32), index[order], values[order])
    # Targeted elements start at the reduction's identity: use_init_val=False, flattened.
    wrapped = np.where(index < 0, index + np.asarray(shape), index)
    flat = np.ravel_multi_index(tuple(wrapped.T), shape)
    out = sk.scatter_elements_update(
        np.full(math.prod(shape), fill, _F32),
        flat,
        values,
        0,
        reduction=reduction,
        use_init_val=False,
        exact=True,
    )
    return out.reshape(shape)


def _tensor(result: dict[str, Any], dtype: Any) -> np.ndarray | None:
    """A result's tensor values, flat, in either layout (None for a null tensor)."""
    if "data" in result:
        if result["data"] is None:
            return None
        return np.frombuffer(result["data"], np.dtype(result["dtype"]))
    return None if result["values"] is None else np.asarray(result["values"], dtype)


def _compare(uid: int, name: str, result: dict[str, Any], want: np.ndarray) -> list[str]:
    """The output's tensor against the NumPy API's, bit for bit (shape included)."""
    got = _tensor(result, want.dtype)
    if result["error"] is not None or got is None:
        return [f"user {uid} {name}: unexpected error {result['error']!r}"]
    if list(result["shape"]) != list(want.shape) or got.tobytes() != want.tobytes():
        return [f"user {uid} {name}: values differ from the NumPy API"]
    return []


def _check_user(
    uid: int, events: dict[str, tuple[np.ndarray, np.ndarray]], got: dict[str, Any]
) -> list[str]:
    problems = []
    expected: dict[str, np.ndarray | None] = {}
    for name, agg in _AGGREGATES.items():
        result = got[name]
        ok, present = _coordinates_ok(agg, events), _present(agg, events)
        bad = int((~ok).sum())
        folded = int((ok & present).sum())
        dropped = bad if agg.get("on_error") == "drop" else 0
        if bad and agg.get("on_error") == "keep":
            expected[name] = None
            named = any(f"coordinate {c}" in (result["error"] or "") for c in agg["indices"])
            if _tensor(result, _F32) is not None or not named:
                problems.append(f"user {uid} {name}: a bad event, but no error naming it")
        else:
            want = _expected_tensor(agg, events, ok & present)
            expected[name] = want
            problems += _compare(uid, name, result, want)
        if (result["events"], result["dropped"]) != (folded, dropped):
            problems.append(
                f"user {uid} {name}: {result['events']} event(s) folded and {result['dropped']}"
                f" dropped; expected {folded} and {dropped}"
            )
    series, latest, step = expected["series"], expected["latest"], got["series_updated"]
    if series is None or latest is None:
        if step["error"] is None or _tensor(step, _F32) is not None:
            problems.append(f"user {uid} series_updated: a null input, but no error")
    else:
        want = sk.slice_scatter(series, latest, -HOURS, SERIES, 1, 0)
        problems += _compare(uid, "series_updated", step, want)
    return problems


def check_sample(data: DemoData, output: str, sample: int, seed: int = 1) -> tuple[int, list[str]]:
    """Recomputes `sample` random users plus every broken one from their events; returns
    (users checked, problems)."""
    rng = np.random.default_rng(seed)
    ids = set(rng.choice(data.users, size=min(sample, data.users), replace=False).tolist())
    ids |= data.bad_users
    wanted = ds.field("user_id").isin(sorted(ids))
    events = _columns(ds.dataset(data.path).to_table(filter=wanted))
    outputs = {r["user_id"]: r for r in ds.dataset(output).to_table(filter=wanted).to_pylist()}
    problems = []
    if set(outputs) != ids:
        problems.append(f"users missing from the output: {sorted(ids - set(outputs))[:10]}")
    users = events["user_id"][0]
    for uid in sorted(set(outputs) & ids):
        mine = users == uid
        problems.extend(
            _check_user(
                uid, {k: (v[mine], ok[mine]) for k, (v, ok) in events.items()}, outputs[uid]
            )
        )
    return len(outputs), problems


def check_events(data: DemoData, summary: JobSummary) -> list[str]:
    """The summary's counts against the whole event table: per aggregate, every event is
    folded, dropped (on_error drop), skipped (a null value) or a bad event of a group kept
    in error; none is lost silently."""
    names = {c for agg in _AGGREGATES.values() for c in (*agg["indices"], agg["updates"])}
    names |= {agg["order_by"] for agg in _AGGREGATES.values() if agg.get("order_by")}
    events = _columns(ds.dataset(data.path).to_table(columns=sorted(names | {"user_id"})))
    problems = []
    if (summary.rows_in, summary.rows_out) != (data.events, data.users):
        problems.append(
            f"{summary.rows_in:,} events in and {summary.rows_out:,} groups out; expected "
            f"{data.events:,} and {data.users:,}"
        )
    for name, agg in _AGGREGATES.items():
        ok, present = _coordinates_ok(agg, events), _present(agg, events)
        bad = ~ok
        keep, drop = agg.get("on_error") == "keep", agg.get("on_error") == "drop"
        # Each event once: folded, dropped (a bad event, on_error drop), skipped (a null
        # value) or a bad event of a group kept in error (keep): none lost silently.
        want = {
            "events": int((ok & present).sum()),
            "dropped": int(bad.sum()) if drop else 0,
            "error_groups": len(np.unique(events["user_id"][0][bad])) if keep else 0,
        }
        got = summary.aggregated.get(name)
        if got != want:
            problems.append(f"events of {name}: the summary says {got}, the input {want}")
    return problems


# -- the command -------------------------------------------------------------------------------


def run_demo(
    rows: int = 10_000,
    *,
    master: str | None = None,
    remote: str | None = None,
    ship_library: bool = False,
    workdir: str | None = None,
    seed: int = 0,
    sample: int = 200,
    archive: str | None = None,
    conf: dict[str, str] | None = None,
) -> int:
    """Runs the demo end to end; returns the process exit code (0: every check passed).

    `rows` is the number of users (about 40 events each), `sample` the number of users
    checked against the NumPy API besides the broken ones. `remote` (``sc://host:port``)
    runs the job on a Spark Connect server, which must see the work directory (the same
    machine, or a shared file system). Raises ValueError when `rows` is below 1 or `sample`
    below 0.
    """
    if rows < 1:
        raise ValueError(f"rows must be at least 1, got {rows}")
    if sample < 0:
        raise ValueError(f"sample must be at least 0, got {sample}")
    started = time.perf_counter()
    root = workdir or tempfile.mkdtemp(prefix="scatterkit-demo-")
    spark = None
    input_path, output_path = os.path.join(root, "input"), os.path.join(root, "output")
    try:
        steps = len(DEMO_SPEC["steps"])
        print(
            f"scatterkit-spark demo: {rows:,} users, {len(_AGGREGATES)} aggregates, "
            f"{steps} per-row step{'s' if steps != 1 else ''}"
        )
        t0 = time.perf_counter()
        data = generate(input_path, rows, seed=seed)
        # Counted on disk: with fewer events than data.files, some files would be empty and
        # are not written.
        files = len(ds.dataset(input_path).files)
        print(
            f"generated {input_path} ({files} Parquet file(s), {data.events:,} events, "
            f"{data.bad_events} broken on purpose) in {time.perf_counter() - t0:.1f} s"
        )
        t0 = time.perf_counter()
        # Smaller input splits than Spark's 128 MB: more tasks, so progress shows as they finish.
        settings = {"spark.sql.files.maxPartitionBytes": str(8 << 20), **(conf or {})}
        spark = build_session(
            master=master,
            remote=remote,
            ship_library=ship_library,
            archive=archive,
            conf=settings,
            app_name="scatterkit-demo",
        )
        seconds = time.perf_counter() - t0
        print(f"Spark {spark.version} on {where_it_runs(spark)} in {seconds:.1f} s")
        spec = JobSpec.from_dict(DEMO_SPEC)
        summary = run_job(spark, spec, input_path, output_path, on_error="keep", mode="overwrite")
        checked, problems = check_sample(data, output_path, sample)
        problems += check_events(data, summary)
        tiles = read_tensors(output_path, "tile")  # no Spark: pyarrow, and a view of the bytes
        if not isinstance(tiles, np.ndarray) or tiles.shape != (data.users, TILE, TILE):
            problems.append(f"read_tensors(output, 'tile') did not stack {data.users} tiles")
        print("summary:")
        for line in summary.lines():
            print(f"  {line}")
        if problems:
            print(f"check: {len(problems)} problem(s) in {checked} sampled users:")
            for p in problems[:20]:
                print(f"  {p}")
        else:
            print(
                f"check: {checked} sampled users (every broken one among them) match "
                "scatterkit's single-call NumPy API bit for bit, and the broken users carry "
                "their errors"
            )
            print(
                f"check: each aggregate accounts for all {data.events:,} events (folded, "
                "dropped, null, or in a group kept in error)"
            )
            assert isinstance(tiles, np.ndarray)  # checked above
            print(
                f"read_tensors(output, 'tile'): {tiles.shape} {tiles.dtype}, the binary "
                "layout's bytes as one NumPy array, ready for torch.from_numpy"
            )
        print(f"demo done in {time.perf_counter() - started:.1f} s")
        return 1 if problems else 0
    finally:
        end_session(spark)
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
