"""The Arrow batch's byte bound (``spark.sql.execution.arrow.maxBytesPerBatch``, or another
size setting: ``--setting``) against the time of each contender of bench_pipeline.py, and of
bench_events.py's aggregations.

One session; every round sets each bound in turn (a SQL setting, read when a job runs) and
runs every contender under it, so that the bounds are compared side by side, not across
processes. The median of ``--repeat`` rounds after a warm-up round counts. Prints a Markdown
table (seconds per bound, and each bound's time over the first bound's).

    python bench/spark/bench_batch_size.py [--bounds 64m,16m,4m,1m] [--repeat 4]
        [--events-dir DIR]  # also bench_events.py's contenders over its events at DIR
        [--events aggregate,job] [--setting spark.sql.parquet.columnarReaderBatchSize]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bench_events
import bench_pipeline as pipeline
from pyspark.sql import SparkSession

from scatterkit.spark.runtime.reading import _byte_size
from scatterkit.spark.sessions.session import build_session

BYTES_KEY = "spark.sql.execution.arrow.maxBytesPerBatch"
PIPELINE = [  # bench_pipeline.py's contenders whose tensors Spark moves
    pipeline.FLOOR,
    pipeline.JOB_SPARK,
    pipeline.COLUMN,
    pipeline.UDF_FLOOR,
    pipeline.JOB_ARROW,
    pipeline.FLOOR_B,
    pipeline.JOB_SPARK_B,
    pipeline.COLUMN_B,
    pipeline.UDF_FLOOR_B,
    pipeline.JOB_ARROW_B,
]
EVENTS = "aggregate,aggregate-binary,job,job-binary"  # bench_events.py's keys, by default

Run = Callable[[Path], None]  # one run, writing the given output directory


def pipeline_runs(spark: SparkSession, tmp: Path, small: int, large: int) -> dict[str, Run]:
    """bench_pipeline.py's data and contenders, named by size and contender."""
    runs: dict[str, Run] = {}
    by_name = {c.name: c for c in pipeline.CONTENDERS}
    for size in (
        pipeline.Size("small 64x64", (64, 64), 16, small),
        pipeline.Size("large 1024x1024", (1024, 1024), 16, large),
    ):
        path = pipeline.generate(size, tmp / size.name.split()[0])
        paths = {"arrays": path, "binary": pipeline.binary_copy(path, Path(f"{path}-binary"))}
        for name in PIPELINE:
            contender = by_name[name]

            def run(
                out: Path, c: pipeline.Contender = contender, p: Path = paths[contender.layout]
            ) -> None:
                c.run(spark, p, out)

            runs[f"{size.name}: {name}"] = run
    return runs


def events_runs(spark: SparkSession, events: Path, keys: list[str]) -> dict[str, Run]:
    """bench_events.py's contenders `keys` over the events it generated at `events`."""
    by_key = {c.key: c for c in bench_events.CONTENDERS}
    runs: dict[str, Run] = {}
    for key in keys:
        contender = by_key[key]

        def run(out: Path, c: bench_events.Contender = contender) -> None:
            c.run(spark.read.parquet(str(events)), events, out)

        runs[f"events: {contender.name}"] = run
    return runs


def measure(
    spark: SparkSession,
    runs: dict[str, Run],
    setting: str,
    bounds: list[str],
    repeat: int,
    out: Path,
) -> dict[tuple[str, str], list[float]]:
    times: dict[tuple[str, str], list[float]] = {(n, b): [] for n in runs for b in bounds}
    for attempt in range(repeat + 1):
        for bound in bounds:
            spark.conf.set(setting, str(_byte_size(bound)))
            for name, run in runs.items():
                shutil.rmtree(out, ignore_errors=True)
                started = time.perf_counter()
                run(out)
                seconds = time.perf_counter() - started
                print(f"round {attempt}, {bound}: {name} {seconds:.2f} s", flush=True)
                if attempt:
                    times[(name, bound)].append(seconds)
    return times


def table(
    times: dict[tuple[str, str], list[float]], names: list[str], bounds: list[str]
) -> list[str]:
    first = bounds[0]
    lines = [
        "| contender | "
        + " | ".join(f"{b} (s)" for b in bounds)
        + " | "
        + " | ".join(f"{b} / {first}" for b in bounds[1:])
        + " |",
        "| --- |" + " ---: |" * (2 * len(bounds) - 1),
    ]
    for name in names:
        medians = [statistics.median(times[(name, b)]) for b in bounds]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{m:.2f}" for m in medians)
            + " | "
            + " | ".join(f"{m / medians[0]:.2f}x" for m in medians[1:])
            + " |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bounds", default="64m,16m,4m,1m", help="byte bounds, the first the base")
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--small-rows", type=int, default=10_000)
    parser.add_argument("--large-rows", type=int, default=32)
    parser.add_argument("--events-dir", default="", help="bench_events.py's events (optional)")
    parser.add_argument("--events", default=EVENTS, help="bench_events.py's contenders to run")
    parser.add_argument("--setting", default=BYTES_KEY, help="the SQL setting the bounds are of")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    args = parser.parse_args()
    bounds = [b for b in args.bounds.split(",") if b]

    spark = build_session(
        master=args.master,
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"},
        app_name="scatterkit-bench-batch-size",
    )
    with tempfile.TemporaryDirectory(prefix="scatterkit-bench-") as tmp:
        runs = pipeline_runs(spark, Path(tmp), args.small_rows, args.large_rows)
        if args.events_dir:
            keys = [k for k in args.events.split(",") if k]
            runs.update(events_runs(spark, Path(args.events_dir), keys))
        times = measure(spark, runs, args.setting, bounds, args.repeat, Path(tmp) / "out")
    spark.stop()
    print(
        f"\n`python bench/spark/bench_batch_size.py --setting {args.setting} --bounds "
        f"{args.bounds} --repeat {args.repeat}"
        f"{f' --events-dir ... --events {args.events}' if args.events_dir else ''}`, "
        f"{args.master}, load at the "
        f"end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}\n"
    )
    print("\n".join(table(times, list(runs), bounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
