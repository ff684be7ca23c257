"""A Python worker killed mid-task on a standalone cluster: Spark retries, the output is exact.

Both engines run the same job at once on the shared standalone cluster (one executor of
one core each: the cluster's two cores), through the CLI, the executors on this machine's
Python (``PYSPARK_PYTHON``, which has scatterkit). Once a task of the job's main stage has
started writing its part file, the test finds the Python worker running it through the
process tree of the Worker JVM (Worker -> this job's executor JVM -> ``pyspark.daemon`` ->
the forked worker busy with data) and kills it with SIGKILL, once.

Spark must retry the task (the driver loses it to the crash, attempt 1 of it finishes on
the executor) and the job must succeed with an output that is complete, exact (bit for bit
against scatterkit's NumPy API, row by row), free of duplicate rows and free of temporary
files: no ``_temporary``, no hidden staging directory, one part file per task of the stage
(as a run without a failure leaves), ``_SUCCESS`` present.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from spark_helpers import pa, pq, tensor_column, write_parquet
from standalone_cluster import (
    StandaloneCluster,
    _cluster_env,
    cpu_ticks,
    proc_strings,
    process_tree,
)

import scatterkit as sk

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with test_cluster.py.
pytest_plugins = ["standalone_cluster"]

ENGINES = ("arrow", "spark")
ROWS, FILES, WIDTH = 10000, 4, 100  # one task per file in the main stage
# One-row (four-row) Arrow batches make the tasks last seconds without a big input: the
# time goes in the per-batch work of the Python worker (and of the JVM, for Spark's writer).
BATCH_ROWS = {"arrow": 1, "spark": 4}
JOB_TIMEOUT = 400  # seconds for both jobs
KILL_DELAY = 0.1  # seconds from the stage's first part file to the kill
MARK = "SCATTERKIT_RETRY_TEST"  # in the executors' environment: which job they serve
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


# --- the process tree, from /proc (psutil is not a dependency) ---------------------------


def _io_bytes(pid: int) -> int | None:
    """Bytes a process read and wrote through system calls: files, sockets, pipes (None
    if /proc does not say)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    counts = dict(line.split(": ") for line in lines)
    return int(counts["rchar"]) + int(counts["wchar"])


def _executor(tree: dict[int, list[int]], worker_pid: int, engine: str) -> tuple[int, str] | None:
    """The executor JVM (a child of the Worker JVM) of `engine`'s job and its app id."""
    for pid in tree.get(worker_pid, []):
        if f"{MARK}={engine}" in proc_strings(pid, "environ"):
            args = proc_strings(pid, "cmdline")
            if "--app-id" in args:  # else it has just ended
                return pid, args[args.index("--app-id") + 1]
    return None


def _python_workers(tree: dict[int, list[int]], executor_pid: int) -> list[int]:
    """The Python workers of an executor: the processes ``pyspark.daemon`` forked."""
    return [
        worker
        for daemon in tree.get(executor_pid, [])
        if "pyspark.daemon" in proc_strings(daemon, "cmdline")
        for worker in tree.get(daemon, [])
    ]


def _staged_parts(area: Path) -> list[str]:
    """Part files under `area` not committed yet (below a ``_`` or ``.`` directory)."""
    found = []
    for path in area.rglob("part-*"):
        parts = path.relative_to(area).parts
        if any(p.startswith(("_", ".")) for p in parts[:-1]) and path.is_file():
            found.append("/".join(parts))
    return sorted(found)


# --- the two jobs ------------------------------------------------------------------------


@dataclass
class Run:
    """One engine's job: its process, where it writes, and what the test saw and did."""

    engine: str
    area: Path  # holds only the output: a staging directory would show up next to it
    proc: subprocess.Popen
    started: float
    executor: tuple[int, str] | None = None  # pid, app id
    samples: dict[int, list[tuple[float, int, int | None]]] = field(default_factory=dict)
    first_part: float | None = None  # when the first staged part file was seen
    killed: int | None = None  # the Python worker's pid
    killed_after: float = 0.0  # seconds after the job started
    staged_at_kill: list[str] = field(default_factory=list)
    gone: bool = False  # the killed worker was seen dead
    seconds: float = 0.0
    returncode: int | None = None

    @property
    def output(self) -> Path:
        return self.area / "out"

    def file(self, suffix: str) -> Path:
        return self.area.parent / f"{self.engine}{suffix}"

    def log(self) -> str:
        return "".join(self.file(s).read_text(errors="replace") for s in (".out", ".err"))


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


def _start_job(cluster: StandaloneCluster, engine: str, source: Path, spec: Path) -> Run:
    root = spec.parent
    area = root / engine
    area.mkdir()
    env = _cluster_env(root)
    env["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with scatterkit
    jvm_options = "-XX:TieredStopAtLevel=1"  # short-lived JVMs on two cores start faster
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": jvm_options,
        "spark.executor.memory": "900m",
        "spark.executor.extraJavaOptions": jvm_options,
        f"spark.executorEnv.{MARK}": engine,
        "spark.ui.enabled": "false",
        "spark.cores.max": "1",  # the other core runs the other engine's job
        "spark.executor.cores": "1",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS[engine]),
        # Spark's reader: one partition per input file (not all four in one task).
        "spark.sql.files.openCostInBytes": str(1 << 30),
    }
    cmd = [sys.executable, "-m", "scatterkit.spark", "run", "--spec", str(spec)]
    cmd += ["--input", str(source), "--output", str(area / "out"), "--engine", engine]
    cmd += ["--master", cluster.url, "--log-level", "WARN"]
    cmd += ["--summary-json", str(root / f"{engine}-summary.json")]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    with open(root / f"{engine}.out", "wb") as out, open(root / f"{engine}.err", "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, env=env, cwd=root, start_new_session=True
        )
    return Run(engine, area, proc, time.monotonic())


def _busy(run: Run, workers: list[int], now: float) -> list[int]:
    """The Python workers busy with data: they used CPU and read or wrote in the last
    quarter second (an idle worker, waiting for its next task, does neither)."""
    busy = []
    for pid in workers:
        ticks, io = cpu_ticks(pid), _io_bytes(pid)
        if ticks is None:
            continue
        history = [s for s in run.samples.get(pid, []) if now - s[0] < 2] + [(now, ticks, io)]
        run.samples[pid] = history
        before = [(t, b) for when, t, b in history if now - when >= 0.25]
        if before and ticks > before[-1][0] and (io is None or io > (before[-1][1] or 0)):
            busy.append(pid)
    return busy


def _watch(run: Run, cluster: StandaloneCluster) -> None:
    """One look at a running job: kills a busy Python worker, once, when a task of the
    main stage has been writing its part file for KILL_DELAY seconds."""
    now = time.monotonic()
    if run.killed is not None:
        run.gone = run.gone or cpu_ticks(run.killed) is None  # reaped, or a zombie
        return
    tree = process_tree()
    if run.executor is None:
        run.executor = _executor(tree, cluster.worker_pid, run.engine)
        if run.executor is None:
            return
    busy = _busy(run, _python_workers(tree, run.executor[0]), now)
    staged = _staged_parts(run.area)
    if staged and run.first_part is None:
        run.first_part = now
    if run.first_part is None or now - run.first_part < KILL_DELAY or not busy:
        return
    os.kill(busy[0], signal.SIGKILL)
    run.killed, run.killed_after, run.staged_at_kill = busy[0], now - run.started, staged


@pytest.fixture(scope="module")
def runs(standalone_cluster: StandaloneCluster, tmp_path_factory) -> Iterator[dict]:
    """Both engines' jobs, each with one Python worker killed mid-task; then the data."""
    root = tmp_path_factory.mktemp("retry")
    cols, table = _dataset()
    source = write_parquet(root / "in", table, files=FILES)
    spec = root / "job.json"
    spec.write_text(json.dumps(SPEC))
    started: dict[str, Run] = {}
    try:
        for engine in ENGINES:
            started[engine] = _start_job(standalone_cluster, engine, source, spec)
        deadline = time.monotonic() + JOB_TIMEOUT
        while any(r.returncode is None for r in started.values()):
            assert time.monotonic() < deadline, "the jobs did not finish in time"
            for run in started.values():
                if run.returncode is not None:
                    continue
                _watch(run, standalone_cluster)
                if run.proc.poll() is not None:
                    run.returncode = run.proc.returncode
                    run.seconds = time.monotonic() - run.started
            time.sleep(0.05)
        yield {"cols": cols, "runs": started, "work_dir": standalone_cluster.work_dir}
    finally:
        for run in started.values():
            if run.proc.poll() is None:  # the jobs did not finish: the driver and its JVM go
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait(timeout=30)


# --- the checks --------------------------------------------------------------------------


def _expected(cols: dict[str, np.ndarray]) -> np.ndarray:
    grid, idx, upd = cols["grid"], cols["idx"], cols["upd"]
    return np.stack(
        [
            sk.scatter_elements_update(grid[r], idx[r], upd[r], 1, reduction="sum")
            for r in range(ROWS)
        ]
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_python_worker_is_retried_and_the_output_is_exact(runs, engine):
    run: Run = runs["runs"][engine]
    log = run.log()
    print(
        f"{engine}: job {run.seconds:.1f} s; Python worker {run.killed} killed "
        f"{run.killed_after:.1f} s after the start, while writing {run.staged_at_kill}"
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{log[-8000:]}"
    # The kill: one Python worker of this job, busy while a task wrote its part file.
    assert run.killed is not None, f"no busy Python worker was seen while a task wrote\n{log}"
    assert run.gone, run.killed
    assert run.staged_at_kill

    # The retry: the driver lost the task to the crash; attempt 1 of it finished.
    lost = re.findall(r"Lost task (\d+)\.0 in stage (\d+)\.0 \(TID \d+\) [^\n]*Python worker", log)
    assert len(lost) == 1, log[-8000:]
    task, stage = lost[0]
    assert run.executor is not None
    executors = sorted(runs["work_dir"].glob(f"{run.executor[1]}/*/stderr"))
    executor_log = "".join(p.read_text(errors="replace") for p in executors)
    assert f"Finished task {task}.1 in stage {stage}.0 " in executor_log, executor_log[-8000:]
    tasks = set(re.findall(rf"Finished task (\d+)\.\d+ in stage {stage}\.0 ", executor_log))
    assert len(tasks) > 1, tasks  # the lost task was one of several

    # No temporary files: beside the output nothing (no hidden staging directory), in it
    # one part file per task, _SUCCESS, and the checksums of Hadoop's local file system.
    assert sorted(p.name for p in run.area.iterdir()) == ["out"]
    names = sorted(p.name for p in run.output.iterdir())
    parts = [n for n in names if not n.startswith(("_", "."))]
    for name in names:
        assert (run.output / name).is_file(), names  # no _temporary, no hidden directory
        crc = re.fullmatch(r"\.(.+)\.crc", name)
        assert name in parts or name == "_SUCCESS" or (crc and crc.group(1) in names), names
    assert "_SUCCESS" in names
    assert len(parts) == len(tasks), names
    assert all(pq.read_metadata(run.output / name).num_rows > 0 for name in parts), names

    # Complete, without duplicate rows, exact.
    summary = json.loads(run.file("-summary.json").read_text())
    assert summary["rows_in"] == summary["rows_out"] == ROWS
    table = pq.read_table(run.output)
    ids = table.column("id").to_numpy()
    assert len(ids) == ROWS and len(np.unique(ids)) == ROWS
    assert np.array_equal(np.sort(ids), np.arange(ROWS))
    sums = table.sort_by("id").column("sums").combine_chunks()
    shapes = sums.field("shape").flatten().to_numpy().reshape(ROWS, 2)
    assert (shapes == [2, WIDTH]).all()
    got = sums.field("values").flatten().to_numpy().reshape(ROWS, 2, WIDTH)
    want = _expected(runs["cols"])
    assert got.dtype == want.dtype == np.float64
    assert np.array_equal(got.view(np.uint64), want.view(np.uint64))  # bit for bit
