"""Event tables to tensors (#31): per entity, sum, max and mean of its events per cell.

An event table has one event per row: ``user_id`` bigint, ``hour`` int (0..23),
``category`` int (0..15) and ``amount`` float (log-normal). Per entity every contender
builds three [24, 16] float tensors -- sum, max and mean of ``amount`` per (hour, category)
cell, 0 where the entity has no event -- in one Spark job that reads the events from Parquet
and writes one row per entity as Parquet (snappy):

- (a) ``Spark SQL``: ``groupBy(user_id, hour, category).agg(sum, max, avg)``, then
  ``groupBy(user_id)`` and the dense 384-element arrays assembled with higher-order
  functions (``sql-map``: a map from cell to aggregates, looked up 384 times) or with a
  pivot on the cell (``sql-pivot``: 384 x 3 columns gathered into arrays);
- (b) ``collect_list`` of the events per entity, then scatterkit's column functions:
  ScatterNDUpdate-15 (sum, max) and ScatterElementsUpdate-12 (mean), ``exact=True``;
- (c) ``groupBy(user_id).applyInPandas`` with ``np.add.at`` / ``np.maximum.at``;
- (d) ``skf.aggregate`` with three ``skf.scatter_nd_agg`` (scatterkit's event aggregation:
  map-side combining, then one task per partition of entities);
- (e) the same ``skf.scatter_nd_agg`` aggregates through Spark's own ``groupBy().agg``;
- (f) scatterkit's job (``run_job``) with the same aggregates as its aggregation step, on
  the Arrow engine: the tasks read the events and write the tensors with pyarrow;
- (g) no Spark: one Python process reads the events with pyarrow, numbers the entities
  (``pd.factorize``), folds each tensor of all entities in one scatterkit call and writes
  one Parquet file (binary layout) with pyarrow.

(b'), (d'), (e') and (f') are (b), (d), (e) and (f) writing the binary tensor layout
(``struct<data: binary, shape, dtype>``; ``layout="binary"``). (e0) is Spark's own floor
for (e) and (e'): the same ``groupBy().agg()`` with three grouped-aggregate Arrow UDFs that
return a constant (the zero tensor of (e')'s type), measured in the same run; the report
gives each grouped aggregate's time per group over the floor's.

(d) to (f') run when the installed scatterkit has ``scatterkit.spark.functions.aggregate``;
the binary variants when it has ``skf.to_binary``. Spark's start (``build_session``) is
timed once, apart from the contenders (none of whose times include it).

Contenders run interleaved (one round over all of them per repeat, after ``--warm-up``
rounds, 1 by default); the median of ``--repeat`` runs counts. Each run's shuffle bytes
come from Spark's monitoring REST API (the stages of the run's job group). Then each
contender runs again on the events shuffled randomly and split into 3 and into 16
partitions: its results are "bits stable" when the sum, max and mean tensors of all three
runs are equal bit for bit. A NumPy reference checks ``--sample`` entities: max exactly,
sums and means to float32 rounding (and counts the cells that equal the exact value
rounded once).

    python bench/spark/bench_events.py [--events 20000000] [--entities 200000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import scatterkit as sk
from scatterkit.spark import functions as skf
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.sessions.session import DEFAULT_CONF, build_session
from scatterkit.spark.specs.job_spec import JobSpec

HERE = Path(__file__).resolve().parent
HOURS, CATEGORIES = 24, 16
SHAPE = [HOURS, CATEGORIES]
CELLS = HOURS * CATEGORIES
OUTPUTS = ("spend_sum", "spend_max", "spend_mean")
REDUCTIONS = {"spend_sum": "sum", "spend_max": "max", "spend_mean": "mean"}


# --- the events ------------------------------------------------------------------


def generate(path: Path, events: int, entities: int, files: int, seed: int) -> Path:
    """`events` rows in `files` Parquet files (snappy), written once: a finished directory
    (with its _DONE marker) is reused."""
    if (path / "_DONE").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    per_file = -(-events // files)
    for number, start in enumerate(range(0, events, per_file)):
        n = min(per_file, events - start)
        table = pa.table(
            {
                "user_id": pa.array(rng.integers(0, entities, n, dtype=np.int64)),
                "hour": pa.array(rng.integers(0, HOURS, n, dtype=np.int32)),
                "category": pa.array(rng.integers(0, CATEGORIES, n, dtype=np.int32)),
                "amount": pa.array(rng.lognormal(3.0, 1.0, n).astype(np.float32)),
            }
        )
        pq.write_table(table, path / f"part-{number:04d}.parquet")
    (path / "_DONE").write_text(f"{events} events, {entities} entities, seed {seed}\n")
    return path


def cell_counts(path: Path, entities: int) -> dict[str, int]:
    """How many (entity, cell) pairs hold 1, 2, 3 and more events: a float sum of one or
    two values does not depend on their order, of three or more it may."""
    table = pq.read_table(str(path), columns=["user_id", "hour", "category"])
    cell = table.column("hour").to_numpy() * CATEGORIES + table.column("category").to_numpy()
    pair = table.column("user_id").to_numpy() * CELLS + cell
    counts = np.bincount(np.bincount(pair, minlength=entities * CELLS))
    return {
        "1": int(counts[1:2].sum()),
        "2": int(counts[2:3].sum()),
        "3+": int(counts[3:].sum()),
        "most": len(counts) - 1,
    }


def shuffled(spark: SparkSession, source: Path, path: Path, seed: int, files: int) -> Path:
    """The events in a random order (``orderBy(rand(seed))``) in `files` files (the
    partitions of a job reading them; the DataFrame contenders ``repartition`` them),
    written once."""
    if not (path / "_SUCCESS").exists():
        events = spark.read.parquet(str(source)).orderBy(F.rand(seed))
        events.repartition(files).write.mode("overwrite").parquet(str(path))
    return path


# --- the contenders: events in, one row per entity with the three tensors out ------


def _write(df: DataFrame, out: Path) -> None:
    df.write.mode("overwrite").parquet(str(out))


def _cell(hour: object, category: object) -> F.Column:
    return hour * F.lit(CATEGORIES) + category  # type: ignore[operator]


def _zero() -> F.Column:
    return F.lit(0.0).cast("float")


def _cell_aggregates(events: DataFrame) -> DataFrame:
    """One row per (entity, cell) that has events: Spark's sum, max and avg."""
    return events.groupBy("user_id", "hour", "category").agg(
        F.sum("amount").alias("s"), F.max("amount").alias("m"), F.avg("amount").alias("a")
    )


def spark_sql_map(events: DataFrame, source: Path, out: Path) -> None:
    """(a) cells aggregated, gathered per entity in a map, the dense arrays looked up."""
    cells = _cell_aggregates(events).select(
        "user_id",
        _cell(F.col("hour"), F.col("category")).alias("cell"),
        F.struct(
            F.col("s").cast("float").alias("s"),
            F.col("m").alias("m"),
            F.col("a").cast("float").alias("a"),
        ).alias("v"),
    )
    per_entity = cells.groupBy("user_id").agg(
        F.map_from_entries(F.collect_list(F.struct("cell", "v"))).alias("cells")
    )
    # One lookup per cell (a map lookup scans the entity's keys), then three plain passes.
    dense = per_entity.select(
        "user_id",
        F.transform(F.sequence(F.lit(0), F.lit(CELLS - 1)), lambda i: F.col("cells")[i]).alias("d"),
    )
    _write(
        dense.select(
            "user_id", *[_dense_field("d", f).alias(name) for f, name in zip("sma", OUTPUTS)]
        ),
        out,
    )


def _dense_field(column: str, name: str) -> F.Column:
    """The field `name` of every struct of `column`, 0 for a null struct."""
    return F.transform(column, lambda v: F.coalesce(v.getField(name), _zero()))


def spark_sql_pivot(events: DataFrame, source: Path, out: Path) -> None:
    """(a) a pivot on the cell (Spark aggregates per (entity, cell), then pivots), the
    384 x 3 columns gathered into arrays."""
    cells = events.select(
        "user_id", _cell(F.col("hour"), F.col("category")).alias("cell"), "amount"
    )
    wide = (
        cells.groupBy("user_id")
        .pivot("cell", list(range(CELLS)))
        .agg(F.sum("amount").alias("s"), F.max("amount").alias("m"), F.avg("amount").alias("a"))
    )
    _write(
        wide.select(
            "user_id",
            *[
                F.array(
                    *[F.coalesce(F.col(f"{c}_{f}").cast("float"), _zero()) for c in range(CELLS)]
                ).alias(name)
                for f, name in zip("sma", OUTPUTS)
            ],
        ),
        out,
    )


def scatterkit_columns(events: DataFrame, source: Path, out: Path, layout: str = "arrays") -> None:
    """(b) the events of each entity in one list, then scatterkit's column functions."""
    tensors = {"layout": layout} if layout != "arrays" else {}
    lists = events.groupBy("user_id").agg(
        F.collect_list(F.struct("hour", "category", "amount")).alias("ev")
    )
    indices = skf.tensor(
        F.flatten(F.transform("ev", lambda e: F.array(e["hour"], e["category"]))),
        F.array(F.size("ev"), F.lit(2)),
    )
    amounts = F.transform("ev", lambda e: e["amount"])
    flat = F.transform("ev", lambda e: _cell(e["hour"], e["category"]))
    zeros = skf.full(SHAPE, 0.0)
    _write(
        lists.select(
            "user_id",
            skf.scatter_nd_update(
                zeros, indices, amounts, reduction="sum", exact=True, **tensors
            ).alias("spend_sum"),
            skf.scatter_nd_update(
                zeros, indices, amounts, reduction="max", exact=True, **tensors
            ).alias("spend_max"),
            skf.scatter_elements_update(
                skf.full([CELLS], 0.0),
                flat,
                amounts,
                0,
                reduction="mean",
                use_init_val=False,
                exact=True,
                **tensors,
            ).alias("spend_mean"),
        ),
        out,
    )


def scatterkit_columns_binary(events: DataFrame, source: Path, out: Path) -> None:
    """(b') (b) writing the binary layout."""
    scatterkit_columns(events, source, out, "binary")


def _entity_tensors(pdf: pd.DataFrame) -> pd.DataFrame:
    """(c)'s function: one entity's events to its three tensors, with NumPy."""
    cell = pdf["hour"].to_numpy() * CATEGORIES + pdf["category"].to_numpy()
    amount = pdf["amount"].to_numpy()
    total = np.zeros(CELLS)
    np.add.at(total, cell, amount)
    top = np.full(CELLS, -np.inf, np.float32)
    np.maximum.at(top, cell, amount)
    count = np.bincount(cell, minlength=CELLS)
    top[count == 0] = 0
    mean = np.divide(total, count, out=np.zeros(CELLS), where=count > 0)
    return pd.DataFrame(
        {
            "user_id": [pdf["user_id"].iloc[0]],
            "spend_sum": [total.astype(np.float32)],
            "spend_max": [top],
            "spend_mean": [mean.astype(np.float32)],
        }
    )


def pandas_numpy(events: DataFrame, source: Path, out: Path) -> None:
    """(c) one pandas DataFrame per entity, NumPy's unbuffered ufuncs."""
    schema = "user_id long, spend_sum array<float>, spend_max array<float>, spend_mean array<float>"
    _write(events.groupBy("user_id").applyInPandas(_entity_tensors, schema), out)


def _aggregates(layout: str = "arrays") -> dict[str, object]:
    tensors = {"layout": layout} if layout != "arrays" else {}
    return {
        name: skf.scatter_nd_agg(
            ["hour", "category"], "amount", SHAPE, reduction=reduction, **tensors
        )
        for name, reduction in REDUCTIONS.items()
    }


def scatterkit_aggregate(events: DataFrame, source: Path, out: Path) -> None:
    """(d) scatterkit's event aggregation."""
    _write(skf.aggregate(events, "user_id", **_aggregates()), out)


def scatterkit_aggregate_binary(events: DataFrame, source: Path, out: Path) -> None:
    """(d') (d) writing the binary layout."""
    _write(skf.aggregate(events, "user_id", **_aggregates("binary")), out)


def scatterkit_groupby(events: DataFrame, source: Path, out: Path, layout: str = "arrays") -> None:
    """(e) the same aggregates as Python grouped-aggregate UDFs in Spark's groupBy."""
    tensors = {"layout": layout} if layout != "arrays" else {}
    aggs = [
        skf.scatter_nd_agg(
            ["hour", "category"], "amount", SHAPE, reduction=reduction, dtype="float", **tensors
        ).alias(name)
        for name, reduction in REDUCTIONS.items()
    ]
    _write(events.groupBy("user_id").agg(*aggs), out)


def scatterkit_groupby_binary(events: DataFrame, source: Path, out: Path) -> None:
    """(e') (e) writing the binary layout."""
    scatterkit_groupby(events, source, out, "binary")


def _constant(value: pa.Scalar, *columns: pa.Array) -> pa.Scalar:
    """(e0)'s function: the same value for every group, whatever its events."""
    return value


def groupby_floor(events: DataFrame, source: Path, out: Path) -> None:
    """(e0) Spark's floor for (e'): the same groupBy().agg() with three grouped-aggregate
    Arrow UDFs over the same columns, each returning a constant of (e')'s result type (a
    zero [24, 16] float tensor, binary layout), so that the two differ only in what the
    Python function does per call."""
    import functools
    import warnings

    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf
    from pyspark.sql.pandas.types import to_arrow_type

    from scatterkit.spark.aggregation.api import result_type

    kind = result_type("float", "binary")
    zero = {"data": bytes(4 * CELLS), "shape": SHAPE, "dtype": "float32", "error": None,
            "events": 0, "dropped": 0}  # fmt: skip
    value = pa.scalar(zero, type=to_arrow_type(kind))
    make: Any = arrow_udf  # its overloads know grouped aggregates by type hints only
    inputs = [F.col("hour"), F.col("category"), F.col("amount").cast("float")]
    with warnings.catch_warnings():  # PySpark prefers type hints; a partial has none
        warnings.simplefilter("ignore", UserWarning)
        udafs = [
            make(functools.partial(_constant, value), kind, ArrowUDFType.GROUPED_AGG)
            for _ in OUTPUTS
        ]
    aggs = [udaf(*inputs).alias(name) for udaf, name in zip(udafs, OUTPUTS)]
    _write(events.groupBy("user_id").agg(*aggs), out)


def scatterkit_job(events: DataFrame, source: Path, out: Path, layout: str = "arrays") -> None:
    """(f) scatterkit's job with an aggregation step, on the Arrow engine: the tasks read the
    events and write the tensors with pyarrow; Spark shuffles the packed events."""
    aggregates = {
        name: {"indices": ["hour", "category"], "updates": "amount", "shape": SHAPE,
               "reduction": reduction}
        for name, reduction in REDUCTIONS.items()
    }  # fmt: skip
    spec = JobSpec.from_dict({"aggregate": {"by": ["user_id"], "aggregates": aggregates}})
    if layout != "arrays":
        spec = spec.with_layout(layout)
    run_job(events.sparkSession, spec, str(source), str(out), progress=False, engine="arrow")


def scatterkit_job_binary(events: DataFrame, source: Path, out: Path) -> None:
    """(f') (f) writing the binary layout."""
    scatterkit_job(events, source, out, "binary")


def _binary_tensors(flat: np.ndarray, rows: int) -> pa.StructArray:
    """`rows` [24, 16] float tensors, C-order in `flat`, as a binary-layout column (the
    bytes are `flat`'s own buffer)."""
    size = 4 * CELLS
    offsets = pa.py_buffer(np.arange(rows + 1, dtype=np.int32) * size)
    data = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, pa.py_buffer(flat)])
    shapes = pa.ListArray.from_arrays(
        pa.array(np.arange(rows + 1, dtype=np.int32) * 2),
        pa.array(np.tile(np.array(SHAPE, np.int32), rows)),
    )
    dtypes = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(rows, np.int32)), pa.array(["float32"])
    ).cast(pa.string())
    return pa.StructArray.from_arrays([data, shapes, dtypes], names=["data", "shape", "dtype"])


def single_process(events: DataFrame, source: Path, out: Path) -> None:
    """(g) no Spark: pyarrow reads the events, pandas numbers the entities, one scatterkit
    call per tensor folds all entities' events (ScatterElementsUpdate-12 over the flat
    [entities * 384] table; exact sum and mean), pyarrow writes one file (binary layout)."""
    table = pq.read_table(str(source), columns=["user_id", "hour", "category", "amount"])
    codes, ids = pd.factorize(table.column("user_id").to_numpy(), sort=True)
    cell = table.column("hour").to_numpy() * CATEGORIES + table.column("category").to_numpy()
    target = codes.astype(np.int64) * CELLS + cell
    amount = table.column("amount").to_numpy()
    del table
    rows = len(ids)
    folds = {
        "spend_sum": {"reduction": "sum", "exact": True},
        "spend_max": {"reduction": "max", "use_init_val": False},
        "spend_mean": {"reduction": "mean", "use_init_val": False, "exact": True},
    }
    columns = {"user_id": pa.array(ids, pa.int64())}
    for name, how in folds.items():
        flat = np.zeros(rows * CELLS, np.float32)
        sk.scatter_elements_update(flat, target, amount, 0, out=flat, **how)  # type: ignore[arg-type]
        columns[name] = _binary_tensors(flat, rows)
    out.mkdir(parents=True)
    pq.write_table(pa.table(columns), out / "part-00000.parquet")


@dataclass(frozen=True)
class Contender:
    key: str
    name: str
    run: Callable[[DataFrame, Path, Path], None]  # (events, their directory, output)
    scatterkit: bool
    default: bool = True  # run unless --only names the contenders
    floor: bool = False  # a floor: no tensors to check


CONTENDERS = [
    # Not faster than the pivot at 2M events (one noisy run each), so off by default:
    Contender("sql-map", "(a) Spark SQL: cells, map, transform", spark_sql_map, False, False),
    Contender("sql-pivot", "(a) Spark SQL: pivot on the cell", spark_sql_pivot, False),
    Contender("columns", "(b) collect_list + scatterkit columns", scatterkit_columns, True),
    Contender("pandas", "(c) applyInPandas + np.add.at", pandas_numpy, False),
    Contender("aggregate", "(d) skf.aggregate", scatterkit_aggregate, True),
    Contender("groupby", "(e) groupBy().agg(skf.scatter_nd_agg)", scatterkit_groupby, True),
    Contender("job", "(f) scatterkit job, aggregation step (arrow engine)", scatterkit_job, True),
    # The binary layout (#49):
    Contender(
        "columns-binary",
        "(b') collect_list + scatterkit columns, binary",
        scatterkit_columns_binary,
        True,
        False,
    ),
    Contender("aggregate-binary", "(d') skf.aggregate, binary", scatterkit_aggregate_binary, True),
    Contender(
        "groupby-binary",
        "(e') groupBy().agg(skf.scatter_nd_agg), binary",
        scatterkit_groupby_binary,
        True,
    ),
    Contender(
        "groupby-floor",
        "(e0) groupBy().agg, constant grouped-agg Arrow UDFs (Spark's floor)",
        groupby_floor,
        False,
        floor=True,
    ),
    Contender(
        "job-binary",
        "(f') scatterkit job, aggregation step (arrow engine), binary",
        scatterkit_job_binary,
        True,
    ),
    Contender("script", "(g) one process: pyarrow + scatterkit, no Spark", single_process, True),
]
NEEDS_AGGREGATE = ("aggregate", "groupby", "job", "aggregate-binary", "groupby-binary",
                   "job-binary")  # fmt: skip
NEEDS_BINARY = ("columns-binary", "aggregate-binary", "groupby-binary", "groupby-floor",
                "job-binary", "script")  # fmt: skip


def has_aggregate() -> bool:
    return hasattr(skf, "aggregate") and hasattr(skf, "scatter_nd_agg")


def has_binary() -> bool:
    return hasattr(skf, "to_binary")


# --- shuffle bytes, from the monitoring REST API ------------------------------------


class StageMeter:
    """The shuffle bytes written by the stages of one job group (a classic session's UI)."""

    def __init__(self, spark: SparkSession) -> None:
        sc = spark.sparkContext
        if not sc.uiWebUrl:
            raise RuntimeError("the Spark UI is off (spark.ui.enabled=false)")
        self.sc = sc
        self.base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def _get(self, path: str) -> list[dict]:
        with urllib.request.urlopen(self.base + path, timeout=60) as response:
            return json.load(response)

    def shuffle_bytes(self, group: str, wait: float = 30.0) -> int:
        """Once the listener has seen every job of `group` end and its stages settle."""
        deadline = time.monotonic() + wait
        while True:
            jobs = [j for j in self._get("/jobs") if j.get("jobGroup") == group]
            ids = {s for j in jobs for s in j["stageIds"]}
            stages = [s for s in self._get("/stages") if s["stageId"] in ids]
            done = jobs and all(j["status"] != "RUNNING" for j in jobs)
            settled = all(s["status"] in ("COMPLETE", "SKIPPED", "FAILED") for s in stages)
            if (done and settled) or time.monotonic() > deadline:
                return sum(int(s.get("shuffleWriteBytes", 0)) for s in stages)
            time.sleep(0.25)


# --- the results ---------------------------------------------------------------------


def _binary_values(array: pa.StructArray, column: str) -> np.ndarray:
    """A binary-layout tensor column (``struct<data, shape, dtype>``) as a [rows, 384] array."""
    dtypes = pc.unique(pc.struct_field(array, "dtype")).to_pylist()
    if len(dtypes) > 1 or None in dtypes:
        raise ValueError(f"{column}: dtypes {dtypes}")
    dtype = np.dtype(dtypes[0] if dtypes else "float32")
    data = pc.struct_field(array, "data")
    if data.null_count:
        raise ValueError(f"{column}: {data.null_count} null byte string(s)")
    wide = pa.types.is_large_binary(data.type)
    offsets = np.frombuffer(data.buffers()[1], np.int64 if wide else np.int32)
    offsets = offsets[data.offset : data.offset + len(data) + 1]
    lengths = np.diff(offsets)
    if len(lengths) and not (lengths == CELLS * dtype.itemsize).all():
        raise ValueError(f"{column}: tensors of {sorted(set(lengths.tolist()))} bytes")
    raw = np.frombuffer(data.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    return raw.view(dtype).reshape(-1, CELLS)


def _values(table: pa.Table, column: str) -> np.ndarray:
    """A tensor column (struct with values or data, or a plain list) as a [rows, 384] array."""
    array = table.column(column).combine_chunks()
    if pa.types.is_struct(array.type):
        if array.null_count:
            raise ValueError(f"{column}: {array.null_count} null tensor(s)")
        if array.type.get_field_index("data") >= 0:
            return _binary_values(array, column)
        array = pc.struct_field(array, "values")
    if array.null_count:
        raise ValueError(f"{column}: {array.null_count} null value array(s)")
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    if len(lengths) and not (lengths == CELLS).all():
        raise ValueError(f"{column}: value arrays of {sorted(set(lengths.tolist()))} elements")
    flat = pc.list_flatten(array).to_numpy(zero_copy_only=False)
    return flat.reshape(-1, CELLS)


def read_result(out: Path, column: str, ids: list[int] | None = None) -> tuple[np.ndarray, ...]:
    """(user ids, values) of one output column, sorted by user_id."""
    filters = [("user_id", "in", ids)] if ids is not None else None
    table = pq.read_table(str(out), columns=["user_id", column], filters=filters)
    table = table.sort_by("user_id")
    return table.column("user_id").to_numpy(), _values(table, column)


def _bits(values: np.ndarray) -> np.ndarray:
    return values.view(f"u{values.dtype.itemsize}")


def same_bits(outs: list[Path]) -> dict[str, bool]:
    """Per output: equal bits (and equal entities) in every run of `outs`."""
    stable = {}
    for column in OUTPUTS:
        first_ids, first = read_result(outs[0], column)
        equal = True
        for other in outs[1:]:
            ids, values = read_result(other, column)
            equal = equal and (
                np.array_equal(first_ids, ids)
                and first.dtype == values.dtype
                and np.array_equal(_bits(first), _bits(values))
            )
        stable[column] = equal
    return stable


def _round_f32(x: Fraction) -> np.float32:
    """`x` rounded once to float32 (to nearest, ties to even)."""
    guess = np.float32(float(x))
    candidates = [
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    ]

    def distance(c: np.float32) -> tuple[Fraction, int]:
        return abs(Fraction(float(c)) - x), int(_bits(np.array([c]))[0] & 1)

    return min(candidates, key=distance)


@dataclass
class Reference:
    """The exact per-cell sums, maxima and means of a sample of entities."""

    ids: list[int]
    tensors: dict[str, np.ndarray]  # output name -> [len(ids), 384] float32
    counts: np.ndarray  # [len(ids), 384] events per cell

    @classmethod
    def of(cls, events: Path, ids: list[int]) -> Reference:
        table = pq.read_table(str(events), filters=[("user_id", "in", ids)]).to_pandas()
        tensors = {name: np.zeros((len(ids), CELLS), np.float32) for name in OUTPUTS}
        counts = np.zeros((len(ids), CELLS), np.int64)
        for row, uid in enumerate(ids):
            mine = table[table["user_id"] == uid]
            cell = (mine["hour"] * CATEGORIES + mine["category"]).to_numpy()
            amount = mine["amount"].to_numpy(np.float32)
            for c in np.unique(cell):
                picked = amount[cell == c]
                counts[row, c] = len(picked)
                exact = sum((Fraction(float(a)) for a in picked), Fraction(0))
                tensors["spend_sum"][row, c] = _round_f32(exact)
                tensors["spend_max"][row, c] = picked.max()
                tensors["spend_mean"][row, c] = _round_f32(exact / len(picked))
        return cls(ids, tensors, counts)

    def check(self, out: Path) -> tuple[str, dict[str, str]]:
        """'ok' or what differs; per float sum and mean, how many of the cells with 3 or
        more events hold the exact value rounded once."""
        problems, rounded = [], {}
        for name in OUTPUTS:
            ids, got = read_result(out, name, self.ids)
            want = self.tensors[name]
            if ids.tolist() != self.ids:
                problems.append(f"{name}: entities {ids.tolist()[:5]}...")
                continue
            got32 = got.astype(np.float32)
            if name == "spend_max":
                if not np.array_equal(got32, want):
                    problems.append(f"{name}: {int((got32 != want).sum())} cell(s) differ")
            elif not np.allclose(got32, want, rtol=1e-5, atol=1e-6):
                worst = float(np.max(np.abs(got32 - want) / np.maximum(np.abs(want), 1e-30)))
                problems.append(f"{name}: not allclose (worst relative error {worst:.2g})")
            several = self.counts >= 3
            hits = int((_bits(got32) == _bits(want))[several].sum())
            rounded[name] = f"{hits}/{int(several.sum())}"
        return ("ok" if not problems else "; ".join(problems)), rounded


@dataclass
class Outcome:
    contender: Contender
    seconds: list[float] = field(default_factory=list)
    shuffle: list[int] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # CPU seconds of this process and its children
    error: str | None = None
    stable: dict[str, bool] = field(default_factory=dict)
    check: str = ""
    rounded: dict[str, str] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")


def cpu_seconds() -> float:
    """CPU seconds (user + system) spent so far by this process and every process under it
    (Spark's JVM, its Python daemon and workers; finished children included): on a shared
    machine the work done, which a wall clock mixes with the other jobs' load."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents, spent = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()  # from field 3, the state
        parents[int(entry)] = int(fields[1])
        spent[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    me, total = os.getpid(), 0
    for pid, ticks_spent in spent.items():
        parent = parents.get(pid, 0)
        while parent > 1 and parent != me:
            parent = parents.get(parent, 0)
        if parent == me:
            total += ticks_spent
    own = os.times()
    return total / ticks + own.user + own.system + own.children_user + own.children_system


def run_once(
    spark: SparkSession,
    meter: StageMeter,
    outcome: Outcome,
    events: DataFrame,
    source: Path,
    out: Path,
    tag: str,
) -> tuple[float, int, float] | None:
    """One run in its own job group: (seconds, shuffle bytes, CPU seconds), None if it
    failed."""
    key = outcome.contender.key
    group = f"{key}-{tag}"
    spark.sparkContext.setJobGroup(group, f"bench_events {key} {tag}")
    shutil.rmtree(out, ignore_errors=True)
    started, cpu = time.perf_counter(), cpu_seconds()
    try:
        outcome.contender.run(events, source, out)
    except Exception as exc:  # a failing contender is reported, not fatal
        outcome.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
        print(f"{key} {tag} failed:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        return None
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    shuffle = meter.shuffle_bytes(group)
    print(
        f"{key} {tag}: {seconds:.2f} s, CPU {cpu:.1f} s, shuffle {shuffle / 1e6:.1f} MB",
        flush=True,
    )
    return seconds, shuffle, cpu


# --- the report -----------------------------------------------------------------------


def _cmd(args: list[str]) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        return (done.stdout + done.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return "?"


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def machine() -> list[str]:
    import pyspark

    cpu, mem = "?", "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        kib = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        mem = f"{int(kib) / 2**20:.0f} GiB"
    except OSError:
        pass
    return [
        f"- machine: {platform.machine()}, {cpu}, {os.cpu_count()} cores, {mem} RAM, "
        f"{platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, {_cmd(['java', '-version'])}",
        f"- pyspark {pyspark.__version__}, pyarrow {pa.__version__}, numpy {np.__version__}, "
        f"pandas {pd.__version__}, scatterkit {sk.__version__} ({_aggregate_source()})",
    ]


def _aggregate_source() -> str:
    """When the installed event aggregation last changed (it is being written)."""
    module = sys.modules.get("scatterkit.spark.aggregation.api")
    if module is None or module.__file__ is None:
        return "no scatterkit.spark.aggregation.api"
    stamp = time.gmtime(os.path.getmtime(module.__file__))
    return f"scatterkit/spark/aggregation/api.py of {time.strftime('%Y-%m-%d %H:%M UTC', stamp)}"


def _mb(outcome: Outcome) -> str:
    return f"{statistics.median(outcome.shuffle) / 1e6:,.0f}" if outcome.shuffle else ""


def _ratio(seconds: float, fastest: float) -> str:
    return f"{seconds / fastest:.2f}x" if fastest == fastest else ""  # no baseline ran: nan


def table(outcomes: list[Outcome]) -> list[str]:
    measured = [o for o in outcomes if o.seconds]
    baselines = [o.median for o in measured if not (o.contender.scatterkit or o.contender.floor)]
    fastest = min(baselines) if baselines else float("nan")
    yes = {True: "yes", False: "**no**"}
    lines = [
        "| contender | seconds | CPU s | vs fastest baseline | shuffle MB | bits stable: sum / "
        "max / mean | check (sample) | exact, rounded once: sum / mean | runs (s) |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        if o.error:
            lines.append(f"| {o.contender.name} | failed: {o.error} | | | | | | | |")
            continue
        stable = " / ".join(yes[o.stable[n]] for n in OUTPUTS) if o.stable else "not run"
        if o.contender.floor:
            stable, o.check = "(a floor: no tensors)", ""
        rounded = f"{o.rounded['spend_sum']} / {o.rounded['spend_mean']}" if o.rounded else ""
        if not o.seconds:  # --repeat 0: the warm-up run and the checks only
            lines.append(f"| {o.contender.name} | | | | | {stable} | {o.check} | {rounded} | |")
            continue
        runs = ", ".join(f"{t:.1f}" for t in o.seconds)
        lines.append(
            f"| {o.contender.name} | {o.median:.1f} | {_cpu(o):.1f} | "
            f"{_ratio(o.median, fastest)} | {_mb(o)} | {stable} | {o.check} | {rounded} | {runs} |"
        )
    return lines


def _cpu(outcome: Outcome) -> float:
    return statistics.median(outcome.cpu) if outcome.cpu else float("nan")


def _medians(outcomes: list[Outcome], cpu: bool = False) -> dict[str, float]:
    """Per contender key, the median seconds (or CPU seconds) of its timed runs."""
    return {
        o.contender.key: _cpu(o) if cpu else o.median for o in outcomes if o.seconds and not o.error
    }


def per_group(outcomes: list[Outcome], groups: int) -> list[str]:
    """#49 item 3: each grouped aggregate's time per group over Spark's floor (e0)."""
    t, c = _medians(outcomes), _medians(outcomes, cpu=True)
    rows = [k for k in ("groupby", "groupby-binary", "groupby-floor") if k in t]
    if "groupby-floor" not in t or len(rows) < 2:
        return []
    floor, floor_cpu = t["groupby-floor"], c["groupby-floor"]
    names = {o.contender.key: o.contender.name for o in outcomes}
    lines = [
        "| grouped aggregate (3 per group) | seconds | us per group | vs (e0), the floor "
        "| us per call over the floor's | vs (b) | CPU s | CPU vs (e0) | CPU us per call over "
        "the floor's | CPU vs (b) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    calls = groups * len(OUTPUTS)
    for key in rows:
        versus = f"{t[key] / t['columns']:.2f}x" if "columns" in t else ""
        cpu_versus = f"{c[key] / c['columns']:.2f}x" if "columns" in c else ""
        lines.append(
            f"| {names[key]} | {t[key]:.1f} | {t[key] / groups * 1e6:,.0f} | "
            f"{t[key] / floor:.2f}x | {(t[key] - floor) / calls * 1e6:,.0f} | {versus} | "
            f"{c[key]:.1f} | {c[key] / floor_cpu:.2f}x | "
            f"{(c[key] - floor_cpu) / calls * 1e6:,.0f} | {cpu_versus} |"
        )
    return lines


TARGETS = [  # (#49 item, numerator, denominator, at most, what)
    ("3", "groupby", "columns", 1.0, "(e) over (b): groupBy().agg no slower than (b)"),
    ("3", "groupby-binary", "columns", 1.0, "(e') over (b)"),
    ("3", "groupby", "groupby-floor", 3.0, "(e) over (e0): per group at most 3x the floor"),
    ("3", "groupby-binary", "groupby-floor", 3.0, "(e') over (e0)"),
    ("4", "aggregate-binary", "job-binary", 1.5, "(d') over (f'): skf.aggregate within 1.5x"),
    ("4", "aggregate-binary", "job", 1.5, "(d') over (f), the job's default layout"),
    ("4", "job", "script", 1.5, "(f) over (g): the job within 1.5x of one process"),
    ("4", "job-binary", "script", 1.5, "(f') over (g)"),
]


def targets(outcomes: list[Outcome]) -> list[str]:
    """#49's targets that this run measured: the ratio of two medians, and whether it is
    within the target."""
    t, c = _medians(outcomes), _medians(outcomes, cpu=True)
    lines = [
        "| #49 | ratio | measured | target | met | of CPU seconds |",
        "| --- | --- | ---: | ---: | --- | ---: |",
    ]
    for item, top, bottom, most, what in TARGETS:
        if top in t and bottom in t:
            ratio = t[top] / t[bottom]
            met = "yes" if ratio <= most else "**no**"
            lines.append(
                f"| {item} | {what} | {ratio:.2f}x | {most:.1f}x | {met} | "
                f"{c[top] / c[bottom]:.2f}x |"
            )
    return lines if len(lines) > 2 else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--entities", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=4, help="Parquet files of events")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--warm-up", type=int, default=1, help="untimed rounds first (0: every round timed)"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=20, help="entities checked with NumPy")
    parser.add_argument(
        "--partitions",
        default="3,16",
        help="partition counts of the shuffled events for the stability runs ('' skips them)",
    )
    parser.add_argument(
        "--only", default="", help=f"contenders to run, of {[c.key for c in CONTENDERS]}"
    )
    parser.add_argument(
        "--workdir",
        default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "scatterkit-bench-events"),
        help="events (reused when present) and outputs",
    )
    parser.add_argument("--out", default=str(HERE / "RESULTS_EVENTS.md"))
    args = parser.parse_args()

    wanted = [k for k in args.only.split(",") if k] or [c.key for c in CONTENDERS if c.default]
    unknown = sorted(set(wanted) - {c.key for c in CONTENDERS})
    if unknown:
        parser.error(f"unknown contender(s) {unknown}")
    skipped = []
    contenders = []
    for c in CONTENDERS:
        if c.key not in wanted:
            continue
        if c.key in NEEDS_AGGREGATE and not has_aggregate():
            skipped.append(c.name)  # the installed scatterkit predates skf.aggregate
            continue
        if c.key in NEEDS_BINARY and not has_binary():
            skipped.append(c.name)  # the installed scatterkit predates the binary layout
            continue
        contenders.append(c)
    partitions = [int(p) for p in args.partitions.split(",") if p]

    workdir = Path(args.workdir)
    name = f"events-{args.events}-{args.entities}-{args.files}-seed{args.seed}"
    started = time.perf_counter()
    events_path = generate(workdir / name, args.events, args.entities, args.files, args.seed)
    print(f"events ready in {time.perf_counter() - started:.1f} s: {events_path}", flush=True)

    header = machine()
    counts = cell_counts(events_path, args.entities)
    loads = [_load()]
    starting = time.perf_counter()
    spark = build_session(
        master=args.master,
        conf={"spark.driver.memory": args.driver_memory, "spark.ui.enabled": "true"},
        app_name="scatterkit-bench-events",
    )
    spark.range(1).collect()  # the first job starts the executors' side
    spark_start = time.perf_counter() - starting
    print(f"Spark started in {spark_start:.1f} s", flush=True)
    shuffle_conf = (
        f"{spark.conf.get('spark.sql.shuffle.partitions')} "
        f"(adaptive execution: {spark.conf.get('spark.sql.adaptive.enabled')})"
    )
    meter = StageMeter(spark)
    outputs = workdir / "outputs"
    outcomes = [Outcome(c) for c in contenders]
    last: dict[str, Path] = {}

    def publish(stage: str) -> None:
        """The report as it stands (rewritten after every round and stability check)."""
        lines = report(args, shuffle_conf, header, counts, loads, partitions, outcomes, spark_start)
        if stage:
            lines.insert(2, f"*Incomplete: {stage}.*\n")
        if skipped:
            lines.append(
                f"- not run: {', '.join(skipped)}: the installed scatterkit has no "
                "`scatterkit.spark.functions.aggregate` or binary layout yet."
            )
        Path(args.out).write_text("\n".join([*lines, ""]))

    # Interleaved: the first warm_up rounds warm every contender up, the rest are measured.
    for attempt in range(args.warm_up + args.repeat):
        for outcome in outcomes:
            if outcome.error:
                continue
            key = outcome.contender.key
            out = outputs / f"{key}-{attempt}"
            events = spark.read.parquet(str(events_path))
            got = run_once(spark, meter, outcome, events, events_path, out, f"run{attempt}")
            if key in last and last[key] != out:
                shutil.rmtree(last[key], ignore_errors=True)
            if got is None:
                continue
            last[key] = out
            if attempt >= args.warm_up:
                outcome.seconds.append(got[0])
                outcome.shuffle.append(got[1])
                outcome.cpu.append(got[2])
        if attempt >= args.warm_up:
            publish(f"{attempt + 1 - args.warm_up} of {args.repeat} timed rounds done")
    loads.append(_load())

    rng = np.random.default_rng(args.seed + 1)
    ids = sorted(int(i) for i in rng.choice(args.entities, args.sample, replace=False))
    reference = Reference.of(events_path, ids)
    shuffles = {
        n: shuffled(spark, events_path, workdir / f"{name}-shuffled{n}", args.seed + n, n)
        for n in partitions
    }
    for outcome in outcomes:
        key = outcome.contender.key
        if key not in last or outcome.contender.floor:
            shutil.rmtree(last.get(key, outputs / "none"), ignore_errors=True)
            continue
        outcome.check, outcome.rounded = reference.check(last[key])
        print(f"{key}: check {outcome.check}, rounded once {outcome.rounded}", flush=True)
        runs = [last[key]]
        for n, path in shuffles.items():
            events = spark.read.parquet(str(path)).repartition(n)
            out = outputs / f"{key}-shuffled-{n}"
            if run_once(spark, meter, outcome, events, path, out, f"shuffled{n}") is None:
                break
            runs.append(out)
        else:
            if len(runs) > 1:
                outcome.stable = same_bits(runs)
                print(f"{key}: bits stable {outcome.stable}", flush=True)
        for out in runs:
            shutil.rmtree(out, ignore_errors=True)
        publish(f"checks done up to {outcome.contender.name}")
    spark.stop()
    publish("")
    print(Path(args.out).read_text())
    return 0


def report(
    args: argparse.Namespace,
    shuffle_conf: str,
    header: list[str],
    counts: dict[str, int],
    loads: list[str],
    partitions: list[int],
    outcomes: list[Outcome],
    spark_start: float,
) -> list[str]:
    cells = args.entities * CELLS
    after = f", {loads[1]} after them" if len(loads) > 1 else ""
    groups, goals = per_group(outcomes, args.entities), targets(outcomes)
    return [
        "## Event tables to tensors (#31)",
        "",
        f"`python bench/spark/bench_events.py --events {args.events} --entities "
        f"{args.entities} --repeat {args.repeat} --warm-up {args.warm_up} --master {args.master}"
        f"{f' --only {args.only}' if args.only else ''}`: "
        f"{args.events:,} events (`user_id` bigint of {args.entities:,} entities, uniform; "
        "`hour` int 0..23, `category` int 0..15, uniform; `amount` float, log-normal(3, 1)) "
        f"in {args.files} Parquet files (snappy). Per entity, the sum, max and mean of "
        "`amount` per (hour, category) cell as three [24, 16] float tensors (0 where the "
        f"entity has no event: {cells:,} cells per tensor), written as Parquet (snappy). "
        f"Median of {args.repeat} run(s) after {args.warm_up} warm-up round(s), contenders "
        "interleaved (round robin; `--repeat 0`: the warm-up and the checks only). Shuffle MB: "
        "`shuffleWriteBytes` of the run's stages (monitoring REST API). "
        f"Driver memory {args.driver_memory}, spark.sql.shuffle.partitions "
        f"{shuffle_conf}, Arrow batches of "
        f"{DEFAULT_CONF['spark.sql.execution.arrow.maxRecordsPerBatch']} rows at most.",
        "",
        *header,
        f"- (entity, cell) pairs with 1 event: {counts['1']:,}, with 2: {counts['2']:,}, "
        f"with 3 or more: {counts['3+']:,} (at most {counts['most']}); only the last can "
        "have a float sum that depends on the order of its events",
        f"- load average: {loads[0]} before the timed runs{after} "
        "(a shared machine: other jobs ran at the same time)",
        f"- Spark's start: {spark_start:.1f} s (`build_session` and a first job; in no "
        "contender's time)",
        "",
        *table(outcomes),
        "",
        *([*groups, ""] if groups else []),
        *([*goals, ""] if goals else []),
        "- *vs fastest baseline*: the contender's median over the fastest non-scatterkit "
        "contender's ((a) or (c)).",
        "- *bits stable*: the same bits in three runs: on the events as written, and on the "
        "events in a random order (`orderBy(rand)`) split into "
        f"{' and '.join(str(n) for n in partitions) or '(none)'} partitions "
        "(`repartition`); per tensor, entities sorted by `user_id`.",
        f"- *check*: {args.sample} entities against NumPy: max equal, sum and mean within "
        "`allclose(rtol=1e-5, atol=1e-6)` of the exact value rounded once to float32. *exact, "
        "rounded once*: of those entities' cells with 3 or more events, how many hold "
        "that value bit for bit.",
        "- (b) builds the mean with ScatterElementsUpdate-12 on the flat 384 table (its "
        "tensors are [384]); (a) and (c) write plain `array<float>` columns.",
        "- *us per group*: the median over the entities; *us per call over the floor's*: "
        "the median less (e0)'s, over the entities times the 3 aggregates (what one call of "
        "scatter_nd_agg's function costs beyond a call that returns a constant).",
        "- (g) runs in this driver process, Spark idle; compare it with the job's time plus "
        "Spark's start for two whole processes.",
        "- *CPU s*: the median CPU seconds (user + system) of the driver process and every "
        "process under it (Spark's JVM, its Python workers) over the run: the work done, "
        "which the wall clock of a shared machine mixes with the other jobs' load.",
    ]


if __name__ == "__main__":
    sys.exit(main())
