"""What any way of building bench_events.py's tensors pays, beside the two fastest ways.

On the event table of bench_events.py (run it first: it writes the events and reuses them),
in one Spark session, interleaved rounds of:

- ``read``: the events read from Parquet, nothing else (``noop`` writer);
- ``python round trip``: the events read, through an identity ``mapInArrow`` (Spark to a
  Python worker and back, as any Python step that sees every event pays), ``noop``;
- ``shuffle``: the events read, repartitioned by entity and sorted within partitions, ``noop``;
- ``write``: the finished tensors (a copy of (d)'s output, read back) written as Parquet
  again: the output every contender writes, 200,000 rows of three [24, 16] float tensors;
- ``(b)`` and ``(d)``: bench_events.py's collect_list + column functions and
  ``skf.aggregate``, written as Parquet.

Medians of ``--repeat`` rounds after a warm-up round. ``read`` + ``write`` bound every
contender from below; ``python round trip`` + ``write`` bounds any contender that shows
each event to Python once.

    python bench/spark/bench_events_bounds.py [--events 20000000] [--entities 200000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
from bench_events import generate, scatterkit_aggregate, scatterkit_columns
from pyspark.sql import DataFrame, SparkSession

from scatterkit.spark.sessions.session import build_session


def _identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def _noop(df: DataFrame) -> None:
    df.write.mode("overwrite").format("noop").save()


def cases(spark: SparkSession, events: DataFrame, work: Path) -> dict[str, Callable[[], None]]:
    tensors = work / "tensors"
    if not (tensors / "_SUCCESS").exists():
        scatterkit_aggregate(events, tensors)
    finished = spark.read.parquet(str(tensors))
    return {
        "read": lambda: _noop(events),
        "python round trip": lambda: _noop(events.mapInArrow(_identity, events.schema)),
        "shuffle": lambda: _noop(events.repartition("user_id").sortWithinPartitions("user_id")),
        "write": lambda: finished.write.mode("overwrite").parquet(str(work / "rewritten")),
        "(b) collect_list + columns": lambda: scatterkit_columns(events, work / "b"),
        "(d) skf.aggregate": lambda: scatterkit_aggregate(events, work / "d"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--workdir",
        default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "scatterkit-bench-events"),
    )
    args = parser.parse_args()
    workdir = Path(args.workdir)
    source = generate(
        workdir / f"events-{args.events}-{args.entities}-{args.files}-seed0",
        args.events,
        args.entities,
        args.files,
        0,
    )
    work = workdir / "bounds"
    shutil.rmtree(work, ignore_errors=True)
    spark = build_session(
        master=args.master, conf={"spark.driver.memory": "8g"}, app_name="scatterkit-bounds"
    )
    events = spark.read.parquet(str(source))
    runs: dict[str, list[float]] = {}
    todo = cases(spark, events, work)
    for round_ in range(args.repeat + 1):  # round 0 warms up
        for name, run in todo.items():
            start = time.perf_counter()
            run()
            seconds = time.perf_counter() - start
            if round_:
                runs.setdefault(name, []).append(seconds)
            print(f"round {round_} {name}: {seconds:.1f} s", flush=True)
    print(f"load average {os.getloadavg()}")
    print("| case | median s | runs (s) |\n| --- | ---: | --- |")
    for name, seconds in runs.items():
        listed = ", ".join(f"{s:.1f}" for s in seconds)
        print(f"| {name} | {statistics.median(seconds):.1f} | {listed} |")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
