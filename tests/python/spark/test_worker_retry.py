"""A Python worker killed mid-task on a standalone cluster: Spark retries, the output is exact.

A job of per-row steps runs on each engine on the shared standalone cluster (one executor
of two cores), through the CLI, the executors on this machine's Python (``PYSPARK_PYTHON``,
which has scatterkit). On the Arrow engine each task of its main stage reads a piece of the
input with pyarrow and writes its own Parquet file, one per attempt, which the driver
commits; on the Spark engine Spark's reader feeds the steps (``mapInArrow``) and Spark's
writer writes the job's staging directory, which the driver commits.

The kill lands where the test says, whatever the machine's speed: the executors run with
the test-only pause ``write`` of ``scatterkit.spark.runtime.faults``, so that the first
task to have its file open and all but its last rows read (Arrow engine), or all its rows
sent to Spark's writer (Spark engine), holds; the test kills its Python worker (SIGKILL).
The retry goes on past the point.

Spark must retry the task (the driver loses it to the crash, attempt 1 of it finishes on
the executor) and the job must succeed with an output that is complete, exact (bit for bit
against scatterkit's NumPy API, row by row), free of duplicate rows and free of temporary
files: no attempt file, no hidden staging directory, one part file per task of the stage
(as a run without a failure leaves), ``_SUCCESS`` present."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator

import numpy as np
import pytest
from spark_helpers import pa, pq, tensor_column, write_parquet
from standalone_cluster import Pauses, StandaloneCluster, app_conf, end, executor_logs, launch

import scatterkit as sk

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with test_cluster.py.
pytest_plugins = ["standalone_cluster"]

ROWS, FILES, WIDTH = 2000, 4, 50  # one task per file in the main stage
JOB_TIMEOUT = 300  # seconds
SPEC = {
    "row_id": "id",
    "passthrough": ["id"],
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 1, "reduction": "sum"},
            "inputs": {"data": "grid", "indices": "idx", "updates": "upd"},
            "output": "sums",
        }
    ],
}


def _dataset() -> tuple[dict[str, np.ndarray], pa.Table]:
    rng = np.random.default_rng(29)
    cols = {
        "grid": rng.random((ROWS, 2, WIDTH)),
        "idx": rng.integers(-WIDTH, WIDTH, (ROWS, 2, WIDTH)).astype(np.int32),
        "upd": rng.random((ROWS, 2, WIDTH)),
    }
    table = pa.table(
        {"id": pa.array(np.arange(ROWS), pa.int64())}
        | {name: tensor_column(list(values), values.dtype) for name, values in cols.items()}
    )
    return cols, table


@pytest.fixture(scope="module", params=["arrow", "spark"])
def run(request, standalone_cluster: StandaloneCluster, tmp_path_factory) -> Iterator[dict]:
    """The job on an engine with the Python worker of one task killed where it holds; then
    what the test needs to check it."""
    engine = request.param
    root = tmp_path_factory.mktemp(f"retry-{engine}")
    cols, table = _dataset()
    source = write_parquet(root / "in", table, files=FILES)
    spec = root / "job.json"
    spec.write_text(json.dumps(SPEC))
    area = root / "area"  # holds only the output: a staging directory would show up in it
    area.mkdir()
    pauses = Pauses(root / "pauses", ["write"])
    settings = app_conf(cores=2, executor_cores=2) | pauses.conf
    # Small Arrow batches: a task writes its file in several batches.
    settings["spark.sql.execution.arrow.maxRecordsPerBatch"] = "50"
    # One task per file for Spark's reader too, which would pack small files together.
    settings["spark.sql.files.openCostInBytes"] = str(1 << 30)
    argv = ["-m", "scatterkit.spark", "run", "--spec", str(spec), "--input", str(source)]
    argv += ["--output", str(area / "out"), "--engine", engine, "--master"]
    argv += [standalone_cluster.url, "--log-level", "WARN"]
    argv += ["--summary-json", str(root / "summary.json")]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    proc = launch(root, "job", argv)
    killed = []
    started = time.monotonic()
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < JOB_TIMEOUT, "the job did not finish in time"
            for paused in pauses.new():
                os.kill(paused.pid, signal.SIGKILL)
                killed.append(paused)
            time.sleep(0.05)
        seconds = time.monotonic() - started
    finally:
        pauses.release_all()
        end(proc)
    log = "".join((root / f"job.{s}").read_text(errors="replace") for s in ("out", "err"))
    yield {
        "engine": engine,
        "cols": cols,
        "area": area,
        "root": root,
        "returncode": proc.returncode,
        "seconds": seconds,
        "killed": killed,
        "log": log,
        "work_dir": standalone_cluster.work_dir,
    }


def _expected(cols: dict[str, np.ndarray]) -> np.ndarray:
    grid, idx, upd = cols["grid"], cols["idx"], cols["upd"]
    return np.stack(
        [
            sk.scatter_elements_update(grid[r], idx[r], upd[r], 1, reduction="sum")
            for r in range(ROWS)
        ]
    )


def test_a_killed_python_worker_is_retried_and_the_output_is_exact(run):
    log, killed = run["log"], run["killed"]
    print(f"\n{run['engine']} engine: job {run['seconds']:.1f} s; killed: {killed}")
    assert run["returncode"] == 0, f"exit {run['returncode']}\n{log[-8000:]}"
    # The kill: one Python worker, holding with its file open.
    assert len(killed) == 1 and killed[0].attempt == 0, killed
    (paused,) = killed

    # The retry: the driver lost the task to the crash; attempt 1 of it finished; every
    # other task of the stage finished once, at its first attempt.
    lost = re.findall(rf"Lost task {re.escape(paused.task)} \(TID {paused.tid}\)[^\n]*", log)
    assert len(lost) == 1 and "Python worker" in lost[0], log[-8000:]
    executors = executor_logs(paused.app_id, run["work_dir"])[run["work_dir"].name]
    finished = re.findall(rf"Finished task (\d+)\.(\d+) in stage {paused.stage}\.0 ", executors)
    tasks = sorted({int(t) for t, _ in finished})
    assert sorted((int(t), int(a)) for t, a in finished) == sorted(
        [(t, 0) for t in tasks if t != paused.partition] + [(paused.partition, 1)]
    ), executors[-8000:]
    assert len(tasks) == FILES, tasks

    # No temporary files: beside the output nothing (no hidden staging directory), in it
    # one part file per task and _SUCCESS.
    area = run["area"]
    assert sorted(p.name for p in area.iterdir()) == ["out"]
    names = sorted(p.name for p in (area / "out").iterdir())
    parts = [n for n in names if n.startswith("part-")]
    # Spark's writer (the Spark engine) leaves Hadoop's checksum beside each of its files.
    checksums = {n for n in names if n.startswith(".") and n.endswith(".crc")}
    assert {f".{n}.crc" for n in [*parts, "_SUCCESS"]} >= checksums, names
    assert sorted(set(names) - set(parts) - checksums) == ["_SUCCESS"], names  # no _attempts
    assert len(parts) == len(tasks), names
    assert all(pq.read_metadata(area / "out" / name).num_rows > 0 for name in parts), names

    # Complete, without duplicate rows, exact.
    summary = json.loads((run["root"] / "summary.json").read_text())
    assert summary["rows_in"] == summary["rows_out"] == ROWS
    table = pq.read_table(area / "out")
    ids = table.column("id").to_numpy()
    assert len(ids) == ROWS and len(np.unique(ids)) == ROWS
    assert np.array_equal(np.sort(ids), np.arange(ROWS))
    sums = table.sort_by("id").column("sums").combine_chunks()
    shapes = sums.field("shape").flatten().to_numpy().reshape(ROWS, 2)
    assert (shapes == [2, WIDTH]).all()
    got = sums.field("values").flatten().to_numpy().reshape(ROWS, 2, WIDTH)
    want = _expected(run["cols"])
    assert got.dtype == want.dtype == np.float64
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))  # bit for bit
