"""A Python worker killed in the middle of an aggregation on a standalone cluster, once in a
map task and once in a reduce task: Spark retries each, and no event counts twice. Three
aggregations: `aggregate` (Spark writes the groups), and the same aggregates as a job's
aggregation step on the Arrow engine (the reduce tasks write their own files: the killed
attempt's must not reach the output) and on the Spark engine (Spark's writer into the
job's staging directory).

One driver (a subprocess, this Python) runs the three in turn on the shared standalone
cluster (one executor of two cores), over a Parquet event table of FILES files. Each has
two stages with Python tasks: the map side (``combine_events``, a task per input file) and,
after the shuffle by user, the reduce side (``finish_groups`` over REDUCERS partitions).

The kill lands where the test says, whatever the machine's speed: the executors run with
the test-only pauses of ``scatterkit.spark.runtime.faults`` (``map``: a map task that has
read all its events and sent all but its task-wide states; ``reduce``: a reduce task that
has emitted all its groups but the last, the writer's file open). In each stage the first
task attempt to get there holds, and the test kills its Python worker (SIGKILL); the retry
goes on past the point.

Spark must retry the task (attempt 1) and the output must be what a run without a failure
gives: every user exactly once, each aggregate's ``events`` equal to the user's events in
the input (none counted twice, none lost, in the job's summary too), the float sums bit
for bit the correctly rounded sums (``math.fsum`` per cell), the maxima NumPy's, the
integer sums exact; the output holds the committed files only.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from spark_helpers import pa, pq, write_parquet
from standalone_cluster import (
    Paused,
    Pauses,
    StandaloneCluster,
    app_conf,
    end,
    executor_logs,
    launch,
)

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with other modules.
pytest_plugins = ["standalone_cluster"]

EVENTS = 12_000
SMALL_USERS = 150  # besides the hot user, who has half of the events
FILES = 4  # one map task per input file
REDUCERS = 2  # reduce tasks (spark.sql.shuffle.partitions, not coalesced)
SHAPE = (24, 16)  # hour x category
FLUSH = 1000  # events per flush: the hot user's are folded into a state on the map side
KINDS = ("aggregate", "job-arrow", "job-spark")
JOB_TIMEOUT = 300  # seconds for the three

DRIVER = """
import json
import sys
from dataclasses import asdict

from scatterkit.spark import functions as skf
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.sessions.session import build_session
from scatterkit.spark.specs.job_spec import JobSpec

source, outputs, master, conf = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = build_session(master=master, conf=conf, app_name="aggregation-faults", log_level="WARN")
print(json.dumps({"app": spark.sparkContext.applicationId}), flush=True)
cells = {"indices": ["hour", "category"], "shape": [24, 16]}
aggregates = {
    "s": {**cells, "updates": "amount", "reduction": "sum"},
    "m": {**cells, "updates": "amount", "reduction": "max"},
    "c": {**cells, "updates": "qty", "reduction": "sum"},
}
for kind in sys.argv[5].split(","):
    print(json.dumps({"start": kind}), flush=True)
    output, summary = f"{outputs}/{kind}", None
    if kind == "aggregate":
        # A given schema: no schema-inference job before the aggregation's stages.
        schema = "user bigint, hour int, category int, amount double, qty bigint"
        events = spark.read.schema(schema).parquet(source)
        columns = {
            name: skf.scatter_nd_agg(
                a["indices"], a["updates"], a["shape"], reduction=a["reduction"]
            )
            for name, a in aggregates.items()
        }
        skf.aggregate(events, "user", **columns).write.parquet(output)
    else:
        spec = JobSpec.from_dict({"aggregate": {"by": ["user"], "aggregates": aggregates}})
        engine = kind.split("-")[1]
        summary = asdict(run_job(spark, spec, source, output, engine=engine, progress=False))
        assert summary["engine"] == engine, summary
    print(json.dumps({"done": kind, "summary": summary}), flush=True)
"""


def aggregation_conf() -> dict[str, str]:
    """The aggregations' settings: a map task per input file, REDUCERS reduce tasks."""
    return {
        "spark.sql.execution.arrow.maxRecordsPerBatch": "500",
        "spark.scatterkit.aggregate.flushEvents": str(FLUSH),
        "spark.sql.shuffle.partitions": str(REDUCERS),
        "spark.sql.adaptive.coalescePartitions.enabled": "false",  # keep both reducers
        "spark.sql.files.openCostInBytes": str(1 << 30),  # one map task per input file
    }


# --- the events and the reference ---------------------------------------------------------


def events_table() -> pa.Table:
    """EVENTS events in no particular order, half of them one user's."""
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


def reference(table: pa.Table) -> Reference:
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
    hot = int(np.argmax(events))
    naive = np.zeros(size)
    np.add.at(naive, cell[user == users[hot]], amount[user == users[hot]])  # in input order
    return Reference(users, events, sums, maxima, qty_sums, int((naive != sums[hot]).sum()))


# --- the driver ---------------------------------------------------------------------------


@dataclass
class Faults:
    """The driver's run: what it printed, and the task attempts held, by aggregation."""

    root: Path
    returncode: int | None = None
    seconds: float = 0.0
    app_id: str = ""
    summaries: dict[str, dict | None] = field(default_factory=dict)
    paused: dict[str, list[Paused]] = field(default_factory=dict)

    @property
    def outputs(self) -> Path:
        return self.root / "out"

    def log(self) -> str:
        return "".join(
            (self.root / f"driver.{s}").read_text(errors="replace") for s in ("out", "err")
        )

    def printed(self) -> list[dict]:
        """The driver's JSON lines so far (whole lines: it may be writing one)."""
        lines = (self.root / "driver.out").read_text(errors="replace").split("\n")[:-1]
        return [json.loads(line) for line in lines if line.startswith("{")]

    def running(self) -> str:
        """The aggregation the driver runs now (the last it started)."""
        return [p["start"] for p in self.printed() if "start" in p][-1]

    def finish(self, code: int, started: float) -> None:
        self.returncode, self.seconds = code, time.monotonic() - started
        for line in self.printed():
            self.app_id = line.get("app", self.app_id)
            if "done" in line:
                self.summaries[line["done"]] = line["summary"]


def run_faults(
    cluster: StandaloneCluster,
    root: Path,
    conf: dict[str, str],
    pauses: Pauses,
    act: Callable[[Faults, Paused], None],
    check: Callable[[], None] = lambda: None,
) -> Faults:
    """Runs the three aggregations over the events under ``root/in``; `act(faults,
    paused)` is called once for each task attempt held, `check()` every 0.05 s."""
    driver = root / "driver.py"
    driver.write_text(DRIVER)
    argv = [str(driver), str(root / "in"), str(root / "out"), cluster.url]
    argv += [json.dumps(conf), ",".join(KINDS)]
    faults = Faults(root)
    proc = launch(root, "driver", argv)
    started = time.monotonic()
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < JOB_TIMEOUT, "the driver did not finish in time"
            for paused in pauses.new():
                faults.paused.setdefault(faults.running(), []).append(paused)
                act(faults, paused)
            check()
            time.sleep(0.05)
        faults.finish(proc.returncode, started)
    finally:
        pauses.release_all()  # none may hold on: it would outlive the test
        end(proc)
    return faults


TASK_LINE = re.compile(r"(Running|Finished) task (\d+)\.(\d+) in stage (\d+)\.0 ")


def tasks_of(log: str, stage: int, what: str = "Finished") -> list[tuple[int, int]]:
    """(task, attempt) of a stage that an executor log says started or finished."""
    return sorted(
        (int(t), int(a)) for w, t, a, s in TASK_LINE.findall(log) if w == what and int(s) == stage
    )


# --- the checks ---------------------------------------------------------------------------


def check_output(faults: Faults, kind: str, want: Reference) -> None:
    """The output of `kind`: the committed files only, every user once, every event once,
    the tensors exact; the job's summary counts every event once."""
    assert sorted(p.name for p in faults.outputs.iterdir()) == sorted(KINDS)  # no staging
    output = faults.outputs / kind
    names = sorted(p.name for p in output.iterdir())
    assert not any((output / n).is_dir() for n in names), names  # no _temporary, _attempts
    parts = [n for n in names if n.startswith("part-")]
    for name in names:  # besides them, _SUCCESS and the checksums of Hadoop's file system
        crc = re.fullmatch(r"\.(.+)\.crc", name)
        assert name in parts or name == "_SUCCESS" or (crc and crc.group(1) in names), names
    assert "_SUCCESS" in names and len(parts) == REDUCERS, names  # a file per reduce task

    assert want.naive_differs > 0  # the data tell an exact sum from a sum in some order
    got = pq.read_table(output).sort_by("user")
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

    summary = faults.summaries[kind]
    if summary is not None:  # the job's
        assert summary["rows_in"] == EVENTS and summary["rows_out"] == len(users), summary
        for name in ("s", "m", "c"):
            assert summary["aggregated"][name]["events"] == EVENTS, summary


@pytest.fixture(scope="module")
def faults(standalone_cluster: StandaloneCluster, tmp_path_factory) -> Iterator[Faults]:
    """The three aggregations, each with the Python worker of a map task and of a reduce
    task killed where they hold."""
    root = tmp_path_factory.mktemp("aggretry")
    write_parquet(root / "in", events_table(), files=FILES)
    pauses = Pauses(root / "pauses", ["map", "reduce"])
    conf = app_conf(cores=2, executor_cores=2, memory="1g") | aggregation_conf()
    conf |= pauses.conf | {"spark.task.maxFailures": "2"}

    def kill(faults: Faults, paused: Paused) -> None:
        os.kill(paused.pid, signal.SIGKILL)

    yield run_faults(standalone_cluster, root, conf, pauses, kill)


@pytest.mark.parametrize("kind", KINDS)
def test_a_worker_killed_mid_aggregation_is_retried_and_no_event_counts_twice(
    faults: Faults, kind: str, standalone_cluster: StandaloneCluster
):
    log = faults.log()
    killed = faults.paused.get(kind, [])
    print(f"\n{kind}: the three aggregations in {faults.seconds:.1f} s; killed: {killed}")
    assert faults.returncode == 0, f"exit {faults.returncode}\n{log[-8000:]}"
    # One map task and one reduce task held (their first attempt), and killed there.
    assert sorted(p.point for p in killed) == ["map", "reduce"], killed
    executors = executor_logs(faults.app_id, standalone_cluster.work_dir)["work"]
    for paused in killed:
        assert paused.attempt == 0, paused
        # The driver lost the attempt to the crash; attempt 1 of it finished; every other
        # task of the stage finished once, at its first attempt.
        lost = re.findall(rf"Lost task {re.escape(paused.task)} \(TID {paused.tid}\)[^\n]*", log)
        assert len(lost) == 1 and "Python worker" in lost[0], log[-8000:]
        tasks = {t for t, _ in tasks_of(executors, paused.stage, "Running")}
        assert len(tasks) == (FILES if paused.point == "map" else REDUCERS), executors[-8000:]
        assert tasks_of(executors, paused.stage) == sorted(
            [(t, 0) for t in tasks if t != paused.partition] + [(paused.partition, 1)]
        ), executors[-8000:]
    check_output(faults, kind, reference(pq.read_table(faults.root / "in")))
