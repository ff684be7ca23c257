"""Event aggregation: scatter_nd_agg in groupBy().agg() and aggregate(), against NumPy.

Each group's tensor is checked against a reference written here with NumPy and exact
rationals (float sums and means rounded once, from Fractions), for every reduction, for
float32, float64, int64 and bool, with k = rank (one value per event) and k < rank (a
slice per event), nulls included. Then the same bits for every partitioning and row order,
each on_error mode, a key holding half of the events, and the executor's folding across
batch boundaries (no Spark) with tiny budgets.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest
from pyspark.sql import functions as F
from spark_helpers import pa, pq, spark, write_parquet  # noqa: F401

from scatterkit.spark import functions as skf
from scatterkit.spark.aggregation import tasks as agg_tasks
from scatterkit.spark.aggregation.tasks import combine_events, finish_groups
from scatterkit.spark.aggregation.wire import AggPlan, events_per_row
from scatterkit.spark.cli import main
from scatterkit.spark.core.errors import JobFailed, SpecError
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.specs.agg_spec import check_agg
from scatterkit.spark.specs.job_spec import JobSpec

pytestmark = pytest.mark.spark

SHAPE = (4, 3)
GROUPS = 6
REDUCTIONS = {
    "float32": ("sum", "min", "max", "mean", "none"),
    "float64": ("sum", "min", "max", "mean", "none"),
    "int64": ("sum", "prod", "min", "max", "mean", "none"),
    "bool": ("sum", "prod", "min", "max", "none"),
}
SPARK_TYPE = {"float32": "float", "float64": "double", "int64": "bigint", "bool": "boolean"}
FILL = {"float32": 7.5, "float64": -2.25, "int64": 9, "bool": True}


def _values(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    if dtype == "bool":
        return rng.random(n) < 0.3
    if dtype == "int64":
        return rng.integers(-(2**62), 2**62, n) if n else np.zeros(0, np.int64)
    big = (
        rng.choice([1e-30, 1.0, 1e30], n)
        if dtype == "float32"
        else rng.choice([1e-300, 1, 1e300], n)
    )
    return (rng.standard_normal(n) * big).astype(dtype)


def events_frame(dtype: str, n: int = 400, seed: int = 3) -> pd.DataFrame:
    """Events of GROUPS groups over a (4, 3) tensor: g, h (negatives wrap), c, x (a value),
    xs (a slice of 3 values, some null), t (order; ties on purpose), some nulls."""
    rng = np.random.default_rng(seed)
    x = _values(rng, dtype, n)
    xs = [list(_values(rng, dtype, 3)) for _ in range(n)]
    frame = pd.DataFrame(
        {
            "g": rng.integers(0, GROUPS, n),
            "h": rng.integers(-4, 4, n),
            "c": rng.integers(0, 3, n),
            "x": pd.Series(list(x), dtype=object),
            "xs": pd.Series(xs, dtype=object),
            "t": rng.integers(0, 5, n),
        }
    )
    frame.loc[rng.random(n) < 0.05, "x"] = None
    for row in np.flatnonzero(rng.random(n) < 0.05):
        frame.at[row, "xs"] = None
    for row in np.flatnonzero(rng.random(n) < 0.05):  # a null inside a slice
        if frame.at[row, "xs"] is not None:
            frame.at[row, "xs"] = [None if j == 1 else v for j, v in enumerate(frame.at[row, "xs"])]
    frame.loc[rng.random(n) < 0.03, "t"] = None
    return frame


def to_spark(session, frame: pd.DataFrame, dtype: str, partitions: int = 3):
    kind = SPARK_TYPE[dtype]
    schema = f"g bigint, h int, c int, x {kind}, xs array<{kind}>, t bigint"
    rows = [
        (
            int(r.g),
            int(r.h),
            int(r.c),
            None if r.x is None else _py(r.x),
            None if r.xs is None else [None if v is None else _py(v) for v in r.xs],
            None if pd.isna(r.t) else int(r.t),
        )
        for r in frame.itertuples()
    ]
    return session.createDataFrame(rows, schema).repartition(partitions)


def _py(v):
    return v.item() if isinstance(v, np.generic) else v


# -- the reference -------------------------------------------------------------------------


def _round(value: Fraction, dtype: np.dtype):
    """A rational rounded once to `dtype`, to nearest, ties to even."""
    guess = np.array(float(value), dtype)  # within one ulp
    best = None
    for candidate in (np.nextafter(guess, -np.inf), guess, np.nextafter(guess, np.inf)):
        if not np.isfinite(candidate):
            continue
        distance = abs(Fraction(float(candidate)) - value)
        even = (
            int(np.array(candidate).view(np.uint64 if dtype == np.float64 else np.uint32)) % 2 == 0
        )
        if best is None or distance < best[0] or (distance == best[0] and even):
            best = (distance, candidate)
    return best[1]


def _total_key(v) -> int:
    bits = (
        int(np.array(v, np.float64).view(np.int64))
        if isinstance(v, (float, np.floating))
        else int(v)
    )
    if isinstance(v, (float, np.floating)) and bits < 0:
        bits ^= 0x7FFFFFFFFFFFFFFF
    return bits


def reference(frame: pd.DataFrame, dtype: str, reduction: str, k: int) -> dict[int, np.ndarray]:
    """Each group's tensor, element by element from the group's events."""
    np_dtype = np.dtype(dtype)
    size = math.prod(SHAPE)
    out = {}
    for g, events in frame.groupby("g"):
        terms: dict[int, list] = {}
        for r in events.itertuples():
            h = r.h + 4 if r.h < 0 else r.h
            if k == 2:
                if r.x is None:
                    continue
                items = [(h * 3 + r.c, r.x)]
            else:
                if r.xs is None:
                    continue
                items = [(h * 3 + j, v) for j, v in enumerate(r.xs) if v is not None]
            if reduction == "none" and pd.isna(r.t):
                continue
            for cell, v in items:
                terms.setdefault(cell, []).append((r.t, v))
        tensor = np.full(size, FILL[dtype], np_dtype)
        for cell, pairs in terms.items():
            values = [v for _, v in pairs]
            tensor[cell] = _reduce(values, pairs, np_dtype, reduction)
        out[int(g)] = tensor.reshape(SHAPE)
    return out


def _reduce(values, pairs, dtype: np.dtype, reduction: str):
    if reduction == "none":
        return max(pairs, key=lambda p: (p[0], _total_key(p[1])))[1]
    if dtype == np.bool_:
        return any(values) if reduction in ("sum", "max") else all(values)
    if dtype.kind == "f":
        if reduction in ("sum", "mean"):
            total = sum(Fraction(float(v)) for v in values)
            return _round(total / len(values) if reduction == "mean" else total, dtype)
        return (min if reduction == "min" else max)(values)
    ints = [int(v) for v in values]
    if reduction == "mean":
        return sum(ints) // len(ints)
    if reduction == "prod":
        acc = np.array(1, np.int64)
        for v in ints:
            acc = np.array(np.multiply(acc, np.int64(v), dtype=np.int64))  # wraps
        return acc
    if reduction == "sum":
        return (sum(ints) + (1 << 63)) % (1 << 64) - (1 << 63)  # wraps
    return (min if reduction == "min" else max)(ints)


def _aggregates(dtype: str):
    out = {}
    for reduction in REDUCTIONS[dtype]:
        order = {"order_by": "t"} if reduction == "none" else {}
        fill = FILL[dtype]
        out[f"{reduction}_k2"] = skf.scatter_nd_agg(
            ["h", "c"], "x", SHAPE, reduction=reduction, fill=fill, dtype=SPARK_TYPE[dtype], **order
        )
        out[f"{reduction}_k1"] = skf.scatter_nd_agg(
            ["h"], "xs", SHAPE, reduction=reduction, fill=fill, dtype=SPARK_TYPE[dtype], **order
        )
    return out


def tensors(rows, column: str, dtype: str) -> dict[int, np.ndarray]:
    return {
        int(r["g"]): np.array(r[column]["values"], np.dtype(dtype)).reshape(r[column]["shape"])
        for r in rows
    }


def assert_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    if actual.dtype.kind == "f":  # NaN is NaN (the default quiet one), -0 is not +0
        same = (actual.view(f"u{actual.itemsize}") == expected.view(f"u{actual.itemsize}")) | (
            np.isnan(actual) & np.isnan(expected)
        )
        assert same.all(), f"{what}:\n{actual}\n{expected}"
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=what)


@pytest.mark.parametrize("dtype", list(REDUCTIONS))
def test_every_reduction_against_numpy_both_ways(spark, dtype):  # noqa: F811
    frame = events_frame(dtype)
    events = to_spark(spark, frame, dtype)
    aggs = _aggregates(dtype)
    planned = skf.aggregate(events, "g", **aggs).collect()
    bare = events.groupBy("g").agg(*[c.alias(n) for n, c in _aggregates(dtype).items()]).collect()
    assert len(planned) == len(bare) == GROUPS
    counts = frame.groupby("g").size()
    for name in aggs:
        reduction, k = name.split("_k")[0], int(name[-1])
        want = reference(frame, dtype, reduction, k)
        for rows, way in ((planned, "aggregate"), (bare, "groupBy().agg()")):
            got = tensors(rows, name, dtype)
            for g in want:
                assert_bits(got[g], want[g], f"{way} {name} group {g}")
            for r in rows:
                result = r[name]
                assert result["error"] is None and result["dropped"] == 0
                assert 0 < result["events"] <= counts[r["g"]]


def test_a_group_of_only_null_values_holds_fill_and_counts_no_event(spark):  # noqa: F811
    events = spark.createDataFrame(
        [(1, 0, None), (1, 1, None), (2, 1, 3.0)], "g long, i int, v double"
    )
    rows = {
        r["g"]: r["t"]
        for r in skf.aggregate(
            events, "g", t=skf.scatter_nd_agg(["i"], "v", [2], fill=-1)
        ).collect()
    }
    assert rows[1]["values"] == [-1.0, -1.0] and rows[1]["events"] == 0
    assert rows[2]["values"] == [-1.0, 3.0] and rows[2]["events"] == 1


def test_dtype_defaults_to_the_updates_type_in_aggregate_and_to_double_in_a_bare_agg(spark):  # noqa: F811
    events = spark.createDataFrame([(1, 0, 2), (1, 0, 3)], "g long, i int, v int")
    planned = skf.aggregate(events, "g", t=skf.scatter_nd_agg(["i"], "v", [2]))
    assert planned.schema["t"].dataType.simpleString().startswith("struct<values:array<int>")
    assert planned.collect()[0]["t"]["values"] == [5, 0]
    bare = events.groupBy("g").agg(skf.scatter_nd_agg(["i"], "v", [2]).alias("t"))
    assert bare.schema["t"].dataType.simpleString().startswith("struct<values:array<double>")
    assert bare.collect()[0]["t"]["values"] == [5.0, 0.0]


def test_a_product_of_integers_needs_no_dtype(spark):  # noqa: F811
    events = spark.createDataFrame([(1, 0, 3), (1, 0, -5), (1, 1, 2)], "g long, i int, v long")
    column = skf.scatter_nd_agg(["i"], "v", [3], reduction="prod", fill=1)
    assert skf.aggregate(events, "g", p=column).collect()[0]["p"]["values"] == [-15, 2, 1]
    bare = events.groupBy("g").agg(skf.scatter_nd_agg(["i"], "v", [3], reduction="prod").alias("p"))
    assert bare.collect()[0]["p"]["values"] == [-15, 2, 0]


def test_select_over_a_whole_table_is_one_group(spark):  # noqa: F811
    events = spark.createDataFrame([(0, 1.5), (1, 2.0), (0, 0.25)], "i int, v double")
    row = events.select(skf.scatter_nd_agg(["i"], "v", [3], dtype="double").alias("t")).collect()
    assert row[0]["t"]["values"] == [1.75, 2.0, 0.0] and row[0]["t"]["events"] == 3


# -- the same bits whatever the partitioning ------------------------------------------------


def _special_frame(n: int = 3000, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 1.0])
    x = rng.standard_normal(n) * rng.choice([1e-20, 1.0, 1e20], n)
    pick = rng.random(n) < 0.01
    x[pick] = rng.choice(specials, pick.sum())
    return pd.DataFrame(
        {
            "g": rng.integers(0, 40, n),
            "h": rng.integers(0, 4, n),
            "c": rng.integers(0, 3, n),
            "x": x,
            "i": rng.integers(-(2**62), 2**62, n),
            "t": rng.integers(0, 3, n),
        }
    )


def test_the_same_bits_for_1_3_and_16_partitions_shuffled(spark):  # noqa: F811
    frame = _special_frame()
    base = spark.createDataFrame(frame)
    aggs = {}
    for kind in ("float", "double"):
        for reduction in ("sum", "mean", "min", "max"):
            aggs[f"{kind}_{reduction}"] = (["h", "c"], "x", reduction, kind, None)
        aggs[f"{kind}_none"] = (["h", "c"], "x", "none", kind, "t")
    for reduction in ("sum", "prod", "min", "max", "mean"):
        aggs[f"long_{reduction}"] = (["h", "c"], "i", reduction, "bigint", None)

    def columns():
        return {
            n: skf.scatter_nd_agg(ix, up, SHAPE, reduction=r, dtype=d, order_by=o)
            for n, (ix, up, r, d, o) in aggs.items()
        }

    results = []
    for partitions, seed in ((1, 1), (3, 2), (16, 3)):
        shuffled = base.orderBy(F.rand(seed)).repartition(partitions)
        for way in ("aggregate", "agg"):
            if way == "aggregate":
                df = skf.aggregate(shuffled, "g", **columns())
            else:
                df = shuffled.groupBy("g").agg(*[c.alias(n) for n, c in columns().items()])
            rows = sorted(df.collect(), key=lambda r: r["g"])
            results.append(
                {
                    n: b"".join(np.array(r[n]["values"], _np(aggs[n][3])).tobytes() for r in rows)
                    for n in aggs
                }
            )
    print("partitions 1, 3, 16 shuffled; aggregate and groupBy().agg():")
    for name in aggs:
        digests = {hash(r[name]) for r in results}
        print(f"  {name:12s} {len(results)} results, {len(digests)} distinct")
        assert len(digests) == 1, name


def _np(kind: str) -> np.dtype:
    return {
        "float": np.dtype(np.float32),
        "double": np.dtype(np.float64),
        "bigint": np.dtype(np.int64),
    }[kind]


# -- bad events ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_events(spark):  # noqa: F811
    rows = [(1, 0, 1.0), (1, 5, 2.0), (2, None, 3.0), (2, 1, 4.0), (3, -2, 5.0), (3, 1, 6.0)]
    return spark.createDataFrame(rows, "user long, i int, v double")


def test_fail_names_the_group_and_the_reason(bad_events):
    for run in (
        lambda c: skf.aggregate(bad_events, "user", t=c).collect(),
        lambda c: bad_events.groupBy("user").agg(c.alias("t")).collect(),
    ):
        with pytest.raises(Exception) as caught:
            run(skf.scatter_nd_agg(["i"], "v", [2], dtype="double"))
        text = str(caught.value)
        assert (
            "coordinate i=5 is out of range [-2, 2) of dimension 0" in text
            or "coordinate i is null" in text
        )


def test_fail_in_aggregate_names_the_group_key(spark):  # noqa: F811
    events = spark.createDataFrame([(1, 0, 1.0), (42, 7, 2.0)], "user long, i int, v double")
    with pytest.raises(Exception, match=r"group user=42: coordinate i=7 is out of range"):
        skf.aggregate(events, "user", t=skf.scatter_nd_agg(["i"], "v", [2])).collect()


def test_keep_nulls_the_groups_tensor_and_keeps_its_message(bad_events):
    rows = {
        r["user"]: r["t"]
        for r in skf.aggregate(
            bad_events, "user", t=skf.scatter_nd_agg(["i"], "v", [2], on_error="keep")
        ).collect()
    }
    assert rows[1]["values"] is None and rows[1]["shape"] is None
    assert rows[1]["error"] == "coordinate i=5 is out of range [-2, 2) of dimension 0"
    assert rows[2]["values"] is None and rows[2]["error"] == "coordinate i is null"
    assert rows[3]["values"] == [5.0, 6.0] and rows[3]["error"] is None  # -2 wraps to 0


def test_drop_skips_the_event_and_counts_it(bad_events):
    for df in (
        skf.aggregate(bad_events, "user", t=skf.scatter_nd_agg(["i"], "v", [2], on_error="drop")),
        bad_events.groupBy("user").agg(
            skf.scatter_nd_agg(["i"], "v", [2], on_error="drop", dtype="double").alias("t")
        ),
    ):
        rows = {r["user"]: r["t"] for r in df.collect()}
        assert (
            rows[1]["values"] == [1.0, 0.0] and rows[1]["dropped"] == 1 and rows[1]["events"] == 1
        )
        assert rows[2]["values"] == [0.0, 4.0] and rows[2]["dropped"] == 1
        assert rows[3]["dropped"] == 0 and rows[3]["events"] == 2


def test_a_slice_of_the_wrong_length_follows_on_error(spark):  # noqa: F811
    events = spark.createDataFrame(
        [(1, 0, [1.0, 2.0]), (1, 1, [3.0])], "g long, i int, v array<double>"
    )
    row = skf.aggregate(
        events, "g", t=skf.scatter_nd_agg(["i"], "v", [2, 2], on_error="keep")
    ).collect()[0]
    assert row["t"]["error"] == "updates 'v' holds 1 value(s); a slice of shape [2] takes 2"


# -- scale: a key with half of the events -----------------------------------------------------


def test_a_key_with_half_of_the_events_is_combined_before_the_shuffle(spark):  # noqa: F811
    rng = np.random.default_rng(8)
    n = 60_000
    frame = pd.DataFrame(
        {
            "g": np.where(rng.random(n) < 0.5, 0, rng.integers(1, 2000, n)),
            "h": rng.integers(0, 4, n),
            "c": rng.integers(0, 3, n),
            "x": rng.standard_normal(n),
        }
    )
    events = spark.createDataFrame(frame).repartition(4)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2000")
    try:
        column = skf.scatter_nd_agg(["h", "c"], "x", SHAPE)
        result = skf.aggregate(events, "g", t=column)
        rows = {r["g"]: r["t"] for r in result.collect()}
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    for g in (0, 1, 1999):
        events_of_g = frame[frame.g == g]
        want = np.zeros(math.prod(SHAPE))
        for cell, values in events_of_g.groupby(events_of_g.h * 3 + events_of_g.c).x:
            want[cell] = math.fsum(values)  # correctly rounded: the exact sum rounded once
        assert_bits(np.array(rows[g]["values"]), want, f"group {g}")
        assert rows[g]["events"] == len(events_of_g)


# -- the executor tasks without Spark: batch boundaries, budgets, combining --------------------


def _task_batches(frame: pd.DataFrame, rows_per_batch: int, kinds: bool = False):
    table = pa.table(
        {
            "__key0": frame.g.to_numpy(),
            "__coord0": frame.h.to_numpy(np.int32),
            "__coord1": frame.c.to_numpy(np.int32),
            "__value0": frame.x.to_numpy(),
        }
    )
    return table.to_batches(max_chunksize=rows_per_batch)


def _run_tasks(frame, map_batch, reduce_batch, monkeypatch, budget, flush):
    monkeypatch.setattr(agg_tasks, "STATE_BUDGET", budget)
    monkeypatch.setattr(agg_tasks, "FLUSH_EVENTS", flush)
    plan = AggPlan(("g",), (check_agg(["h", "c"], "x", list(SHAPE), dtype="double"),))
    combined = pa.Table.from_batches(
        list(combine_events(plan, iter(_task_batches(frame, map_batch))))
    )
    order = np.lexsort([combined.column("__key0").to_numpy()])
    ordered = combined.take(pa.array(order))
    out = pa.Table.from_batches(
        list(finish_groups(plan, iter(ordered.to_batches(max_chunksize=reduce_batch))))
    )
    return combined, {
        k: np.array(v["values"])
        for k, v in zip(out.column("__key0").to_pylist(), out.column("__agg0").to_pylist())
    }


def test_tasks_give_the_same_bits_for_any_batch_sizes_flushes_and_budgets(monkeypatch):
    rng = np.random.default_rng(4)
    n = 5000
    frame = pd.DataFrame(
        {
            "g": np.where(rng.random(n) < 0.5, 3, rng.integers(0, 50, n)),
            "h": rng.integers(0, 4, n),
            "c": rng.integers(0, 3, n),
            "x": rng.standard_normal(n) * 1e10,
        }
    )
    first = None
    # (events per map batch, rows per reduce batch, state budget, events per flush, whether
    # the key with half of the events has a state's worth in a flush)
    for map_batch, reduce_batch, budget, flush, combines in (
        (5000, 5000, 1 << 30, 1 << 20, True),
        (700, 33, 1 << 30, 1500, True),
        (997, 101, 3000, 1, True),
        (64, 7, 1 << 30, 64, False),
    ):
        combined, result = _run_tasks(frame, map_batch, reduce_batch, monkeypatch, budget, flush)
        kinds = combined.column("__kind").to_numpy()
        assert (kinds == 1).any() == combines, "the key with half of the events is combined"
        assert len(result) == frame.g.nunique()
        if first is None:
            first = result
        for g in first:
            assert first[g].tobytes() == result[g].tobytes(), (map_batch, reduce_batch, flush, g)
        packed = combined.filter(pc.equal(combined.column("__kind"), 0)).combine_chunks()
        lengths = events_per_row(packed.column("__cell0").chunk(0))
        folded = sum(v["events"] for v in _states_of(combined))
        assert lengths.sum() + folded == n, "every event is packed or folded, once"
    assert combined.num_rows < n / 2, "packing and combining shrank the rows shuffled"


@pytest.mark.parametrize("keys", [1, 300, 70_000])  # one radix pass, or two past 2^16 keys
def test_the_map_side_groups_an_integer_key_without_sorting_it(keys):
    from scatterkit.spark.aggregation.tasks import _grouping_order

    rng = np.random.default_rng(keys)
    key = rng.integers(-(2**62), 2**62, keys)[rng.integers(0, keys, 200_000)]
    order = _grouping_order(pa.array(key))
    assert np.array_equal(np.sort(order), np.arange(len(key)))  # every row, once
    grouped = key[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    assert len(starts) == len(np.unique(key)), "each key's rows are together"


# -- the job's aggregation step ------------------------------------------------------------------

JOB = {
    "aggregate": {
        "by": ["user"],
        "aggregates": {
            "spend": {"indices": ["h", "c"], "updates": "x", "shape": [4, 3], "on_error": "keep"},
            "latest": {"indices": ["h"], "updates": "x", "shape": [4], "reduction": "none",
                       "order_by": "t", "on_error": "drop"},
        },
    },
    "steps": [
        {"op": "SliceScatter-15", "attributes": {"start": 0, "stop": 1, "step": 1, "axis": 0},
         "inputs": {"data": "spend", "updates": {"fill": -1.0, "shape": [1, 3], "dtype": "double"}},
         "output": "spend_masked"}
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def event_files(tmp_path_factory):
    rng = np.random.default_rng(12)
    n = 2000
    table = pa.table(
        {
            "user": rng.integers(0, 30, n),
            "h": rng.integers(0, 4, n).astype(np.int32),
            "c": rng.integers(0, 3, n).astype(np.int32),
            "x": rng.standard_normal(n),
            "t": rng.integers(0, 100, n),
        }
    )
    h = table.column("h").to_numpy().copy()
    h[[5, 6]] = 4  # two bad events: user of row 5 and 6 get errors (spend) and drops (latest)
    table = table.set_column(1, "h", pa.array(h))
    return table, write_parquet(tmp_path_factory.mktemp("job_events") / "in", table, files=3)


def test_the_job_aggregates_then_runs_the_steps_on_both_engines(spark, event_files, tmp_path):  # noqa: F811
    table, source = event_files
    spec = JobSpec.from_dict(JOB)
    bad_users = {int(table.column("user")[r].as_py()) for r in (5, 6)}
    outputs, counts = {}, {}
    for engine in ("arrow", "spark"):
        summary = run_job(
            spark, spec, str(source), str(tmp_path / engine), engine=engine, on_error="keep"
        )
        # The arrow engine's tasks count what they write; the spark engine's output is read.
        counts[engine] = (
            summary.rows_out, summary.errors, summary.error_rows, summary.aggregated,
            summary.tensor_bytes_out,
        )  # fmt: skip
        assert summary.engine == engine and summary.rows_in == 2000 and summary.rows_out == 30
        assert summary.aggregated["spend"]["error_groups"] == len(bad_users)
        assert summary.aggregated["latest"]["dropped"] == 2
        assert summary.aggregated["latest"]["events"] == 1998
        lines = "\n".join(summary.lines())
        assert "rows      2,000 events in, 30 groups out" in lines
        assert "latest: 1,998 folded, 2 dropped, 0 group(s) kept in error" in lines
        outputs[engine] = pq.read_table(tmp_path / engine).sort_by("user")
    assert outputs["arrow"].equals(outputs["spark"])
    assert counts["arrow"] == counts["spark"]
    assert counts["arrow"][1] == {"spend_masked": len(bad_users)}  # the step's kept errors
    rows = outputs["arrow"].to_pylist()
    for row in rows:
        if row["user"] in bad_users:
            assert row["spend"]["values"] is None and "coordinate h=4" in row["spend"]["error"]
            assert row["spend_masked"]["error"] is not None  # the step fails on a null tensor
        else:
            spend = np.array(row["spend"]["values"]).reshape(4, 3)
            masked = np.array(row["spend_masked"]["values"]).reshape(4, 3)
            assert (masked[0] == -1).all() and np.array_equal(masked[1:], spend[1:])


def _tensor_bytes(table: pa.Table) -> int:
    """Bytes of the tensor values in a job's output (every struct column with values)."""
    total = 0
    for column in table.columns:
        if pa.types.is_struct(column.type) and column.type.get_field_index("values") >= 0:
            values = pc.struct_field(column, "values")
            total += sum(len(v) * 8 for v in values.to_pylist() if v is not None)
    return total


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_the_cli_exits_0_after_an_aggregation_and_its_summary_counts_it(
    spark,  # noqa: F811
    event_files,
    tmp_path,
    capsys,
    engine,
):
    _, source = event_files
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps(JOB))
    summary_path = tmp_path / "summary.json"
    argv = ["run", "--spec", str(spec_path), "--input", str(source), "--engine", engine]
    argv += ["--on-error", "keep", "--quiet", "--summary-json", str(summary_path)]
    assert main([*argv, "--output", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "run: aggregate by user (2 aggregate(s)), then 1 step(s) on " in out
    assert "rows      2,000 events in, 30 groups out" in out
    assert "ROW COUNT MISMATCH" not in out
    summary = json.loads(summary_path.read_text())
    written = pq.read_table(tmp_path / "out")
    assert summary["tensor_bytes_out"] == _tensor_bytes(written) > 0
    assert summary["fold_seconds"] > 0
    assert f"tensors 0.0 MB in, {summary['tensor_bytes_out'] / 1e6:,.1f} MB out" in out
    assert re.search(r"folds     \d+\.\d\d s of task time in scatterkit's aggregation", out)
    # An existing output has a code of its own; --overwrite replaces it.
    assert main([*argv, "--output", str(tmp_path / "out")]) == 3
    assert "already exists (--overwrite replaces it)" in capsys.readouterr().err
    assert main([*argv, "--output", str(tmp_path / "out"), "--overwrite"]) == 0
    # A failing aggregate under --on-error fail: 1, and nothing is written.
    spec_path.write_text(json.dumps({"aggregate": {"by": ["user"], "aggregates": {
        "spend": {"indices": ["h", "c"], "updates": "x", "shape": [4, 3]}}}}))  # fmt: skip
    argv = argv[: argv.index("--on-error")]
    assert main([*argv, "--output", str(tmp_path / "failed")]) == 1
    assert "job failed:" in capsys.readouterr().err
    assert not (tmp_path / "failed").exists()


def test_a_failing_aggregate_fails_the_job_naming_the_group(spark, event_files, tmp_path):  # noqa: F811
    table, source = event_files
    raw = {**JOB, "aggregate": {"by": ["user"], "aggregates": {
        "spend": {"indices": ["h", "c"], "updates": "x", "shape": [4, 3]}}}}  # fmt: skip
    user = int(table.column("user")[5].as_py())
    for engine in ("arrow", "spark"):
        target = tmp_path / engine
        with pytest.raises(JobFailed, match=rf"group user={user}|coordinate h=4"):
            run_job(spark, JobSpec.from_dict(raw), str(source), str(target), engine=engine)
        assert not target.exists()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def _mixed_events(n: int = 1500) -> pa.Table:
    """String keys, short coordinates (negatives wrap), double and bigint values, times."""
    rng = np.random.default_rng(5)
    return pa.table(
        {
            "user": pa.array([f"u{i}" for i in rng.integers(0, 20, n)]),
            "h": pa.array(rng.integers(-4, 4, n).astype(np.int16)),
            "c": pa.array(rng.integers(0, 3, n).astype(np.int32)),
            "x": pa.array(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)),
            "q": pa.array(rng.integers(-(10**12), 10**12, n)),
            "t": pa.array(rng.integers(0, 10**9, n) * 1000, pa.timestamp("us", tz="UTC")),
        }
    )


def _aggregation_job(**aggregates: dict) -> JobSpec:
    cells = {"indices": ["h", "c"], "shape": [4, 3]}
    named = {name: {**cells, **agg} for name, agg in aggregates.items()}
    return JobSpec.from_dict({"aggregate": {"by": ["user"], "aggregates": named}})


def test_the_job_reads_events_with_pyarrow_where_it_reads_them_as_spark_does(spark, tmp_path):  # noqa: F811
    from scatterkit.spark.aggregation.api import agg_plan, step_specs
    from scatterkit.spark.aggregation.sources import read_types

    source = write_parquet(tmp_path / "in", _mixed_events(), files=3)
    by_pyarrow = {  # casts that pyarrow and Spark round alike, keys and orders of like types
        "s": {"updates": "x", "dtype": "float"},
        "m": {"updates": "q", "dtype": "double", "reduction": "max"},
        "w": {"updates": "q", "reduction": "none", "order_by": "h"},
    }
    by_spark = {  # a double cast to bigint (truncated) and a timestamp order: Spark's reader
        "i": {"updates": "x", "dtype": "bigint"},
        "z": {"updates": "x", "reduction": "none", "order_by": "t"},
    }
    events = spark.read.parquet(str(source))
    for name, aggregates, reads in (
        ("pyarrow", by_pyarrow, True),
        ("spark", {**by_pyarrow, **by_spark}, False),
    ):
        job = _aggregation_job(**aggregates)
        assert job.aggregate is not None
        plan = agg_plan(events, ["user"], step_specs(events.schema, job.aggregate))
        assert (read_types(events, plan) is not None) == reads, name
        written = {}
        for engine in ("arrow", "spark"):
            out = tmp_path / f"{name}-{engine}"
            assert run_job(spark, job, str(source), str(out), engine=engine).rows_out == 20
            written[engine] = pq.read_table(out).sort_by("user")
        assert written["arrow"].equals(written["spark"]), name


def test_an_event_file_with_a_wider_column_fails_the_job_rather_than_rounding(spark, tmp_path):  # noqa: F811
    table = _mixed_events()
    (tmp_path / "in").mkdir()
    half = table.num_rows // 2
    as_float = table.set_column(3, "x", table.column("x").cast(pa.float32()))
    pq.write_table(as_float.slice(0, half), tmp_path / "in" / "part-0.parquet")
    pq.write_table(table.slice(half), tmp_path / "in" / "part-1.parquet")
    assert spark.read.parquet(str(tmp_path / "in")).schema["x"].dataType.simpleString() == "float"
    job = _aggregation_job(s={"updates": "x"})
    with pytest.raises(JobFailed, match=r"file 'part-1\.parquet' holds column 'x' as double"):
        run_job(spark, job, str(tmp_path / "in"), str(tmp_path / "out"), engine="arrow")
    assert not (tmp_path / "out").exists()


def test_partition_directories_of_events_go_to_spark_and_empty_events_give_no_groups(
    spark,  # noqa: F811
    tmp_path,
):
    table = _mixed_events(200)
    for day, rows in (("day=1", table.slice(0, 120)), ("day=2", table.slice(120))):
        (tmp_path / "in" / day).mkdir(parents=True)
        pq.write_table(rows, tmp_path / "in" / day / "f.parquet")
    job = JobSpec.from_dict({"aggregate": {"by": ["day"], "aggregates": {
        "n": {"indices": ["h", "c"], "updates": "q", "shape": [4, 3]}}}})  # fmt: skip
    summary = run_job(spark, job, str(tmp_path / "in"), str(tmp_path / "out"))
    assert summary.engine == "spark" and summary.rows_out == 2
    assert summary.aggregated["n"]["events"] == 200
    with pytest.raises(ValueError, match="partition directories"):
        run_job(spark, job, str(tmp_path / "in"), str(tmp_path / "o2"), engine="arrow")
    empty = write_parquet(tmp_path / "empty", table.slice(0, 0), files=1)
    job = _aggregation_job(s={"updates": "x"})
    summary = run_job(spark, job, str(empty), str(tmp_path / "o3"), engine="arrow")
    assert summary.rows_in == summary.rows_out == 0
    assert pq.read_schema(next((tmp_path / "o3").glob("*.parquet"))).names == ["user", "s"]


def test_an_aggregation_step_is_checked_before_anything_runs(spark, event_files, tmp_path):  # noqa: F811
    _, source = event_files
    bad = {"aggregate": {"by": ["user"], "aggregates": {
        "s": {"indices": ["x"], "updates": "x", "shape": [4]}}}}  # fmt: skip
    with pytest.raises(SpecError, match="coordinate 'x' must be an integer column"):
        run_job(spark, JobSpec.from_dict(bad), str(source), str(tmp_path / "o"))
    with pytest.raises(SpecError, match="missing"):
        JobSpec.from_dict({"aggregate": {"by": ["u"], "aggregates": {"s": {"indices": ["h"]}}}})


def test_nan_keys_are_one_group_across_batches_and_flushes(monkeypatch):
    rng = np.random.default_rng(8)
    n = 600
    frame = pd.DataFrame(
        {
            "g": rng.choice([1.5, np.nan, -2.0], n),
            "h": rng.integers(0, 4, n),
            "c": rng.integers(0, 3, n),
            "x": rng.standard_normal(n),
        }
    )
    combined, _ = _run_tasks(frame, 7, 5, monkeypatch, 1 << 30, 11)
    plan = AggPlan(("g",), (check_agg(["h", "c"], "x", list(SHAPE), dtype="double"),))
    ordered = combined.take(pa.array(np.lexsort([combined.column("__key0").to_numpy()])))
    out = pa.Table.from_batches(list(finish_groups(plan, iter(ordered.to_batches(5)))))
    keys = out.column("__key0").to_numpy()
    assert len(keys) == 3 and np.isnan(keys).sum() == 1  # as Spark's groupBy groups NaN
    events = {str(k): v["events"] for k, v in zip(keys, out.column("__agg0").to_pylist())}
    assert events["nan"] == int(frame.g.isna().sum())
    assert sum(events.values()) == n


def _states_of(combined: pa.Table) -> list[dict]:
    """The counts of every STATE row's first aggregate (its head: events, dropped)."""
    blobs = combined.filter(pc.equal(combined.column("__kind"), 1)).column("__blob")
    heads = [np.frombuffer(b.as_py(), np.int64, 3, 8) for b in blobs]  # after the part length
    return [{"events": int(h[0]), "dropped": int(h[1])} for h in heads]


def test_a_key_frequent_across_batches_is_combined_though_no_batch_holds_a_states_worth():
    rng = np.random.default_rng(6)
    n = 40_960
    table = pa.table(
        {
            "__key0": np.where(rng.random(n) < 0.5, 7, rng.integers(0, 5000, n)),
            "__coord0": rng.integers(0, 24, n).astype(np.int32),
            "__coord1": rng.integers(0, 16, n).astype(np.int32),
            "__value0": rng.standard_normal(n),
        }
    )
    specs = tuple(
        check_agg(["h", "c"], "x", [24, 16], reduction=r, dtype="double")
        for r in ("sum", "max", "mean")
    )
    plan = AggPlan(("g",), specs)
    batches = table.to_batches(max_chunksize=4096)
    threshold = plan.state_bytes() * 4096 // batches[0].nbytes
    assert threshold > 4096  # one state outweighs a whole batch of events
    out = pa.Table.from_batches(list(combine_events(plan, iter(batches))))
    kinds = out.column("__kind").to_numpy()
    keys = out.column("__key0").to_numpy()
    hot = int((table.column("__key0").to_numpy() == 7).sum())
    assert keys[kinds == 1].tolist() == [7]  # one state for the key, sent at the end
    assert _states_of(out) == [{"events": hot, "dropped": 0}]
    assert 7 not in keys[kinds == 0]  # none of its events travels as an event
    packed = out.filter(pc.equal(out.column("__kind"), 0)).combine_chunks()
    lengths = events_per_row(packed["__cell0"].chunk(0))
    assert lengths.sum() == n - hot  # the other events, a row per key
    assert (kinds == 0).sum() == len(set(keys[kinds == 0].tolist()))


# -- arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reduction": "prod", "dtype": "float"}, "order of the events"),
        ({"reduction": "mean", "dtype": "bool"}, "not defined"),
        ({"reduction": "none"}, "needs 'order_by'"),
        ({"order_by": "t"}, "is for reduction 'none'"),
        ({"reduction": "avg"}, "'reduction' must be one of"),
        ({"on_error": "skip"}, "'on_error' must be one of"),
        ({"fill": 0.5, "dtype": "int"}, "fill"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        skf.scatter_nd_agg(["h", "c"], "x", [4, 3], **kwargs)


def test_too_many_index_columns_and_bad_shapes_are_refused():
    with pytest.raises(SpecError, match="index column"):
        skf.scatter_nd_agg(["a", "b", "c"], "x", [4, 3])
    with pytest.raises(SpecError, match="shape"):
        skf.scatter_nd_agg(["a"], "x", [-1])


def test_aggregate_checks_the_events_schema(spark):  # noqa: F811
    events = spark.createDataFrame(
        [(1, 0.5, 1.0, [1.0])], "g long, f double, v double, a array<double>"
    )
    with pytest.raises(SpecError, match="coordinate 'f' must be an integer column"):
        skf.aggregate(events, "g", t=skf.scatter_nd_agg(["f"], "v", [2]))
    with pytest.raises(SpecError, match="no column 'nope'"):
        skf.aggregate(events, "g", t=skf.scatter_nd_agg(["nope"], "v", [2]))
    with pytest.raises(SpecError, match="take an array or tensor column"):
        skf.aggregate(events, "g", t=skf.scatter_nd_agg(["g"], "v", [2, 2]))
    with pytest.raises(SpecError, match="take a value column"):
        skf.aggregate(events, "g", t=skf.scatter_nd_agg(["g"], "a", [2]))
    with pytest.raises(TypeError, match="scatter_nd_agg"):
        skf.aggregate(events, "g", t=skf.scatter_nd_agg(["g"], "v", [2]).alias("t"))


@pytest.mark.parametrize("layout", ["arrays", "binary"])
@pytest.mark.parametrize(
    ("reduction", "dtype"),
    [("sum", "float"), ("sum", "double"), ("mean", "float"), ("max", "float"),
     ("min", "double"), ("sum", "int"), ("prod", "bigint"), ("mean", "bigint"),
     ("max", "boolean"), ("sum", "smallint")],
)  # fmt: skip
def test_a_group_of_good_events_folds_in_one_call_with_the_general_ways_bits(
    reduction, dtype, layout
):
    from scatterkit.spark.aggregation.group import fold_group
    from scatterkit.spark.aggregation.states import AggState, read_events
    from scatterkit.spark.aggregation.tasks import tensor_results

    rng = np.random.default_rng(11)
    n = 300
    spec = check_agg(["h", "c"], "x", [5, 3], reduction=reduction, dtype=dtype, layout=layout)
    element = spec.element_dtype
    if element.kind == "f":
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)
        x[[3, 9]] = [np.nan, -0.0]
    elif element.kind == "b":
        x = rng.random(n) > 0.5
    else:
        x = rng.integers(-50, 50, n)
    h = pa.array(rng.integers(-5, 5, n).astype(np.int16))  # negatives wrap
    c = pa.array(rng.integers(0, 2, n).astype(np.int64))  # column 2 stays untargeted
    updates = pa.array(np.asarray(x).astype(element))
    fast = fold_group(spec, h, c, updates)
    state = AggState(spec, 1)
    state.fold(read_events(spec, [h, c], updates), np.zeros(n, np.int64))
    general = tensor_results(state, 1)[0]
    assert fast.type == general.type
    if layout == "arrays":
        want, got = (s["values"].values.to_numpy(zero_copy_only=False) for s in (general, fast))
        assert want.tobytes() == got.tobytes()
    else:
        assert fast["data"].as_py() == general["data"].as_py()
    assert fast["events"].as_py() == general["events"].as_py() == n


@pytest.mark.parametrize("layout", ["arrays", "binary"])
@pytest.mark.parametrize(
    ("reduction", "on_error", "k"),
    [("sum", "keep", 2), ("mean", "drop", 2), ("none", "keep", 2), ("max", "drop", 1),
     ("sum", "keep", 1)],
)  # fmt: skip
def test_a_batch_of_collected_groups_folds_with_each_groups_bits(
    monkeypatch, reduction, on_error, k, layout
):
    # .agg()'s batched fold: one call for a batch of groups, in chunks of groups (a tiny
    # budget here), against the general way one group at a time.
    from scatterkit.spark.aggregation import group
    from scatterkit.spark.aggregation.states import AggState, read_events
    from scatterkit.spark.aggregation.tasks import tensor_results

    rng = np.random.default_rng(5)
    lengths = [0, 1, 40, 7, 0, 300, 2]
    n = sum(lengths)
    h = pa.array(rng.integers(-4, 5, n).astype(np.int32), mask=rng.random(n) < 0.02)
    c = pa.array(rng.integers(0, 3, n).astype(np.int64))
    order = pa.array(rng.integers(0, 5, n))
    if k == 2:
        x = pa.array(rng.standard_normal(n) * 1e10, mask=rng.random(n) < 0.05)
        fields = [h, c, x]
    else:  # a slice per event, one of the wrong length
        slices = [list(rng.standard_normal(3)) for _ in range(n)]
        slices[5] = [1.0]
        x = pa.array(slices, pa.list_(pa.float64()))
        fields = [h, x]
    kw = {"order_by": "o"} if reduction == "none" else {}
    spec = check_agg(
        ["h", "c"][:k], "x", [4, 3], reduction=reduction, dtype="double", on_error=on_error,
        layout=layout, **kw,
    )  # fmt: skip
    if kw:
        fields.append(order)
    events = pa.StructArray.from_arrays(fields, [f"_{i}" for i in range(len(fields))])
    offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    lists = pa.ListArray.from_arrays(offsets, events)
    monkeypatch.setattr(group, "STATE_BUDGET", 3 * len(AggState(spec, 1).state_bytes(0)))
    batched = group.fold_lists(spec, lists)
    assert len(batched) == len(lengths)
    for g, (start, length) in enumerate(zip(offsets.to_pylist(), lengths)):
        columns = [f.slice(start, length) for f in fields]
        state = AggState(spec, 1)
        order_column = columns[k + 1] if kw else None
        state.fold(
            read_events(spec, columns[:k], columns[k], order_column), np.zeros(length, np.int64)
        )
        want = tensor_results(state, 1)[0]
        assert batched[g] == want, g
        assert batched[g]["events"].as_py() == want["events"].as_py()


def test_a_batch_of_groups_under_fail_names_the_bad_event():
    from scatterkit.spark.aggregation import group
    from scatterkit.spark.core.errors import RowError

    spec = check_agg(["i"], "v", [2], dtype="double")
    events = pa.StructArray.from_arrays(
        [pa.array([0, 1, 7], pa.int32()), pa.array([1.0, 2.0, 3.0])], ["_0", "_1"]
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), events)
    with pytest.raises(RowError, match=r"event \(i=7\): coordinate i=7 is out of range"):
        group.fold_lists(spec, lists)


@pytest.mark.parametrize("batched", [True, False])
def test_agg_folds_small_tensors_in_batches_and_large_ones_per_group(spark, monkeypatch, batched):  # noqa: F811
    # The same bits either way; the plan shows which: Spark's collect_list feeding a scalar
    # Arrow UDF, or a grouped-aggregate Arrow UDF.
    from scatterkit.spark.aggregation import api

    if not batched:
        monkeypatch.setattr(api, "BATCHED_TENSOR_BYTES", 0)
    frame = events_frame("float32")
    events = to_spark(spark, frame, "float32")
    aggs = _aggregates("float32")
    agg = events.groupBy("g").agg(*[c.alias(n) for n, c in aggs.items()])
    plan = agg._jdf.queryExecution().executedPlan().toString()
    assert ("collect_list" in plan) == batched, plan
    rows = agg.collect()
    for name in aggs:
        reduction, k = name.split("_k")[0], int(name[-1])
        want = reference(frame, "float32", reduction, k)
        got = tensors(rows, name, "float32")
        for g in want:
            assert_bits(
                got[g], want[g], f"{'batched' if batched else 'per group'} {name} group {g}"
            )


def test_a_batch_too_large_for_memory_says_how_large_and_points_at_aggregate():
    from scatterkit.spark.aggregation import group

    spec = check_agg(["i"], "v", [2], dtype="double")
    events = pa.StructArray.from_arrays(
        [pa.array([0, 1, 1], pa.int32()), pa.array([1.0] * 3)], ["_0", "_1"]
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), events)
    message = group._too_large(spec, [lists], "MemoryError: x", batched=True)
    assert message.startswith("scatter_nd_agg: a batch of 2 groups (the largest of 2 events; "), (
        message
    )
    assert "skf.aggregate(df, by, name=skf.scatter_nd_agg(...))" in message
    one = group._too_large(spec, [lists.slice(1)], "MemoryError: x", batched=True)
    assert one.startswith("scatter_nd_agg: the group of 2 events ("), one


def test_packed_rows_carry_bad_events_and_null_values_through_their_bytes():
    """The shuffle's rows hold a key's offsets and values as bytes (`wire.pack_numbers`):
    a bad event (null offset) and a null value come back as they went, whether the rows
    beside them have any (a validity column per row) or not (a null one)."""
    spec = check_agg(["h", "c"], "x", [4, 3], dtype="double")
    plan = AggPlan(("g",), (spec,))
    rng = np.random.default_rng(5)

    def flush(n: int, with_nulls: bool) -> tuple[pa.RecordBatch, np.ndarray]:
        keys = np.sort(rng.integers(0, 40, n))
        cells = pa.array(
            rng.integers(0, 12, n).astype(np.int32), mask=rng.random(n) < 0.2 * with_nulls
        )
        values = pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.3 * with_nulls)
        ordered = pa.RecordBatch.from_arrays(
            [pa.array(keys), cells, values], names=["__key0", "__cell0", "__value0"]
        )
        return ordered, np.flatnonzero(np.diff(keys, prepend=-1))

    flushes = [flush(500, True), flush(300, False), flush(400, True)]
    packed = (
        pa.Table.from_batches(
            [
                agg_tasks._packed_rows(
                    plan, ordered.select(["__key0"]).take(starts), ordered, starts
                )
                for ordered, starts in flushes
            ]
        )
        .combine_chunks()
        .to_batches()[0]
    )
    assert packed.schema.field("__cell0").type == pa.binary()
    assert packed.column("__valid0").null_count == len(flushes[1][1])  # the flush without nulls
    for first, count in ((0, packed.num_rows), (7, 50)):  # a slice, as a reduce batch may be
        rows = packed.slice(first, count)
        events, lengths = agg_tasks._unpacked_events(plan, rows)
        whole = pa.Table.from_batches([o for o, _ in flushes]).combine_chunks().to_batches()[0]
        starts = np.concatenate(
            [s + sum(o.num_rows for o, _ in flushes[:i]) for i, (_, s) in enumerate(flushes)]
        )
        ends = np.append(starts[1:], whole.num_rows)
        e0, e1 = starts[first], ends[first + count - 1]
        assert lengths.tolist() == (ends - starts)[first : first + count].tolist()
        assert events.column("__cell0").equals(whole.column("__cell0").slice(e0, e1 - e0))
        assert events.column("__value0").equals(whole.column("__value0").slice(e0, e1 - e0))


@pytest.mark.parametrize("layout", ["arrays", "binary"])
def test_the_jobs_aggregated_schema_is_the_planned_aggregations(spark, event_files, layout):  # noqa: F811
    """The job plans its steps on `aggregated_schema` without planning the aggregation:
    it must be the schema the aggregation's DataFrame has."""
    from scatterkit.spark.aggregation.api import aggregate_step, aggregated_schema

    _, source = event_files
    events = spark.read.parquet(str(source)).withColumn("tag", F.lit("a"))
    step = JobSpec.from_dict(JOB).with_layout(layout).aggregate
    assert aggregated_schema(events, step) == aggregate_step(events, step).schema
    by_two = JobSpec.from_dict({**JOB, "aggregate": {**JOB["aggregate"], "by": ["user", "tag"]}})
    assert (
        aggregated_schema(events, by_two.aggregate)
        == aggregate_step(events, by_two.aggregate).schema
    )
    missing = JobSpec.from_dict({**JOB, "aggregate": {**JOB["aggregate"], "by": ["nobody"]}})
    with pytest.raises(SpecError, match="no column 'nobody' to group by"):
        aggregated_schema(events, missing.aggregate)


def _keys_of_kind(kind: str, rng: np.random.Generator, n: int) -> pa.Array:
    numbers = rng.integers(0, 300, n)
    if kind == "int":
        return pa.array(numbers)
    if kind == "string with nulls":
        return pa.array([None if k < 5 else f"u{k}" for k in numbers.tolist()])
    return pa.array(np.where(numbers < 5, np.nan, numbers / 7))  # NaN keys are one group


@pytest.mark.parametrize("kind", ["int", "string with nulls", "float with NaN"])
def test_a_tasks_flushes_go_on_as_one_row_per_key(kind):
    """`combine_events` sends a key's events of several flushes on as one row (up to
    PACKED_BYTES of them): the shuffle's rows are a row per key, every event in one."""
    spec = check_agg(["h", "c"], "x", [4, 3], dtype="double")
    plan = AggPlan(("g",), (spec,), flush_events=1000)
    rng = np.random.default_rng(9)
    n = 5000
    key = _keys_of_kind(kind, rng, n)
    keys = [repr(k) for k in key.to_pylist()]  # NaN == NaN as text
    cells = rng.integers(0, 4, n).astype(np.int32), rng.integers(0, 3, n).astype(np.int32)
    values = np.where(rng.random(n) < 0.1, np.nan, rng.standard_normal(n))
    events = pa.RecordBatch.from_arrays(
        [
            key,
            pa.array(cells[0]),
            pa.array(cells[1]),
            pa.array(values, from_pandas=True),
        ],
        names=["__key0", "__coord0", "__coord1", "__value0"],
    )
    out = pa.Table.from_batches(
        list(
            combine_events(
                plan, iter(pa.Table.from_batches([events]).to_batches(max_chunksize=700))
            )
        )
    )
    assert set(out.column("__kind").to_pylist()) == {0}  # no key is frequent in a flush
    packed = out.combine_chunks().to_batches()[0]
    sent_keys = [repr(k) for k in packed.column("__key0").to_pylist()]
    assert sorted(sent_keys) == sorted(set(keys))
    unpacked, lengths = agg_tasks._unpacked_events(plan, packed)
    sent = sorted(zip(np.repeat(np.array(sent_keys, object), lengths).tolist(),
                      unpacked.column("__cell0").to_pylist(),
                      unpacked.column("__value0").to_pylist()), key=repr)  # fmt: skip
    cell = (cells[0] * 3 + cells[1]).tolist()
    given = [None if v != v else v for v in values.tolist()]
    assert sent == sorted(zip(keys, cell, given), key=repr)
