"""Scale and skew (#51): the event aggregation on 100M events with Zipf keys, the Python
workers' memory capped.

bench_events.py's workload (per entity, three [24, 16] float tensors: the sum, max and mean
of ``amount`` per (hour, category) cell) on two event sets of the same columns, generated
once under ``--workdir`` and reused:

- *uniform*: ``--uniform-events`` (20M) events, keys uniform over ``--uniform-entities``
  (200,000): bench_events.py's set;
- *zipf*: ``--zipf-events`` (100M) events, keys drawn from a Zipf law of exponent
  ``--zipf-exponent`` (1.2) over ``--zipf-entities`` (1,000,000: as many groups per event as
  the uniform set), the hottest key about 19% of the events (the report gives the share the
  draw gave);

each in files of ``--events-per-file`` (5M) events: ``user_id`` int (bench_events.py writes a
bigint), ``hour`` int 0..23, ``category`` int 0..15, ``amount`` float log-normal(3, 1).

Two contenders on each set, interleaved, on ``local[2]`` with ``spark.executor.pyspark.memory``
set (``--pyspark-memory``: PySpark makes it each Python worker's address-space limit): the
scatterkit job's aggregation step on the Arrow engine (``run_job``) and ``skf.aggregate``
written by Spark as Parquet (bench_events.py's (f) and (d)). Each run is checked: as many
groups as keys, every event folded once, the hottest key's events in its group.

The Python workers' memory is read from /proc, not reported by the workers: a thread of this
driver samples every ``--sample-every`` seconds the processes that Spark's ``pyspark.daemon``
forked (the workers, below this driver's JVM), keeping each one's VmHWM (peak resident set)
and VmPeak (peak address space, what the cap limits). Before each run the workers' VmHWM is
reset (``/proc/PID/clear_refs``), so a run's peak is its own though the workers are reused;
VmPeak cannot be reset and is the workers' lifetime peak. A worker's VmHWM holds its peak
whenever it is read, and reused workers live past a run, so sampling misses nothing. A first
job measures what a worker holds once it has imported and run the aggregation on a few events
(R0 resident, V0 address space): the base of the bound the report gives (see the RESULTS).

    python bench/spark/bench_scale.py [--repeat 3] [--pyspark-memory 1536m] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_events import (  # noqa: E402  (a script beside this one)
    CATEGORIES,
    HOURS,
    SHAPE,
    StageMeter,
    _load,
    machine,
    scatterkit_aggregate,
    scatterkit_job,
)

from scatterkit.spark.aggregation import tasks  # noqa: E402
from scatterkit.spark.aggregation.wire import AggPlan  # noqa: E402
from scatterkit.spark.runtime.piece_task import ROW_GROUP_BYTES  # noqa: E402
from scatterkit.spark.sessions.session import DEFAULT_CONF, build_session  # noqa: E402
from scatterkit.spark.specs.agg_spec import check_agg  # noqa: E402

MB = 1 << 20


# --- the events ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EventSet:
    name: str
    events: int
    entities: int
    exponent: float | None  # Zipf's; None: uniform keys
    per_file: int
    seed: int

    @property
    def directory(self) -> str:
        law = f"zipf{self.exponent:g}" if self.exponent else "uniform"
        return f"events-{law}-{self.events}-{self.entities}-{self.per_file}-seed{self.seed}"


def _key_sampler(events: EventSet, rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """n keys at a time: uniform, or Zipf by rank (the rank-r key has probability
    r^-s / H(N, s)) over the entities in a fixed random order."""
    n = events.entities
    if events.exponent is None:
        return lambda size: rng.integers(0, n, size, dtype=np.int32)
    weights = np.arange(1, n + 1, dtype=np.float64) ** -events.exponent
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    ids = rng.permutation(n).astype(np.int32)  # the entity of each rank

    def draw(size: int) -> np.ndarray:
        rank = np.searchsorted(cdf, rng.random(size), side="right")
        return ids[np.minimum(rank, n - 1)]

    return draw


def generate(events: EventSet, workdir: Path) -> tuple[Path, dict]:
    """The events in Parquet files (snappy), written once: a finished directory (with its
    _DONE marker, which holds the key counts' summary) is reused."""
    path = workdir / events.directory
    done = path / "_DONE"
    if done.exists():
        return path, json.loads(done.read_text())
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    rng = np.random.default_rng(events.seed)
    keys = _key_sampler(events, rng)
    counts = np.zeros(events.entities, np.int64)
    for number, start in enumerate(range(0, events.events, events.per_file)):
        n = min(events.per_file, events.events - start)
        user = keys(n)
        counts += np.bincount(user, minlength=events.entities)
        table = pa.table(
            {
                "user_id": pa.array(user),
                "hour": pa.array(rng.integers(0, HOURS, n, dtype=np.int32)),
                "category": pa.array(rng.integers(0, CATEGORIES, n, dtype=np.int32)),
                "amount": pa.array(rng.lognormal(3.0, 1.0, n).astype(np.float32)),
            }
        )
        pq.write_table(table, path / f"part-{number:04d}.parquet")
    order = np.argsort(counts)[::-1]
    summary = {
        "events": events.events,
        "files": number + 1,
        "keys": int(np.count_nonzero(counts)),
        "hottest_key": int(order[0]),
        "hottest_events": int(counts[order[0]]),
        "top10_events": int(counts[order[:10]].sum()),
        # per flush of a map task, how many events a key needs to be folded there (below)
        "counts_desc": [int(c) for c in counts[order[:1000]]],
    }
    done.write_text(json.dumps(summary))
    return path, summary


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / MB


# --- the Python workers' memory, from /proc --------------------------------------------------


def _status(pid: int) -> dict[str, int]:
    """VmHWM, VmPeak, VmRSS and VmSize of a process, in MB ({} once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    found = re.findall(r"^(VmHWM|VmPeak|VmRSS|VmSize):\s+(\d+) kB", text, re.MULTILINE)
    return {k: int(v) // 1024 for k, v in found}


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(parent, []).append(int(entry))
    return tree


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def python_workers() -> list[int]:
    """The Python workers below this driver: the children of ``pyspark.daemon`` (forked, so
    their command line is the daemon's; the daemon's parent is the JVM)."""
    tree, found, stack = _children(), [], [os.getpid()]
    while stack:
        for child in tree.get(stack.pop(), []):
            if b"pyspark.daemon" in _cmdline(child):
                found += tree.get(child, [])
            else:
                stack.append(child)
    return found


def worker_cap(pid: int) -> str:
    """The address-space limit a worker runs under, and PySpark's setting for it."""
    try:
        limits = Path(f"/proc/{pid}/limits").read_text()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return "?"
    soft = re.search(r"Max address space\s+(\S+)", limits)
    setting = [e.decode() for e in environ if e.startswith(b"PYSPARK_EXECUTOR_MEMORY_MB=")]
    limit = soft.group(1) if soft else "?"
    limit = f"{int(limit) // MB} MB" if limit.isdigit() else limit
    return f"RLIMIT_AS {limit} ({', '.join(setting) or 'PYSPARK_EXECUTOR_MEMORY_MB unset'})"


class WorkerMemory:
    """Samples the Python workers' VmHWM and VmPeak in a thread (see the module docstring)."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.hwm: dict[int, int] = {}
        self.peak: dict[int, int] = {}
        self.cap = "?"
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        workers = python_workers()
        with self._lock:
            for pid in workers:
                status = _status(pid)
                if status:
                    self.hwm[pid] = max(self.hwm.get(pid, 0), status.get("VmHWM", 0))
                    self.peak[pid] = max(self.peak.get(pid, 0), status.get("VmPeak", 0))
            if self.cap == "?" or "unlimited" in self.cap:  # a worker sets it at its task
                for pid in workers:
                    self.cap = worker_cap(pid)
                    if "unlimited" not in self.cap:
                        break

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def start_run(self) -> None:
        """Forgets the peaks so far: each live worker's VmHWM is reset to its VmRSS."""
        with self._lock:
            for pid in python_workers():
                try:
                    Path(f"/proc/{pid}/clear_refs").write_text("5")
                except OSError:
                    pass
            self.hwm = {}

    def end_run(self) -> tuple[int, int, int]:
        """(the largest VmHWM of a worker since `start_run`, the largest lifetime VmPeak,
        how many workers were seen), in MB."""
        self._sample()
        with self._lock:
            return (
                max(self.hwm.values(), default=0),
                max(self.peak.values(), default=0),
                len(self.hwm),
            )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _probe(batches):  # in a Python worker: what it holds once it has aggregated a few events
    import numpy as np
    import pyarrow as pa

    from scatterkit.spark.aggregation.tasks import combine_events, finish_groups

    for _ in batches:
        pass
    plan = _plan()
    n = 10_000
    rng = np.random.default_rng(0)
    events = pa.RecordBatch.from_arrays(
        [pa.array(rng.integers(0, 100, n, dtype=np.int32))]
        + [pa.array(rng.integers(0, e, n, dtype=np.int32)) for e in SHAPE]
        + [pa.array(rng.random(n, dtype=np.float32))],
        names=["__key0", "__coord0", "__coord1", "__value0"],
    )
    packed = pa.Table.from_batches(list(combine_events(plan, iter([events]))))
    packed = packed.sort_by("__key0").combine_chunks().to_batches()
    for _ in finish_groups(plan, iter(packed)):
        pass
    status = Path("/proc/self/status").read_text()
    rss, size = (int(re.search(rf"{k}:\s+(\d+) kB", status).group(1)) for k in ("VmRSS", "VmSize"))
    yield pa.RecordBatch.from_pydict({"rss": [rss // 1024], "size": [size // 1024]})


# --- the bound ------------------------------------------------------------------------------

# Bytes a worker holds per event (derived in bench/spark/RESULTS.md, "Scale and skew", from
# aggregation/tasks.py and states.py, and measured on one flush and on one 64 MB batch):
# of a flush: the events twice, then offsets, sort order, sorted copies, behind the pyarrow
# reader of both contenders' map tasks (the gathered slices keep their row groups; 100 B
# where Spark's batches feed it, as for an skf.aggregate over more than a plain scan)
MAP_BYTES_PER_EVENT = 130
TERM_BYTES = 12  # per event of a hot key, per exact float aggregate: an int64 target, a value
REDUCE_BYTES_PER_EVENT = 80  # of an input batch: its events unpacked, offsets, targets, terms
PACKED_EVENT_BYTES = 8  # an event in a packed row: its int32 cell and float32 value


def _plan() -> AggPlan:
    specs = [
        check_agg(["hour", "category"], "amount", SHAPE, reduction=r).with_dtype("float")
        for r in ("sum", "max", "mean")
    ]
    return AggPlan(("user_id",), tuple(specs))


@dataclass
class Bound:
    """The terms of a worker's peak, in MB, over its base R0 (bench/spark/RESULTS.md)."""

    flush_events: int
    task_events: int
    hot_events: int  # events of keys folded map-side in a task (worst case: all of them)
    batch_bytes: int
    job: bool  # the job's reduce task writes its Parquet file itself

    @property
    def map_side(self) -> float:
        exact = 2  # sum and mean keep terms; max folds in place
        return (
            MAP_BYTES_PER_EVENT * min(self.flush_events, self.task_events)
            + TERM_BYTES * exact * self.hot_events
            + tasks.STATE_BUDGET
            + min(tasks.PACKED_BYTES, PACKED_EVENT_BYTES * self.task_events)  # runs gathered
        ) / MB

    @property
    def reduce_side(self) -> float:
        events = self.batch_bytes // PACKED_EVENT_BYTES
        writer = 2 * ROW_GROUP_BYTES if self.job else 0  # batches gathered, the row group
        total = self.batch_bytes + REDUCE_BYTES_PER_EVENT * events + tasks.STATE_BUDGET + writer
        return total / MB

    @property
    def peak(self) -> float:
        """One task's."""
        return max(self.map_side, self.reduce_side)

    @property
    def reused(self) -> float:
        """A reused worker's, if its allocators kept all its earlier tasks freed."""
        return self.map_side + self.reduce_side


def hot_events(summary: dict, flush_events: int, state_bytes: int, event_bytes: int) -> float:
    """The share of the events whose key is folded map-side in a flush (it has at least
    ``state_bytes`` of events there, `tasks._pack_flush`), keys spread evenly over flushes."""
    threshold = max(2, state_bytes // event_bytes)
    counts = np.asarray(summary["counts_desc"], np.float64)
    per_flush = counts * flush_events / summary["events"]
    return float(counts[per_flush >= threshold].sum() / summary["events"])


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Outcome:
    events: EventSet
    contender: str
    seconds: list[float] = field(default_factory=list)
    shuffle: list[int] = field(default_factory=list)
    hwm: list[int] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)
    check: str = ""
    error: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    @property
    def per_event_ns(self) -> float:
        return self.median / self.events.events * 1e9


CONTENDERS: dict[str, tuple[str, Callable[[DataFrame, Path, Path], None]]] = {
    "job": ("the job's aggregation (arrow engine)", scatterkit_job),
    "aggregate": ("skf.aggregate, written by Spark", scatterkit_aggregate),
}


def check_output(spark: SparkSession, out: Path, summary: dict) -> str:
    """'ok' if the output holds a row per key, every event once and the hottest key's
    events in its group; else what differs."""
    got = (
        spark.read.parquet(str(out))
        .agg(
            F.count("*").alias("groups"),
            F.sum("spend_sum.events").alias("events"),
            F.max(
                F.when(F.col("user_id") == summary["hottest_key"], F.col("spend_max.events"))
            ).alias("hottest"),
        )
        .first()
    )
    want = (summary["keys"], summary["events"], summary["hottest_events"])
    have = (got.groups, got.events, got.hottest)
    if have == want:
        return "ok"
    return f"groups, events, hottest key's events {have} != {want}"


def run_once(
    spark: SparkSession,
    meter: StageMeter,
    memory: WorkerMemory,
    outcome: Outcome,
    path: Path,
    summary: dict,
    out: Path,
    tag: str,
    timed: bool,
) -> None:
    group = f"{outcome.events.name}-{outcome.contender}-{tag}"
    spark.sparkContext.setJobGroup(group, f"bench_scale {group}")
    shutil.rmtree(out, ignore_errors=True)
    events = spark.read.parquet(str(path))
    memory.start_run()
    started = time.perf_counter()
    try:
        CONTENDERS[outcome.contender][1](events, path, out)
    except Exception as exc:  # a failing run is reported, not fatal
        outcome.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        print(f"{group} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        return
    seconds = time.perf_counter() - started
    hwm, _, workers = memory.end_run()
    shuffle = meter.shuffle_bytes(group)
    check = check_output(spark, out, summary)
    shutil.rmtree(out, ignore_errors=True)
    print(
        f"{group}: {seconds:.1f} s, shuffle {shuffle / MB:.0f} MB, worker peak RSS {hwm} MB "
        f"({workers} workers), {check}",
        flush=True,
    )
    if check != "ok":
        outcome.check = check
    elif not outcome.check:
        outcome.check = "ok"
    if timed:
        outcome.seconds.append(seconds)
        outcome.shuffle.append(shuffle)
        outcome.hwm.append(hwm)
        outcome.workers.append(workers)


# --- the report -----------------------------------------------------------------------------


def report(
    args: argparse.Namespace,
    header: list[str],
    loads: list[str],
    sets: dict[str, tuple[EventSet, Path, dict]],
    outcomes: list[Outcome],
    base: dict[str, int],
    memory: WorkerMemory,
    lifetime_peak: int,
    bounds: dict[tuple[str, str], tuple[Bound, Bound]],
) -> list[str]:
    lines = [
        "### bench_scale.py",
        "",
        f"`python bench/spark/bench_scale.py --repeat {args.repeat} --pyspark-memory "
        f"{args.pyspark_memory}` (`{args.master}`, driver memory {args.driver_memory}, "
        f"spark.executor.pyspark.memory {args.pyspark_memory}: {memory.cap}; the workers' "
        f"MIMALLOC_ARENA_RESERVE {args.arena_reserve or 'unset'}; Arrow batches of "
        f"{DEFAULT_CONF['spark.sql.execution.arrow.maxRecordsPerBatch']} rows / "
        f"{int(DEFAULT_CONF['spark.sql.execution.arrow.maxBytesPerBatch']) // MB} MB; median of "
        f"{args.repeat} interleaved rounds after a warm-up round on the uniform set):",
        "",
        *header,
        f"- load average: {loads[0]} before the timed runs, {loads[-1]} after them",
    ]
    for name, (events, path, summary) in sets.items():
        law = f"Zipf, exponent {events.exponent:g}" if events.exponent else "uniform"
        lines.append(
            f"- {name}: {events.events:,} events in {summary['files']} files "
            f"({disk_mb(path):,.0f} MB), keys {law} over {events.entities:,} entities: "
            f"{summary['keys']:,} keys, the hottest {summary['hottest_events']:,} events "
            f"(**{summary['hottest_events'] / events.events:.1%}**), the ten hottest "
            f"{summary['top10_events'] / events.events:.1%}"
        )
    lines += [
        "",
        "| events | contender | seconds | ns per event | vs uniform, per event | per round "
        "| shuffle MB | worker peak RSS, MB | bound: a task / a reused worker, MB | check "
        "| runs (s) |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | --- |",
    ]
    uniform = {o.contender: o for o in outcomes if o.events.name == "uniform"}
    for o in outcomes:
        if o.error:
            lines.append(f"| {o.events.name} | {o.contender} | failed: {o.error} |" + " |" * 8)
            continue
        if not o.seconds:
            continue
        twin = uniform[o.contender]
        ratio = o.per_event_ns / twin.per_event_ns
        scale = twin.events.events / o.events.events  # the rounds ran back to back
        rounds = (
            ", ".join(f"{a / b * scale:.2f}" for a, b in zip(o.seconds, twin.seconds))
            if o is not twin
            else ""
        )
        mark = "" if ratio <= args.target else "**"
        bound = bounds[(o.events.name, o.contender)][0]
        runs = ", ".join(f"{s:.1f}" for s in o.seconds)
        lines.append(
            f"| {o.events.name} {o.events.events // 1_000_000}M | "
            f"{CONTENDERS[o.contender][0]} | {o.median:.1f} | {o.per_event_ns:,.0f} | "
            f"{mark}{ratio:.2f}x{mark} | {rounds} | {statistics.median(o.shuffle) / MB:,.0f} | "
            f"{max(o.hwm):,} | {base['rss'] + bound.peak:,.0f} / "
            f"{base['rss'] + bound.reused:,.0f} | {o.check} | {runs} |"
        )
    lines += [
        "",
        f"- worker base (a worker that has run the aggregation on 10,000 events): R0 = "
        f"{base['rss']} MB resident, V0 = {base['size']} MB of address space; the workers' "
        f"lifetime peak address space (VmPeak): {lifetime_peak:,} MB.",
        "- *worker peak RSS*: the largest VmHWM of a Python worker in any timed run (reset "
        "to its resident set before each run); *bound*: R0 + the formula's worst case for that "
        "run's tasks (below): one task's (R0 + max(map, reduce)), a reused worker's (R0 + map "
        "+ reduce).",
    ]
    for (name, contender), (worst, data) in bounds.items():
        lines.append(
            f"- bound terms, {name} / {contender}: map side {worst.map_side:,.0f} MB at worst "
            f"({worst.task_events:,} events a task, all of them hot), {data.map_side:,.0f} MB "
            f"for this data ({data.hot_events:,} hot events a task); reduce side "
            f"{worst.reduce_side:,.0f} MB at worst"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zipf-events", type=int, default=100_000_000)
    parser.add_argument("--zipf-entities", type=int, default=1_000_000)
    parser.add_argument("--zipf-exponent", type=float, default=1.2)
    parser.add_argument("--uniform-events", type=int, default=20_000_000)
    parser.add_argument("--uniform-entities", type=int, default=200_000)
    parser.add_argument("--events-per-file", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument(
        "--pyspark-memory",
        default="1536m",
        help="spark.executor.pyspark.memory: each Python worker's address-space limit",
    )
    parser.add_argument(
        "--arena-reserve",
        default="64MiB",
        help="the workers' MIMALLOC_ARENA_RESERVE ('' leaves mimalloc's 1 GiB, which counts "
        "against the address-space limit)",
    )
    parser.add_argument("--target", type=float, default=1.3, help="zipf / uniform per event")
    parser.add_argument("--sample-every", type=float, default=0.25, help="seconds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--workdir",
        default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "scatterkit-bench-scale"),
        help="events (reused when present) and outputs",
    )
    parser.add_argument("--keep", action="store_true", help="keep the events for another run")
    parser.add_argument("--out", default="", help="the report (default: WORKDIR/RESULTS_SCALE.md)")
    args = parser.parse_args()

    workdir = Path(args.workdir)
    out_path = Path(args.out) if args.out else workdir / "RESULTS_SCALE.md"
    wanted = {
        "uniform": EventSet(
            "uniform", args.uniform_events, args.uniform_entities, None, args.events_per_file,
            args.seed,
        ),
        "zipf": EventSet(
            "zipf", args.zipf_events, args.zipf_entities, args.zipf_exponent,
            args.events_per_file, args.seed + 1,
        ),
    }  # fmt: skip
    sets = {}
    for name, events in wanted.items():
        started = time.perf_counter()
        path, summary = generate(events, workdir)
        print(
            f"{name} events ready in {time.perf_counter() - started:.0f} s: {path} "
            f"({disk_mb(path):,.0f} MB), hottest key "
            f"{summary['hottest_events'] / events.events:.1%}",
            flush=True,
        )
        sets[name] = (events, path, summary)

    header = machine()
    conf = {
        "spark.driver.memory": args.driver_memory,
        "spark.executor.pyspark.memory": args.pyspark_memory,
        "spark.ui.enabled": "true",
    }
    if args.arena_reserve:  # pyarrow's allocator reserves 1 GiB of address space at once
        conf["spark.executorEnv.MIMALLOC_ARENA_RESERVE"] = args.arena_reserve
    spark = build_session(master=args.master, conf=conf, app_name="scatterkit-bench-scale")
    meter = StageMeter(spark)
    memory = WorkerMemory(args.sample_every)
    probe = spark.range(1, numPartitions=1).mapInArrow(_probe, "rss long, size long").first()
    base = {"rss": probe.rss, "size": probe.size}
    print(f"worker base: {base}, {memory.cap}", flush=True)

    plan = _plan()
    flush = plan.flush_events or tasks.FLUSH_EVENTS
    event_bytes = 16  # key, hour, category, amount: 4 bytes each
    compact_bytes = 12  # the combiner's sorted events: key, cell, value
    flush = min(flush, -(-tasks.FLUSH_BYTES // event_bytes))
    batch_bytes = int(DEFAULT_CONF["spark.sql.execution.arrow.maxBytesPerBatch"])
    bounds = {}
    for name, (events, _, summary) in sets.items():
        hot = hot_events(summary, flush, plan.state_bytes(), compact_bytes)
        for contender in CONTENDERS:
            # a map task reads a file (both: skf.aggregate over a plain scan reads its files)
            task = events.per_file
            job = contender == "job"
            worst = Bound(flush, task, task, batch_bytes, job)
            data = Bound(flush, task, math.ceil(hot * task), batch_bytes, job)
            bounds[(name, contender)] = (worst, data)

    outcomes = [Outcome(sets[s][0], c) for c in CONTENDERS for s in sets]
    loads = [_load()]
    outputs = workdir / "outputs"

    def publish(stage: str) -> None:
        lifetime = memory.end_run()[1]
        lines = report(args, header, loads, sets, outcomes, base, memory, lifetime, bounds)
        if stage:
            lines.insert(2, f"*Incomplete: {stage}.*\n")
        out_path.write_text("\n".join([*lines, ""]))

    try:
        for attempt in range(args.repeat + 1):
            for outcome in outcomes:
                if outcome.error or (attempt == 0 and outcome.events.name != "uniform"):
                    continue
                _, path, summary = sets[outcome.events.name]
                out = outputs / f"{outcome.events.name}-{outcome.contender}"
                tag = f"run{attempt}"
                run_once(spark, meter, memory, outcome, path, summary, out, tag, attempt > 0)
            if attempt:
                loads.append(_load())
                publish(f"{attempt} of {args.repeat} timed rounds done")
        publish("")
    finally:
        memory.stop()
        spark.stop()
        shutil.rmtree(outputs, ignore_errors=True)
        if not args.keep:
            for _, path, _ in sets.values():
                shutil.rmtree(path, ignore_errors=True)
    print(out_path.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
