"""A Python worker killed in the middle of an aggregation on a standalone cluster: the
retried task counts no event twice. Twice: `aggregate` written by Spark, and the same
aggregates as a job's aggregation step on the Arrow engine, whose reduce tasks write their
own files (the killed attempt's file must not reach the output).

A driver (a subprocess, this Python) runs ``aggregate(events, "user", s=sum, m=max, c=int
sum)`` over a Parquet event table on the shared standalone cluster (one executor of two
cores) and writes the groups as Parquet. The plan has two stages with Python tasks: the
map side (``combine_events``, one task per input file) and, after the shuffle by user, the
reduce side (``finish_groups`` over ``spark.sql.shuffle.partitions`` = 2 sorted
partitions). Arrow batches of BATCH_ROWS events, each packed on its own (the session's
``spark.scatterkit.aggregate.flushEvents``), make the tasks last seconds. (With flushes this
small no key is frequent enough within one for the map side to combine it, a group's
states outweighing its events there: the reduce side folds every event itself.)

One user holds half of the events; a tenth of the others' ids are below its id, so the
reduce task that has it first folds and emits small groups, then folds the hot user's
group for seconds, batch after batch, emitting nothing (the group's state is carried from
batch to batch), then emits again. The test watches the executor's Python workers, found
through the Worker JVM's process tree (Worker -> this job's executor JVM ->
``pyspark.daemon`` -> the forked workers), from the end of the map stage (the executor's
log) on, through /proc: the worker that has written output in the reduce stage and since
its last write has read dozens of batches from its socket and computed is in the middle
of the hot user's group (a small group's output follows its batch or two). It is killed
with SIGKILL, once, while the other reduce task still runs; the retry runs next to it.

Spark must retry the task (attempt 1) from the shuffle files, and the output must be what
a run without a failure gives: every user exactly once, each aggregate's ``events`` equal
to the user's events in the input (none counted twice, none lost), the float sums bit for
bit the correctly rounded sums (``math.fsum`` per cell), the maxima NumPy's, the integer
sums exact.
"""

from __future__ import annotations

import json
import math
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
from spark_helpers import pa, pq, write_parquet
from standalone_cluster import (
    StandaloneCluster,
    _cluster_env,
    cpu_ticks,
    proc_strings,
    process_tree,
)

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with other modules.
pytest_plugins = ["standalone_cluster"]

EVENTS = 160_000
SMALL_USERS = 1000  # besides the hot user, who has half of the events
FILES = 4  # one map task per input file
REDUCERS = 2  # reduce tasks (spark.sql.shuffle.partitions, not coalesced)
SHAPE = (24, 16)  # hour x category
BATCH_ROWS = 20  # rows per Arrow batch and events per flush: the Python tasks last seconds
JOB_TIMEOUT = 300  # seconds
# The kill: a worker that, since it last wrote, has read QUIET_READ bytes (dozens of
# batches: a small group's 9 KB of output follows its batch or two, and the worker's
# 64 KiB output buffer goes out every few groups), used QUIET_TICKS of CPU and lasted
# QUIET_SECONDS.
QUIET_READ = 128 << 10
QUIET_TICKS = 3  # clock ticks: 30 ms
QUIET_SECONDS = 0.2
MARK = "SCATTERKIT_AGG_RETRY_TEST"  # in the executor's environment: it serves this job
TASK_LINE = re.compile(r"(Running|Finished) task (\d+)\.(\d+) in stage (\d+)\.0 ")

DRIVER = """
import json
import sys

from scatterkit.spark import functions as skf
from scatterkit.spark.sessions.session import build_session

source, output, master, conf = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = build_session(master=master, conf=conf, app_name="aggregate-retry", log_level="WARN")
# A given schema: no schema-inference job before the aggregation's stages.
schema = "user bigint, hour int, category int, amount double, qty bigint"
events = spark.read.schema(schema).parquet(source)
cells = ["hour", "category"]
result = skf.aggregate(
    events,
    "user",
    s=skf.scatter_nd_agg(cells, "amount", [24, 16], reduction="sum"),
    m=skf.scatter_nd_agg(cells, "amount", [24, 16], reduction="max"),
    c=skf.scatter_nd_agg(cells, "qty", [24, 16], reduction="sum", dtype="bigint"),
)
result.write.parquet(output)
print("aggregate written", flush=True)
"""

# The same aggregates as a job's aggregation step on the Arrow engine: the map tasks read the
# files with pyarrow, the reduce tasks write their own Parquet files, scatterkit commits them.
JOB_DRIVER = """
import json
import sys

from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.sessions.session import build_session
from scatterkit.spark.specs.job_spec import JobSpec

source, output, master, conf = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = build_session(master=master, conf=conf, app_name="aggregate-job-retry", log_level="WARN")
cells = {"indices": ["hour", "category"], "shape": [24, 16]}
aggregates = {
    "s": {**cells, "updates": "amount", "reduction": "sum"},
    "m": {**cells, "updates": "amount", "reduction": "max"},
    "c": {**cells, "updates": "qty", "reduction": "sum"},
}
spec = JobSpec.from_dict({"aggregate": {"by": ["user"], "aggregates": aggregates}})
summary = run_job(spark, spec, source, output, engine="arrow", progress=False)
print("job written on the", summary.engine, "engine", flush=True)
"""
DRIVERS = {"aggregate": DRIVER, "job": JOB_DRIVER}


# --- the events and the reference ---------------------------------------------------------


def _events() -> pa.Table:
    """EVENTS events in no particular order: half of them the hot user's, whose id is
    greater than a tenth of the others' (its group is folded after some small ones, early
    in its task)."""
    rng = np.random.default_rng(31)
    small = rng.choice(10**6, SMALL_USERS, replace=False) * 2 + 10**12  # even ids
    hot = int(np.sort(small)[SMALL_USERS // 10]) + 1  # odd: none of the small ones
    user = np.where(rng.random(EVENTS) < 0.5, hot, rng.choice(small, EVENTS))
    # Magnitudes from 1e-6 to 1e6 with both signs: the rounded sum depends on the order of
    # additions unless the sum is exact.
    amount = rng.standard_normal(EVENTS) * 10.0 ** rng.integers(-6, 7, EVENTS)
    return pa.table(
        {
            "user": pa.array(user, pa.int64()),
            "hour": pa.array(rng.integers(0, SHAPE[0], EVENTS), pa.int32()),
            "category": pa.array(rng.integers(0, SHAPE[1], EVENTS), pa.int32()),
            "amount": pa.array(amount, pa.float64()),
            "qty": pa.array(rng.integers(-(2**52), 2**52, EVENTS), pa.int64()),
        }
    )


@dataclass
class Reference:
    users: np.ndarray  # sorted
    events: np.ndarray  # per user
    sums: np.ndarray  # (users, cells): math.fsum per cell, 0 where no event
    maxima: np.ndarray  # NumPy's maximum per cell, 0 where no event
    qty: np.ndarray  # int64 sums per cell (no overflow: |qty| < 2**52)
    naive_differs: int  # hot user's cells whose sum in input order is not the exact one


def _reference(table: pa.Table) -> Reference:
    user = table.column("user").to_numpy()
    cell = table.column("hour").to_numpy() * SHAPE[1] + table.column("category").to_numpy()
    amount = table.column("amount").to_numpy()
    qty = table.column("qty").to_numpy()
    order = np.lexsort((cell, user))
    u, c, a = user[order], cell[order], amount[order]
    first = np.ones(len(u), bool)
    first[1:] = (u[1:] != u[:-1]) | (c[1:] != c[:-1])
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(u))
    values = a.tolist()
    users, events = np.unique(user, return_counts=True)
    row = np.searchsorted(users, u[starts])
    size = math.prod(SHAPE)
    sums, maxima = np.zeros((len(users), size)), np.zeros((len(users), size))
    sums[row, c[starts]] = [math.fsum(values[s:e]) for s, e in zip(starts, ends)]
    maxima[row, c[starts]] = np.maximum.reduceat(a, starts)
    qty_sums = np.zeros((len(users), size), np.int64)
    qty_sums[row, c[starts]] = np.add.reduceat(qty[order], starts)
    hot = int(users[np.argmax(events)])
    naive = np.zeros(size)
    np.add.at(naive, cell[user == hot], amount[user == hot])  # in input order
    hot_row = int(np.argmax(events))
    differs = int((naive != sums[hot_row]).sum())
    return Reference(users, events, sums, maxima, qty_sums, differs)


# --- the process tree and the executor's log ----------------------------------------------


@dataclass
class Tasks:
    """What the executor's log says: per stage (in order of appearance), the task attempts
    started and finished, as (task index, attempt)."""

    running: dict[int, set[tuple[int, int]]] = field(default_factory=dict)
    finished: dict[int, set[tuple[int, int]]] = field(default_factory=dict)

    @classmethod
    def parse(cls, log: str) -> Tasks:
        tasks = cls()
        for what, task, attempt, stage in TASK_LINE.findall(log):
            started = tasks.running.setdefault(int(stage), set())
            done = tasks.finished.setdefault(int(stage), set())
            (started if what == "Running" else done).add((int(task), int(attempt)))
        return tasks

    def unfinished(self, stage: int) -> set[tuple[int, int]]:
        return self.running[stage] - self.finished[stage]


@dataclass
class Run:
    """The driver's process and what the test saw and did while it ran."""

    root: Path
    kind: str  # a key of DRIVERS
    proc: subprocess.Popen
    started: float
    executor: tuple[int, str] | None = None  # pid, app id
    samples: dict[int, list[tuple[float, int, int, int]]] = field(default_factory=dict)
    first_written: dict[int, int] = field(default_factory=dict)  # wchar when first seen
    killed: int | None = None  # the Python worker's pid
    killed_after: float = 0.0  # seconds after the driver started
    seen_at_kill: list[str] = field(default_factory=list)  # what the workers did, the log
    gone: bool = False
    seconds: float = 0.0
    returncode: int | None = None

    @property
    def output(self) -> Path:
        return self.root / "out"

    def driver_log(self) -> str:
        return "".join(
            (self.root / name).read_text(errors="replace") for name in ("driver.out", "driver.err")
        )


def _start(cluster: StandaloneCluster, root: Path, source: Path, kind: str) -> Run:
    script = root / "driver.py"
    script.write_text(DRIVERS[kind])
    env = _cluster_env(root)
    env["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with scatterkit
    jvm_options = "-XX:TieredStopAtLevel=1"  # short-lived JVMs on two cores start faster
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": jvm_options,
        "spark.executor.memory": "1g",
        "spark.executor.extraJavaOptions": jvm_options,
        "spark.executor.cores": "2",
        "spark.cores.max": "2",
        f"spark.executorEnv.{MARK}": root.name,
        "spark.ui.enabled": "false",
        "spark.task.maxFailures": "2",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS),
        "spark.scatterkit.aggregate.flushEvents": str(BATCH_ROWS),
        "spark.sql.shuffle.partitions": str(REDUCERS),
        "spark.sql.adaptive.coalescePartitions.enabled": "false",  # keep both reducers
        "spark.sql.files.openCostInBytes": str(1 << 30),  # one map task per input file
    }
    cmd = [sys.executable, str(script), str(source), str(root / "out"), cluster.url]
    cmd.append(json.dumps(conf))
    with open(root / "driver.out", "wb") as out, open(root / "driver.err", "wb") as err:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=err, env=env, cwd=root, start_new_session=True
        )
    return Run(root, kind, proc, time.monotonic())


def _find_executor(run: Run, tree: dict[int, list[int]], worker_pid: int) -> None:
    for pid in tree.get(worker_pid, []):
        if f"{MARK}={run.root.name}" in proc_strings(pid, "environ"):
            args = proc_strings(pid, "cmdline")
            if "--app-id" in args:
                run.executor = pid, args[args.index("--app-id") + 1]


def _executor_log(work_dir: Path, app_id: str) -> str:
    return "".join(
        path.read_text(errors="replace") for path in sorted(work_dir.glob(f"{app_id}/*/stderr"))
    )


def _io_bytes(pid: int) -> tuple[int, int] | None:
    """Bytes a process read and wrote through system calls (its socket to the JVM)."""
    try:
        lines = Path(f"/proc/{pid}/io").read_text().splitlines()
    except OSError:
        return None
    counts = dict(line.split(": ") for line in lines)
    return int(counts["rchar"]), int(counts["wchar"])


def _python_workers(tree: dict[int, list[int]], executor_pid: int) -> list[int]:
    """The Python workers of an executor: the processes ``pyspark.daemon`` forked."""
    return [
        worker
        for daemon in tree.get(executor_pid, [])
        if "pyspark.daemon" in proc_strings(daemon, "cmdline")
        for worker in tree.get(daemon, [])
    ]


def _activity(run: Run, tree: dict[int, list[int]], now: float) -> dict[int, tuple]:
    """Per Python worker of the executor: (bytes written since the test first saw it, and
    since it last wrote: seconds, CPU ticks used, bytes read)."""
    assert run.executor is not None
    out = {}
    for pid in _python_workers(tree, run.executor[0]):
        ticks, io = cpu_ticks(pid), _io_bytes(pid)
        if ticks is None or io is None:
            continue
        sample = (now, ticks, *io)
        history = [s for s in run.samples.get(pid, []) if now - s[0] < 10] + [sample]
        run.samples[pid] = history
        first = run.first_written.setdefault(pid, io[1])
        since = len(history) - 1
        while since > 0 and history[since - 1][3] == io[1]:
            since -= 1
        then = history[since]
        out[pid] = (io[1] - first, now - then[0], ticks - then[1], io[0] - then[2])
    return out


def _map_and_reduce(tasks: Tasks) -> tuple[int, int] | None:
    """The map stage (the first with a task per input file) and the reduce stage, the next
    one, once it has started. (The job runs one- and two-task stages before them: the
    cluster's parallelism, the listing of the input.)"""
    stages = list(tasks.running)  # in order of appearance
    for at, stage in enumerate(stages[:-1]):
        if {task for task, _ in tasks.running[stage]} == set(range(FILES)):
            return stage, stages[at + 1]
    return None


def _watch(run: Run, cluster: StandaloneCluster) -> None:
    """One look at the running job: once the map stage is over, kills, once, the Python
    worker that has emitted groups of the reduce stage and since then read many batches
    and computed without writing: the one folding the hot user's group. (Before the
    reduce stage the process tree is read only to find the executor: a look at it costs
    milliseconds of CPU.)"""
    if run.killed is not None:
        run.gone = run.gone or cpu_ticks(run.killed) is None
        return
    if run.executor is None:
        _find_executor(run, process_tree(), cluster.worker_pid)
        return
    tasks = Tasks.parse(_executor_log(cluster.work_dir, run.executor[1]))
    stages = _map_and_reduce(tasks)
    if stages is None:
        return
    map_stage, reduce_stage = stages
    if len(tasks.finished[map_stage]) != FILES or tasks.unfinished(map_stage):
        return
    now = time.monotonic()
    activity = _activity(run, process_tree(), now)
    quiet = [
        pid
        for pid, (emitted, seconds, ticks, read) in activity.items()
        if emitted and read >= QUIET_READ and ticks >= QUIET_TICKS and seconds >= QUIET_SECONDS
    ]
    if not quiet:
        return
    os.kill(quiet[0], signal.SIGKILL)
    run.killed, run.killed_after = quiet[0], now - run.started
    run.seen_at_kill = [
        f"Python worker {pid}{' (killed)' if pid == quiet[0] else ''}: wrote {emitted} B in "
        f"the reduce stage; since its last write {seconds:.2f} s ago: {ticks} CPU ticks, "
        f"read {read} B"
        for pid, (emitted, seconds, ticks, read) in sorted(activity.items())
    ]
    running = sorted(tasks.unfinished(reduce_stage))
    run.seen_at_kill.append(
        f"executor log: map stage {map_stage} done ({len(tasks.finished[map_stage])} tasks); "
        f"reduce stage {reduce_stage}: {sorted(tasks.finished[reduce_stage])} finished, "
        f"{running} running (task, attempt)"
    )


@pytest.fixture(scope="module", params=list(DRIVERS))
def run(
    request, standalone_cluster: StandaloneCluster, tmp_path_factory
) -> Iterator[tuple[Run, Path]]:
    """The aggregation (`aggregate`, then the job) with one Python worker killed mid-task,
    then the input table."""
    root = tmp_path_factory.mktemp(f"aggretry-{request.param}")
    table = _events()
    source = write_parquet(root / "in", table, files=FILES)
    job = _start(standalone_cluster, root, source, request.param)
    try:
        deadline = time.monotonic() + JOB_TIMEOUT
        while job.returncode is None:
            assert time.monotonic() < deadline, "the job did not finish in time"
            _watch(job, standalone_cluster)
            if job.proc.poll() is not None:
                job.returncode = job.proc.returncode
                job.seconds = time.monotonic() - job.started
            time.sleep(0.1)
        yield job, source
    finally:
        if job.proc.poll() is None:  # the driver and its JVM go
            os.killpg(job.proc.pid, signal.SIGKILL)
            job.proc.wait(timeout=30)


# --- the checks ---------------------------------------------------------------------------


def test_a_worker_killed_mid_aggregation_is_retried_and_no_event_counts_twice(
    run, standalone_cluster
):
    job, source = run
    log = job.driver_log()
    print(f"\njob {job.seconds:.1f} s; killed {job.killed_after:.1f} s after the start:")
    print("\n".join(job.seen_at_kill))
    assert job.returncode == 0, f"exit {job.returncode}\n{log[-8000:]}"
    assert job.killed is not None, f"no worker was seen folding a long group\n{log[-8000:]}"
    assert job.gone, job.killed

    # The retry: the driver lost one task of the reduce stage to the crash; attempt 1 of
    # it finished.
    lost = re.findall(
        r"Lost task (\d+)\.(\d+) in stage (\d+)\.0 \(TID \d+\)[^\n]*Python worker", log
    )
    assert len(lost) == 1 and lost[0][1] == "0", log[-8000:]
    task, stage = int(lost[0][0]), int(lost[0][2])
    assert job.executor is not None
    executor_log = _executor_log(standalone_cluster.work_dir, job.executor[1])
    evidence = [line for line in log.splitlines() if "Lost task" in line]
    evidence += [
        line
        for line in executor_log.splitlines()
        if re.search(rf"(Running|Finished) task \d+\.\d+ in stage {stage}\.0 ", line)
    ]
    print("\n".join(evidence))
    tasks = Tasks.parse(executor_log)
    assert sorted(tasks.finished[stage]) == sorted(
        [(t, 0) for t in range(REDUCERS) if t != task] + [(task, 1)]
    ), executor_log[-8000:]
    stages = _map_and_reduce(tasks)
    assert stages is not None, executor_log[-8000:]
    map_stage, reduce_stage = stages
    assert stage == reduce_stage, executor_log[-8000:]
    assert tasks.finished[map_stage] == {(t, 0) for t in range(FILES)}  # no map task redone

    # The output: committed once, one part file per reduce task.
    names = sorted(p.name for p in job.output.iterdir())
    parts = [n for n in names if n.startswith("part-")]
    assert "_SUCCESS" in names and len(parts) == REDUCERS, names
    assert not any(p.is_dir() for p in job.output.iterdir()), names  # no _temporary
    want = _reference(pq.read_table(source))
    if job.kind == "aggregate":
        # The lost task was the hot user's: its part file (named by the partition) holds it.
        # (The job's reduce tasks write no output to Spark until they end, so either of
        # them looks quiet to `_watch`.)
        hot = int(want.users[np.argmax(want.events)])
        (killed_part,) = [n for n in parts if n.startswith(f"part-{task:05d}-")]
        assert hot in pq.read_table(job.output / killed_part).column("user").to_pylist()

    # Every user once; every event counted once; the tensors exact.
    assert want.naive_differs > 0  # the data tell an exact sum from a sum in some order
    got = pq.read_table(job.output).sort_by("user")
    users = got.column("user").to_numpy()
    assert len(users) == len(np.unique(users)) == len(want.users) == SMALL_USERS + 1
    assert np.array_equal(users, want.users)
    size = math.prod(SHAPE)
    for name, values, dtype in (
        ("s", want.sums, np.float64),
        ("m", want.maxima, np.float64),
        ("c", want.qty, np.int64),
    ):
        column = got.column(name).combine_chunks()
        assert column.null_count == 0 and column.field("error").null_count == len(users), name
        assert np.array_equal(column.field("events").to_numpy(), want.events), name
        assert column.field("events").to_numpy().sum() == EVENTS, name
        assert not column.field("dropped").to_numpy().any(), name
        shapes = column.field("shape").flatten().to_numpy().reshape(len(users), len(SHAPE))
        assert (shapes == SHAPE).all(), name
        tensors = column.field("values").flatten().to_numpy().reshape(len(users), size)
        assert tensors.dtype == dtype, name
        assert np.array_equal(tensors.view(np.uint64), values.view(np.uint64)), name  # bits
