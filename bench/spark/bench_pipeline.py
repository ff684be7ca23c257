"""The Spark pipeline against what users write today, and against Spark's own floor.

Every contender runs the same whole job -- ScatterElementsUpdate-12 (sum, axis 0) on each
row of a Parquet input with ``data`` float32 (H, W), ``indices`` int32 (K, W) and
``updates`` float32 (K, W) as tensor columns ``struct<values, shape>`` -- and writes ``id``
plus the result as Parquet (snappy, as both engines write by default):

- ``scatterkit job, arrow engine``: ``scatterkit-spark run`` as it runs by default on
  local paths: Spark schedules one task per file (or row groups), each reads and writes
  Parquet with pyarrow and runs the steps on its record batches;
- ``scatterkit job, spark engine``: ``run --engine spark``, one ``mapInArrow`` between
  Spark SQL's Parquet reader and writer;
- ``scatterkit column``: the column function (an Arrow UDF) in a ``select``;
- ``pandas_udf + NumPy``: a pandas UDF looping over rows with ``np.add.at``, as users do;
- ``identity mapInArrow``: Spark moving the same columns through Python and back, with
  ``data`` returned as the result: the floor of any executor fed by Spark SQL.

Then the same data as binary tensor columns, ``struct<data: binary, shape, dtype>`` (a copy
of the input files; #49): the job on both engines and the column function reading them and
writing the binary layout, and the identity ``mapInArrow`` over the binary columns (their
floor). The report gives each binary contender's speed-up over its arrays twin and its
time over the binary floor's.

Two sizes: small tensors (64 x 64, K = 16) and large ones (1024 x 1024 = 1M elements,
K = 16). Contenders run interleaved: one warm-up round over all of them, then ``--repeat``
rounds; the median counts. Writes a Markdown report (``bench/spark/RESULTS_PIPELINE.md``
by default), from where its tables are copied into ``bench/spark/RESULTS.md``.

    python bench/spark/bench_pipeline.py [--small-rows 10000] [--large-rows 32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from bench_events import cpu_seconds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import scatterkit as sk
from scatterkit.spark import functions as skf
from scatterkit.spark.core.element_types import tensor_struct
from scatterkit.spark.jobs.run import _run as run_engine
from scatterkit.spark.sessions.session import DEFAULT_CONF, build_session
from scatterkit.spark.specs.job_spec import JobSpec

HERE = Path(__file__).resolve().parent
SPEC = {
    "row_id": "id",
    "passthrough": ["id"],
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 0, "reduction": "sum"},
            "inputs": {"data": "data", "indices": "indices", "updates": "updates"},
            "output": "result",
        }
    ],
}


@dataclass(frozen=True)
class Size:
    name: str
    shape: tuple[int, int]
    updates: int  # K rows of updates per tensor
    rows: int

    @property
    def bytes_in(self) -> int:  # tensor values read per row (data, indices, updates)
        h, w = self.shape
        return 4 * (h * w + 2 * self.updates * w)

    @property
    def bytes_out(self) -> int:
        return 4 * self.shape[0] * self.shape[1]


def _tensor_column(values: np.ndarray, shape: tuple[int, ...]) -> pa.StructArray:
    rows = values.shape[0]
    size = int(np.prod(shape))
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * size)
    shape_offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * len(shape))
    shapes = pa.array(np.tile(np.array(shape, np.int32), rows))
    return pa.StructArray.from_arrays(
        [
            pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1))),
            pa.ListArray.from_arrays(shape_offsets, shapes),
        ],
        names=["values", "shape"],
    )


def _binary_column(column: pa.ChunkedArray) -> pa.StructArray:
    """An arrays-layout tensor column (float32 or int32 values) in the binary layout: the
    same values' bytes, shape and NumPy dtype name."""
    array = column.combine_chunks()
    values = array.field("values")
    shapes = array.field("shape")
    flat = values.flatten().to_numpy()
    offsets = values.offsets.to_numpy().astype(np.int64) * flat.dtype.itemsize
    if offsets[-1] >= 2**31:
        raise ValueError("a binary column over 2 GB: write smaller files")
    data = pa.Array.from_buffers(
        pa.binary(),
        len(array),
        [None, pa.py_buffer((offsets - offsets[0]).astype(np.int32)), pa.py_buffer(flat)],
    )
    dtypes = pa.array([flat.dtype.name] * len(array), pa.string())
    return pa.StructArray.from_arrays([data, shapes, dtypes], names=["data", "shape", "dtype"])


def binary_copy(path: Path, out: Path) -> Path:
    """The files of `path` with every tensor column in the binary layout (uncompressed, as
    the arrays files)."""
    out.mkdir(parents=True, exist_ok=True)
    for file in sorted(path.glob("*.parquet")):
        table = pq.read_table(file)
        columns = {
            name: _binary_column(table.column(name))
            if pa.types.is_struct(table.schema.field(name).type)
            else table.column(name)
            for name in table.column_names
        }
        pq.write_table(pa.table(columns), out / file.name, compression="none")
    return out


def generate(size: Size, path: Path, seed: int = 0) -> Path:
    """Parquet files of `size.rows` rows (in chunks, so memory stays small)."""
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True, exist_ok=True)
    h, w = size.shape
    chunk = max(1, min(size.rows, (64 << 20) // size.bytes_in))
    for number, start in enumerate(range(0, size.rows, chunk)):
        n = min(chunk, size.rows - start)
        table = pa.table(
            {
                "id": pa.array(np.arange(start, start + n), pa.int64()),
                "data": _tensor_column(rng.random((n, h * w), dtype=np.float32), (h, w)),
                "indices": _tensor_column(
                    rng.integers(0, h, (n, size.updates * w), dtype=np.int32), (size.updates, w)
                ),
                "updates": _tensor_column(
                    rng.random((n, size.updates * w), dtype=np.float32), (size.updates, w)
                ),
            }
        )
        pq.write_table(table, path / f"part-{number:04d}.parquet", compression="none")
    return path


# --- the contenders: each runs the whole job, Parquet in and Parquet out ---------------


def _job(spark: SparkSession, path: Path, out: Path, engine: str, layout: str = "arrays") -> float:
    """The job's engine alone (no summary): its tasks' seconds in scatterkit."""
    source = spark.read.parquet(str(path))
    spec = JobSpec.from_dict(SPEC)
    if layout != "arrays":
        spec = spec.with_layout(layout)
    found, *_ = run_engine(spark, source, spec, str(path), str(out), "fail", True, engine)
    return found.counts["python_us"] / 1e6


def scatterkit_arrow(spark: SparkSession, path: Path, out: Path) -> float:
    return _job(spark, path, out, "arrow")


def _spark_write(df: DataFrame, out: Path) -> None:
    df.write.mode("overwrite").parquet(str(out))


def scatterkit_spark(spark: SparkSession, path: Path, out: Path) -> float:
    return _job(spark, path, out, "spark")


def scatterkit_column(spark: SparkSession, path: Path, out: Path, layout: str = "arrays") -> float:
    tensors = {"layout": layout} if layout != "arrays" else {}
    result = skf.scatter_elements_update(
        "data", "indices", "updates", 0, reduction="sum", **tensors
    )
    _spark_write(spark.read.parquet(str(path)).select("id", result.alias("result")), out)
    return 0.0  # not counted


def scatterkit_arrow_binary(spark: SparkSession, path: Path, out: Path) -> float:
    return _job(spark, path, out, "arrow", "binary")


def scatterkit_spark_binary(spark: SparkSession, path: Path, out: Path) -> float:
    return _job(spark, path, out, "spark", "binary")


def scatterkit_column_binary(spark: SparkSession, path: Path, out: Path) -> float:
    return scatterkit_column(spark, path, out, "binary")


def pandas_udf_numpy(spark: SparkSession, path: Path, out: Path) -> float:
    from pyspark.sql.functions import pandas_udf

    # pyspark's stubs leave StructType out of pandas_udf's return types; Spark accepts it.
    @pandas_udf(tensor_struct("float"))  # type: ignore[call-overload]
    def scatter_sum(data: pd.DataFrame, idx: pd.DataFrame, upd: pd.DataFrame) -> pd.DataFrame:
        values, shapes = [], []
        for v, s, i, i_shape, u in zip(
            data["values"], data["shape"], idx["values"], idx["shape"], upd["values"]
        ):
            out = np.array(v, dtype=np.float32).reshape(tuple(s))
            rows = np.asarray(i).reshape(tuple(i_shape))
            cols = np.arange(rows.shape[1])
            np.add.at(out, (rows, cols), np.asarray(u, np.float32).reshape(rows.shape))
            values.append(out.ravel())
            shapes.append(list(s))
        return pd.DataFrame({"values": values, "shape": shapes})

    df = spark.read.parquet(str(path))
    _spark_write(df.select("id", scatter_sum("data", "indices", "updates").alias("result")), out)
    return 0.0  # not counted


def identity_floor(spark: SparkSession, path: Path, out: Path) -> float:
    """Either layout: the columns the contenders read, through Python and back."""
    df = spark.read.parquet(str(path))
    schema = df.select("id", F.col("data").alias("result")).schema

    def identity(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield pa.RecordBatch.from_arrays(
                [batch.column("id"), batch.column("data")], names=["id", "result"]
            )

    _spark_write(df.mapInArrow(identity, schema), out)
    return 0.0  # not counted


def identity_udf_floor(spark: SparkSession, path: Path, out: Path) -> float:
    """Either layout: a column function's floor, an Arrow UDF over the three tensors that
    returns the data as it came (Spark's UDF machinery, with its copy of each input row
    kept to join the result back, and no work)."""
    df = spark.read.parquet(str(path))

    def first(data: pa.Array, indices: pa.Array, updates: pa.Array) -> pa.Array:
        return data

    udf = F.arrow_udf(first, df.schema["data"].dataType)  # type: ignore[attr-defined]
    _spark_write(df.select("id", udf("data", "indices", "updates").alias("result")), out)
    return 0.0  # not counted


@dataclass(frozen=True)
class Contender:
    name: str
    run: Callable[[SparkSession, Path, Path], float]  # seconds in scatterkit's tasks
    layout: str  # of the input it reads (and of the result it writes)
    floor: bool = False  # the identity: no result to check


JOB_ARROW = "scatterkit job, arrow engine"
JOB_SPARK = "scatterkit job, spark engine (mapInArrow)"
COLUMN = "scatterkit column (Arrow UDF)"
PANDAS = "pandas_udf + NumPy np.add.at"
FLOOR = "identity mapInArrow (floor)"
UDF_FLOOR = "identity Arrow UDF (a column's floor)"
JOB_ARROW_B = "binary: scatterkit job, arrow engine"
JOB_SPARK_B = "binary: scatterkit job, spark engine (mapInArrow)"
COLUMN_B = "binary: scatterkit column (Arrow UDF)"
FLOOR_B = "binary: identity mapInArrow (floor)"
UDF_FLOOR_B = "binary: identity Arrow UDF (a column's floor)"
CONTENDERS = [
    Contender(JOB_ARROW, scatterkit_arrow, "arrays"),
    Contender(JOB_SPARK, scatterkit_spark, "arrays"),
    Contender(COLUMN, scatterkit_column, "arrays"),
    Contender(PANDAS, pandas_udf_numpy, "arrays"),
    Contender(FLOOR, identity_floor, "arrays", floor=True),
    Contender(UDF_FLOOR, identity_udf_floor, "arrays", floor=True),
    Contender(JOB_ARROW_B, scatterkit_arrow_binary, "binary"),
    Contender(JOB_SPARK_B, scatterkit_spark_binary, "binary"),
    Contender(COLUMN_B, scatterkit_column_binary, "binary"),
    Contender(FLOOR_B, identity_floor, "binary", floor=True),
    Contender(UDF_FLOOR_B, identity_udf_floor, "binary", floor=True),
]
BINARY_TWINS = [  # (binary, its arrays twin)
    (JOB_ARROW_B, JOB_ARROW),
    (JOB_SPARK_B, JOB_SPARK),
    (COLUMN_B, COLUMN),
    (FLOOR_B, FLOOR),
    (UDF_FLOOR_B, UDF_FLOOR),
]


def _tensor(value: object, dtype: type = np.float32) -> np.ndarray:
    """One row's tensor struct (either layout) as a NumPy array; arrays-layout values as
    `dtype`."""
    shape = tuple(value.shape)  # type: ignore[attr-defined]
    if hasattr(value, "data"):
        return np.frombuffer(value.data, np.dtype(value.dtype)).reshape(shape)  # type: ignore[attr-defined]
    return np.array(value.values, dtype).reshape(shape)  # type: ignore[attr-defined]


def check(spark: SparkSession, paths: dict[str, Path], tmp: Path, rows: int = 3) -> None:
    """Every contender but the floors gives scatterkit's single-call result."""
    source = spark.read.parquet(str(paths["arrays"])).orderBy("id").limit(rows).collect()
    for number, contender in enumerate(CONTENDERS):
        if contender.floor:
            continue
        out = tmp / f"check-{number}"
        contender.run(spark, paths[contender.layout], out)
        got = {
            r.id: r.result for r in spark.read.parquet(str(out)).where(F.col("id") < rows).collect()
        }
        for row in source:
            want = sk.scatter_elements_update(
                _tensor(row.data),
                _tensor(row.indices, np.int32),
                _tensor(row.updates),
                0,
                reduction="sum",
            )
            result = got[row.id]
            assert contender.layout == "arrays" or hasattr(result, "data"), contender.name
            assert np.array_equal(_tensor(result), want), contender.name


def measure(
    spark: SparkSession, paths: dict[str, Path], out: Path, repeat: int
) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Per contender, the seconds of `repeat` runs, scatterkit's task seconds and the CPU
    seconds of the driver and every process under it (`bench_events.cpu_seconds`), in
    interleaved rounds (every contender once per round) after a warm-up round."""
    runs: dict[str, tuple[list[float], list[float], list[float]]] = {
        c.name: ([], [], []) for c in CONTENDERS
    }
    for attempt in range(repeat + 1):
        for contender in CONTENDERS:
            started, cpu = time.perf_counter(), cpu_seconds()
            task_seconds = contender.run(spark, paths[contender.layout], out)
            seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
            print(f"round {attempt}: {contender.name} {seconds:.2f} s, CPU {cpu:.1f} s", flush=True)
            if attempt:
                for into, value in zip(runs[contender.name], (seconds, task_seconds, cpu)):
                    into.append(value)
    return runs


# --- the report -----------------------------------------------------------------


def _cmd(args: list[str]) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        return (done.stdout + done.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return "?"


def machine() -> list[str]:
    import pyspark

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        mem = f"{int(mem) / 2**20:.0f} GiB"
    except OSError:
        mem = "?"
    return [
        f"- machine: {platform.machine()}, {cpu}, {os.cpu_count()} cores, {mem} RAM, "
        f"{platform.system()} {platform.release()}",
        f"- load average before the run: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
        "(a shared machine: other jobs ran at the same time)",
        f"- Python {platform.python_version()}, {_cmd(['java', '-version'])}",
        f"- pyspark {pyspark.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}, "
        f"pandas {pd.__version__}, scatterkit {sk.__version__}",
    ]


def notes(verdicts: list[tuple[str, dict[str, float]]]) -> list[str]:
    """What the measured ratios say about the two targets."""
    out = [
        "- The identity floor is Spark SQL itself: rows from the Parquet scan converted to "
        "Arrow in the JVM, sent to a Python worker, sent back, converted to rows again and "
        "written. Every contender fed by Spark SQL pays it; the *scatterkit task s* column is "
        "what the job adds on top (summed over tasks).",
        "- The arrow engine does not pay it: its tasks read and write Parquet with pyarrow, "
        "so it can beat that floor. The spark engine is kept for what only Spark SQL reads "
        "(Hadoop file systems, partition directories).",
        "- The column function (an Arrow UDF) pays more than the job: Spark keeps a copy of "
        "each input row to join the UDF's result back to it. The job (`mapInArrow`) does not. "
        "The identity Arrow UDF is a column function's own floor: that machinery, no work.",
    ]
    for name, t in verdicts:
        arrow, spark_job, pandas_t, floor = t[JOB_ARROW], t[JOB_SPARK], t[PANDAS], t[FLOOR]
        out.append(
            f"- {name}: the job (arrow engine) is {pandas_t / arrow:.1f}x faster than the "
            f"pandas_udf and takes {arrow / floor:.2f}x the floor's time; through Spark SQL "
            f"(spark engine) {pandas_t / spark_job:.1f}x and {spark_job / floor:.2f}x, where "
            f"the floor itself is {pandas_t / floor:.1f}x faster than the pandas_udf."
        )
    out.append(
        "- Binary tensors: Spark moves a `binary` value as one piece between its rows, Arrow "
        "and its Parquet reader and writer, where it converts an `array<float>` element by "
        "element; the binary floor is the identity over the binary copy of the same data."
    )
    for name, t in verdicts:
        out.append(
            f"- {name}, binary: the column function {t[COLUMN] / t[COLUMN_B]:.1f}x faster "
            f"than on arrays and {t[COLUMN_B] / t[FLOOR_B]:.2f}x the binary floor; the spark "
            f"engine {t[JOB_SPARK] / t[JOB_SPARK_B]:.1f}x and {t[JOB_SPARK_B] / t[FLOOR_B]:.2f}x; "
            f"the floor itself {t[FLOOR] / t[FLOOR_B]:.1f}x faster than on arrays."
        )
    return out


def _ok(ratio: float, most: float | None = None, least: float | None = None) -> str:
    """`ratio`, bold when it misses the target."""
    missed = (most is not None and ratio > most) or (least is not None and ratio < least)
    return f"**{ratio:.2f}x**" if missed else f"{ratio:.2f}x"


def binary_ratios(
    verdicts: list[tuple[str, dict[str, float]]], cpu: list[tuple[str, dict[str, float]]]
) -> list[str]:
    """#49 item 4: the binary contenders over their arrays twins and over the binary floor,
    of wall-clock seconds and of CPU seconds."""
    lines = [
        "| tensors | of | column: arrays / binary | spark engine: arrays / binary "
        "| arrow engine: arrays / binary | floor: arrays / binary | column (binary) / floor "
        "(binary) | spark engine (binary) / floor (binary) | arrow engine (binary) / floor "
        "(binary) | column (binary) / UDF floor (binary) | UDF floor: arrays / binary |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    measured = [(name, "seconds", t) for name, t in verdicts]
    measured += [(name, "CPU seconds", t) for name, t in cpu]
    for name, of, t in sorted(measured, key=lambda m: [v[0] for v in verdicts].index(m[0])):
        lines.append(
            f"| {name} | {of} | {_ok(t[COLUMN] / t[COLUMN_B], least=3)} | "
            f"{_ok(t[JOB_SPARK] / t[JOB_SPARK_B], least=3)} | "
            f"{t[JOB_ARROW] / t[JOB_ARROW_B]:.2f}x | {t[FLOOR] / t[FLOOR_B]:.2f}x | "
            f"{_ok(t[COLUMN_B] / t[FLOOR_B], most=1.5)} | "
            f"{_ok(t[JOB_SPARK_B] / t[FLOOR_B], most=1.5)} | {t[JOB_ARROW_B] / t[FLOOR_B]:.2f}x | "
            f"{t[COLUMN_B] / t[UDF_FLOOR_B]:.2f}x | {t[UDF_FLOOR] / t[UDF_FLOOR_B]:.2f}x |"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small-rows", type=int, default=10_000)
    parser.add_argument("--large-rows", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    # 2g ran out of heap in Spark's Parquet writer, which buffers and copies a row group's
    # binary column chunk (32 tensors of 4 MB from the binary column function).
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--output", default=str(HERE / "RESULTS_PIPELINE.md"))
    args = parser.parse_args()

    sizes = [
        Size("small 64x64", (64, 64), 16, args.small_rows),
        Size("large 1024x1024 (1M)", (1024, 1024), 16, args.large_rows),
    ]
    header = machine()
    spark = build_session(
        master=args.master,
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "false"},
        app_name="scatterkit-bench",
    )
    lines = []
    verdicts: list[tuple[str, dict[str, float]]] = []
    cpu_verdicts: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="scatterkit-bench-") as tmp:
        for size in sizes:
            path = generate(size, Path(tmp) / size.name.split()[0])
            paths = {"arrays": path, "binary": binary_copy(path, Path(f"{path}-binary"))}
            check(spark, paths, Path(tmp))
            seconds, cpus = {}, {}
            for name, (times, tasks, cpu) in measure(
                spark, paths, Path(tmp) / "out", args.repeat
            ).items():
                t = seconds[name] = statistics.median(times)
                c = cpus[name] = statistics.median(cpu)
                mb = size.rows * (size.bytes_in + size.bytes_out) / 1e6 / t
                task = f"{statistics.median(tasks):.2f}" if "job" in name else ""
                runs = ", ".join(f"{x:.2f}" for x in times)
                lines.append(
                    f"| {size.name} | {size.rows:,} | {name} | {t:.2f} | {c:.1f} | "
                    f"{size.rows / t:,.0f} | {mb:,.0f} | {task} | {runs} |"
                )
                print(lines[-1], flush=True)
            verdicts.append((size.name, seconds))
            cpu_verdicts.append((size.name, cpus))
    spark.stop()
    ratios = [
        f"| {name} | {t[PANDAS] / t[JOB_ARROW]:.1f}x | {t[PANDAS] / t[JOB_SPARK]:.1f}x | "
        f"{t[PANDAS] / t[COLUMN]:.1f}x | {t[PANDAS] / t[FLOOR]:.1f}x | "
        f"{t[JOB_ARROW] / t[FLOOR]:.2f}x | {t[JOB_SPARK] / t[FLOOR]:.2f}x | "
        f"{t[COLUMN] / t[FLOOR]:.2f}x |"
        for name, t in verdicts
    ]
    report = [
        "# Spark pipeline benchmark",
        "",
        "`python bench/spark/bench_pipeline.py "
        f"--small-rows {args.small_rows} --large-rows {args.large_rows} --repeat {args.repeat}"
        f" --master {args.master} --driver-memory {args.driver_memory}`: "
        "ScatterElementsUpdate-12 (sum, axis 0) on every row, "
        "Parquet in (uncompressed, page cache warm), Parquet out (snappy); the *binary* "
        "contenders read a copy of the input with its tensors in the binary layout and write "
        "that layout. Median of "
        f"{args.repeat} runs after a warm-up round, contenders interleaved (one run each per "
        "round). CPU s: the median CPU seconds of the driver and every process under it "
        "(Spark's JVM, its Python workers), the work done whatever the machine's load. MB/s "
        "counts tensor bytes read (data, indices, updates) plus written (the result). Arrow "
        "batches: "
        f"{DEFAULT_CONF['spark.sql.execution.arrow.maxRecordsPerBatch']} rows / "
        f"{int(DEFAULT_CONF['spark.sql.execution.arrow.maxBytesPerBatch']) >> 20} MB at most.",
        "",
        *header,
        "",
        "| tensors | rows | contender | seconds | CPU s | rows/s | MB/s | scatterkit task s "
        "| runs (s) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *lines,
        "",
        "Targets: at least 5x the pandas_udf on small tensors; within 1.5x of the identity "
        "floor. Speedups are the pandas_udf's time over the contender's; floor ratios the "
        "contender's time over the floor's (below 1: faster than the floor).",
        "",
        "| tensors | job (arrow) vs pandas_udf | job (spark) vs pandas_udf "
        "| column vs pandas_udf | floor vs pandas_udf | job (arrow) / floor "
        "| job (spark) / floor | column / floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *ratios,
        "",
        "Binary tensors (#49): targets at least 3x faster than on arrays (the column function "
        "and the spark engine), and within 1.5x of the identity floor over the same binary "
        "columns; a missed target in bold.",
        "",
        *binary_ratios(verdicts, cpu_verdicts),
        "",
        "Reading the tables:",
        "",
        *notes(verdicts),
        "",
    ]
    Path(args.output).write_text("\n".join(report))
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
