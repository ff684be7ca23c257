"""A Python worker killed mid-task on a standalone cluster: Spark retries, the output is exact.

Both engines run the same job at once on the shared standalone cluster (one executor of
one core each: the cluster's two cores), through the CLI, with the executors on this
machine's Python (``PYSPARK_PYTHON``: scatterkit is installed here). While a task of the
job's main stage is writing its part file, the test finds the Python worker running it
through the process tree of the Worker JVM (Worker -> this job's executor JVM ->
``pyspark.daemon`` -> the forked worker busy on the task) and kills it with SIGKILL, once.

Spark must retry the task (attempt 1 of the lost task finishes on the executor) and the
job must succeed with an output that is complete, exact (bit for bit against scatterkit's
NumPy API, row by row), free of duplicate rows and free of temporary files: no
``_temporary``, no hidden staging directory, no part file beyond one per task of the
stage, ``_SUCCESS`` present.
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
import pyarrow.compute as pc
import pytest
from spark_helpers import free_port, pa, pq, tensor_column, write_parquet
from standalone_cluster import StandaloneCluster, _cluster_env

import scatterkit as sk

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with test_cluster.py.
pytest_plugins = ["standalone_cluster"]

ENGINES = ("arrow", "spark")
ROWS, FILES, WIDTH = 4000, 4, 100  # four files: four tasks of the main stage
# Small Arrow batches make the tasks long (seconds) without a big input: the time goes in
# the per-batch work of the Python worker (and, for Spark's writer, of the JVM).
BATCH_ROWS = {"arrow": 1, "spark": 4}
JOB_TIMEOUT = 300  # seconds for both jobs
KILL_DELAY = 0.3  # seconds from the first part file of the stage to the kill
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


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # the thread or the process has just ended
            pass
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _cpu_ticks(pid: int) -> int | None:
    """User and system CPU time of a live process in clock ticks (None: gone or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[11]) + int(fields[12])


def _executor(worker_pid: int, driver_port: int) -> tuple[int, str] | None:
    """The executor JVM (a child of the Worker JVM) of the job whose driver listens on
    `driver_port`, with its application id."""
    for pid in _children(worker_pid):
        args = _cmdline(pid).split()
        if f"spark://CoarseGrainedScheduler@127.0.0.1:{driver_port}" in args:
            return pid, args[args.index("--app-id") + 1]
    return None


def _python_workers(executor_pid: int) -> list[int]:
    """The Python workers of an executor: the processes ``pyspark.daemon`` forked."""
    return [
        worker
        for daemon in _children(executor_pid)
        if "pyspark.daemon" in _cmdline(daemon)
        for worker in _children(daemon)
    ]


def _staged_parts(area: Path) -> list[str]:
    """Part files under `area` not yet committed (below a ``_`` or ``.`` directory)."""
    found = []
    for path in area.rglob("part-*"):
        parts = path.relative_to(area).parts
        if path.is_file() and any(p.startswith(("_", ".")) for p in parts[:-1]):
            found.append("/".join(parts))
    return sorted(found)


# --- the two jobs ------------------------------------------------------------------------


@dataclass
class Run:
    """One engine's job: its process, where it writes, and what the test saw and did."""

    engine: str
    area: Path  # holds only the output: a staging directory would show up next to it
    driver_port: int
    proc: subprocess.Popen
    started: float
    stdout: Path
    stderr: Path
    executor: tuple[int, str] | None = None  # pid, app id
    samples: dict[int, list[tuple[float, int, int]]] = field(default_factory=dict)
    first_part: float | None = None
    killed: int | None = None  # pid
    killed_after: float = 0.0  # seconds after the job started
    staged_at_kill: list[str] = field(default_factory=list)
    seconds: float = 0.0
    returncode: int | None = None

    @property
    def output(self) -> Path:
        return self.area / "out"

    @property
    def summary_path(self) -> Path:
        return self.area.parent / f"{self.engine}-summary.json"

    def log(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")


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
    area = spec.parent / engine
    area.mkdir()
    port = free_port()
    env = _cluster_env(area.parent)
    env["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with scatterkit
    settings = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.port": str(port),  # names this job's executor in the process tree
        "spark.driver.memory": "1g",
        "spark.executor.memory": "900m",
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
    cmd += ["--summary-json", str(spec.parent / f"{engine}-summary.json")]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    stdout, stderr = spec.parent / f"{engine}.out", spec.parent / f"{engine}.err"
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, env=env, cwd=area.parent, start_new_session=True
        )
    return Run(engine, area, port, proc, time.monotonic(), stdout, stderr)


def _io_bytes(pid: int) -> int | None:
    """Bytes a process read and wrote through system calls (files, sockets, pipes)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    counts = dict(line.split(": ") for line in lines)
    return int(counts["rchar"]) + int(counts["wchar"])


def _busy(run: Run, now: float) -> list[int]:
    """The job's Python workers busy with data: they used CPU and read or wrote in the
    last quarter second (an idle worker, waiting for its next task, does neither)."""
    assert run.executor is not None
    busy = []
    for pid in _python_workers(run.executor[0]):
        ticks, io = _cpu_ticks(pid), _io_bytes(pid)
        if ticks is None or io is None:
            continue
        history = run.samples.setdefault(pid, [])
        history.append((now, ticks, io))
        before = [(t, b) for when, t, b in history if now - when >= 0.25]
        if before and ticks > before[-1][0] and io > before[-1][1]:
            busy.append(pid)
    return busy


def _watch(run: Run, cluster: StandaloneCluster) -> None:
    """One look at a running job: kills a busy Python worker once a task of the stage
    has written for KILL_DELAY seconds."""
    now = time.monotonic()
    if run.executor is None:
        run.executor = _executor(cluster.worker_pid, run.driver_port)
        if run.executor is None:
            return
    busy = _busy(run, now)
    if run.killed is not None:
        return
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
        while any(r.proc.poll() is None for r in started.values()):
            assert time.monotonic() < deadline, "the jobs did not finish in time"
            for run in started.values():
                if run.proc.poll() is None:
                    _watch(run, standalone_cluster)
                elif run.returncode is None:
                    run.returncode, run.seconds = (
                        run.proc.returncode,
                        time.monotonic() - run.started,
                    )
            time.sleep(0.05)
        for run in started.values():
            if run.returncode is None:
                run.returncode, run.seconds = run.proc.returncode, time.monotonic() - run.started
        yield {"cols": cols, "runs": started, "work_dir": standalone_cluster.work_dir}
    finally:
        for run in started.values():
            if run.proc.poll() is None:  # a failed test: the driver and its JVM go
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait(timeout=30)


# --- the checks --------------------------------------------------------------------------


def _executor_log(work_dir: Path, app_id: str) -> str:
    return "".join(
        p.read_text(errors="replace") for p in sorted(work_dir.glob(f"{app_id}/*/stderr"))
    )


def _expected(cols: dict[str, np.ndarray]) -> np.ndarray:
    return np.stack(
        [
            sk.scatter_elements_update(
                cols["grid"][r], cols["idx"][r], cols["upd"][r], 1, reduction="sum"
            )
            for r in range(ROWS)
        ]
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_python_worker_is_retried_and_the_output_is_exact(runs, engine):
    run: Run = runs["runs"][engine]
    log = run.log()
    print(
        f"{engine}: job {run.seconds:.1f} s, worker {run.killed} killed at {run.killed_after:.1f} s"
        f" while writing {run.staged_at_kill}"
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{log[-8000:]}"
    # The kill: one Python worker of this job, busy while its task was writing.
    assert run.killed is not None, f"no busy Python worker was seen while a task wrote\n{log}"
    assert _cpu_ticks(run.killed) is None  # it is gone
    assert run.staged_at_kill, run.staged_at_kill

    # The retry: the driver lost the task (its worker crashed), attempt 1 of it finished.
    lost = re.findall(r"Lost task (\d+)\.0 in stage (\d+)\.0 \(TID \d+\) [^\n]*Python worker", log)
    assert len(lost) == 1, log[-8000:]
    task, stage = lost[0]
    assert run.executor is not None
    executor_log = _executor_log(runs["work_dir"], run.executor[1])
    assert f"Finished task {task}.1 in stage {stage}.0" in executor_log, executor_log[-8000:]
    finished = set(re.findall(rf"Finished task (\d+)\.\d+ in stage {stage}\.0 ", executor_log))
    assert len(finished) == FILES, finished  # one task per input file

    # No temporary files: beside the output nothing (no hidden staging directory), in it
    # the part files of the stage's tasks, _SUCCESS and the checksums Hadoop writes.
    assert sorted(p.name for p in run.area.iterdir()) == ["out"]
    names = sorted(p.name for p in run.output.iterdir())
    parts = [n for n in names if not n.startswith(("_", "."))]
    for name in names:
        path = run.output / name
        assert path.is_file(), name  # no _temporary, no hidden directory
        crc = re.fullmatch(r"\.(.+)\.crc", name)
        assert name in parts or name == "_SUCCESS" or (crc and crc.group(1) in names), names
    assert "_SUCCESS" in names
    assert len(parts) == len(finished), names
    ids = [pq.read_table(run.output / name, columns=["id"]).column("id") for name in parts]
    assert all(len(i) > 0 for i in ids), names

    # Complete, no duplicate row, exact.
    table = pq.read_table(run.output)
    got_ids = table.column("id").to_numpy()
    assert len(got_ids) == ROWS and len(np.unique(got_ids)) == ROWS
    assert np.array_equal(np.sort(got_ids), np.arange(ROWS))
    summary = json.loads(run.summary_path.read_text())
    assert summary["rows_in"] == summary["rows_out"] == ROWS
    table = table.sort_by("id")
    sums = table.column("sums").combine_chunks()
    shapes = pc.list_flatten(sums.field("shape")).to_numpy().reshape(ROWS, 2)
    assert (shapes == [2, WIDTH]).all()
    values = pc.list_flatten(sums.field("values")).to_numpy().reshape(ROWS, 2, WIDTH)
    want = _expected(runs["cols"])
    assert values.dtype == want.dtype
    assert np.array_equal(values.view(np.uint64), want.view(np.uint64))  # bit for bit
