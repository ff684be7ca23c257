"""``scatterkit-spark demo``: generate a dataset, run the job on Spark, check a sample.

The job turns each user's raw events into dense per-user feature tensors (spend per
category and hour: sum, max and mean, ScatterElementsUpdate-12), writes fresh cell readings
into each user's map tile (ScatterNDUpdate-3) and the newest day into each user's 30-day
series (SliceScatter-15). A sample of output rows is then recomputed one call at a time
with scatterkit's NumPy API and compared bit for bit; the broken rows must come back with
their error messages.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow.dataset as ds

import scatterkit as sk

from .demo_data import BUCKETS, HOURS, SERIES, DemoData, generate
from .job import run_job
from .session import build_session, end_session, where_it_runs
from .spec import JobSpec


def _events_step(reduction: str, output: str, init: bool) -> dict[str, Any]:
    return {
        "op": "ScatterElementsUpdate-12",
        "attributes": {"axis": 0, "reduction": reduction, "use_init_val": init},
        "inputs": {
            "data": {"fill": 0.0, "shape": [BUCKETS], "dtype": "float"},
            "indices": "event_bucket",
            "updates": "event_amount",
        },
        "output": output,
    }


DEMO_SPEC: dict[str, Any] = {
    "row_id": "user_id",
    "passthrough": ["user_id"],
    "steps": [
        _events_step("sum", "spend_sum", True),
        _events_step("max", "spend_max", False),
        _events_step("mean", "spend_mean", False),
        {
            "op": "ScatterNDUpdate-3",
            "inputs": {"data": "tile", "indices": "cells", "updates": "cell_values"},
            "output": "tile_updated",
        },
        {
            "op": "SliceScatter-15",
            "attributes": {"start": -HOURS, "stop": SERIES, "step": 1, "axis": 0},
            "inputs": {"data": "series", "updates": "latest"},
            "output": "series_updated",
        },
    ],
}


def _tensor(value: Any, dtype: Any) -> np.ndarray:
    if value is None:
        raise ValueError("null tensor")
    if isinstance(value, dict):
        return np.array(value["values"], dtype).reshape(value["shape"])
    return np.array(value, dtype)


def _expected_step(row: dict[str, Any], step: str) -> np.ndarray:
    """One demo step for one row, as a single call of scatterkit's NumPy API."""
    f32 = np.float32
    if step.startswith("spend_"):
        buckets = _tensor(row["event_bucket"], np.int64)
        amounts = _tensor(row["event_amount"], f32)
        reduction = step[len("spend_") :]
        return sk.scatter_elements_update(
            np.zeros(BUCKETS, f32),
            buckets,
            amounts,
            0,
            reduction=reduction,
            use_init_val=reduction == "sum",
        )
    if step == "tile_updated":
        tile = _tensor(row["tile"], f32)  # a broken shape fails to reshape: ValueError
        return sk.get_op("ScatterNDUpdate-3")(
            tile, _tensor(row["cells"], np.int32), _tensor(row["cell_values"], f32)
        )
    return sk.slice_scatter(
        _tensor(row["series"], f32), _tensor(row["latest"], f32), -HOURS, SERIES, 1, 0
    )


def _check_row(uid: int, row: dict[str, Any], got: dict[str, Any]) -> list[str]:
    problems = []
    for step in (s["output"] for s in DEMO_SPEC["steps"]):
        error = got[step]["error"]
        try:
            want = _expected_step(row, step)
        except (ValueError, IndexError, TypeError):
            if error is None or got[step]["values"] is not None:
                problems.append(f"user {uid} {step}: a broken row came back without its error")
            continue
        if error is not None or got[step]["values"] is None:
            problems.append(f"user {uid} {step}: unexpected error {error!r}")
        elif not np.array_equal(_tensor(got[step], np.float32), want, equal_nan=True):
            problems.append(f"user {uid} {step}: values differ from the NumPy API")
    return problems


def check_sample(data: DemoData, output: str, sample: int, seed: int = 1) -> tuple[int, list[str]]:
    """Recomputes `sample` random rows plus every broken row; returns (rows checked, problems)."""
    rng = np.random.default_rng(seed)
    ids = set(rng.choice(data.rows, size=min(sample, data.rows), replace=False).tolist())
    ids |= data.bad_rows
    wanted = ds.field("user_id").isin(sorted(ids))
    inputs = {r["user_id"]: r for r in ds.dataset(data.path).to_table(filter=wanted).to_pylist()}
    outputs = {r["user_id"]: r for r in ds.dataset(output).to_table(filter=wanted).to_pylist()}
    problems = []
    if set(outputs) != ids:
        problems.append(f"rows missing from the output: {sorted(ids - set(outputs))[:10]}")
    for uid in sorted(set(outputs) & ids):
        problems.extend(_check_row(uid, inputs[uid], outputs[uid]))
    return len(outputs), problems


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

    `remote` (``sc://host:port``) runs the job on a Spark Connect server, which must see
    the work directory (the same machine, or a shared file system). Raises ValueError when
    `rows` is below 1 or `sample` below 0.
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
        print(f"scatterkit-spark demo: {rows:,} users, {len(DEMO_SPEC['steps'])} steps")
        t0 = time.perf_counter()
        data = generate(input_path, rows, seed=seed)
        # Counted on disk: with fewer rows than data.files, some files would be empty and are
        # not written.
        files = len(ds.dataset(input_path).files)
        print(
            f"generated {input_path} ({files} Parquet file(s), {len(data.bad_rows)} row(s) broken"
            f" on purpose) in {time.perf_counter() - t0:.1f} s"
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
        print("summary:")
        for line in summary.lines():
            print(f"  {line}")
        if summary.rows_in != summary.rows_out:
            problems.append("the output does not have the input's row count")
        if problems:
            print(f"check: {len(problems)} problem(s) in {checked} sampled rows:")
            for p in problems[:20]:
                print(f"  {p}")
        else:
            print(
                f"check: {checked} sampled rows (every broken row among them) match scatterkit's "
                "single-call NumPy API bit for bit, and the broken rows carry their errors"
            )
        print(f"demo done in {time.perf_counter() - started:.1f} s")
        return 1 if problems else 0
    finally:
        end_session(spark)
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)
