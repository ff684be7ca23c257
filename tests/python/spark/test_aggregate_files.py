"""`aggregate` over a plain Parquet scan: the map tasks read the files with pyarrow
(`aggregation.sources.scan_reader`), with the bits of Spark's reader, and whatever Spark
must read itself (a filter, a computed column, reader options, partition directories,
settings of its reader, types pyarrow reads otherwise) still goes through Spark's reader.
"""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from spark_helpers import pa, pq, spark, write_parquet  # noqa: F401

from scatterkit.spark import functions as skf
from scatterkit.spark.aggregation.api import agg_plan, settle_spec
from scatterkit.spark.aggregation.sources import READ_FILES_CONF, scan_reader

pytestmark = [pytest.mark.spark, pytest.mark.jvm]

SHAPE = [4, 3]


def _events(n: int = 3000, seed: int = 4) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * rng.choice([1e-12, 1.0, 1e12], n)
    slices = np.zeros((n, 3), np.float32)
    slices[np.arange(n), rng.integers(0, 3, n)] = x.astype(np.float32)
    return pa.table(
        {
            "user": rng.integers(0, 40, n),
            "name": pa.array([f"u{i}" for i in rng.integers(0, 9, n)]),
            "h": rng.integers(-4, 4, n).astype(np.int16),
            "c": rng.integers(0, 3, n).astype(np.int32),
            "x": pa.array(x, mask=rng.random(n) < 0.05),
            "xs": pa.array(list(slices), pa.list_(pa.float32())),
            "t": rng.integers(0, 50, n),
            "ts": pa.array(rng.integers(0, 10**9, n) * 1000, pa.timestamp("us", tz="UTC")),
        }
    )


def _aggregates(layout: str = "arrays") -> dict:
    return {
        "s": skf.scatter_nd_agg(["h", "c"], "x", SHAPE, layout=layout),
        "m": skf.scatter_nd_agg(["h", "c"], "x", SHAPE, reduction="max", layout=layout),
        "w": skf.scatter_nd_agg(["h", "c"], "x", SHAPE, reduction="none", order_by="t"),
        "v": skf.scatter_nd_agg("h", "xs", SHAPE, reduction="mean", layout=layout),
    }


def _reads_files(frame) -> bool:
    """Whether the map side of an `aggregate` plan reads files itself (a range of piece
    numbers where Spark's reader would be)."""
    plan = frame._jdf.queryExecution().optimizedPlan().toString()
    return "Range (" in plan and "Relation" not in plan


def _rows(frame, by: str = "user") -> dict:
    return {r[by]: r.asDict(recursive=True) for r in frame.collect()}


def _reader(df, by: str = "user", **aggregates):
    specs = {n: settle_spec(df.schema, c._scatterkit_agg, n) for n, c in aggregates.items()}
    return scan_reader(df, agg_plan(df, [by], specs))


@pytest.mark.parametrize("layout", ["arrays", "binary"])
def test_a_plain_scan_is_read_by_the_map_tasks_with_the_bits_of_sparks_reader(
    spark,  # noqa: F811
    tmp_path,
    layout,
):
    # A directory and a file whose names Spark's file list escapes; one file of several row
    # groups: fewer files than tasks, so it is split by row groups.
    source = tmp_path / "in put%20"
    source.mkdir()
    table = _events()
    pq.write_table(table, source / "a b.parquet", row_group_size=250)
    df = spark.read.parquet(str(source))
    reader = _reader(df, **_aggregates(layout))
    assert reader is not None
    assert [(p.path.rsplit("/", 1)[1], p.first_group, p.stop_group) for p in reader.pieces] == [
        ("a b.parquet", 0, 6),
        ("a b.parquet", 6, 12),
    ]
    fast = skf.aggregate(df, "user", **_aggregates(layout))
    selected = skf.aggregate(
        df.select("user", "h", "c", "x", "xs", "t"), "user", **_aggregates(layout)
    )
    through_spark = skf.aggregate(df.repartition(3), "user", **_aggregates(layout))
    assert _reads_files(fast) and _reads_files(selected) and not _reads_files(through_spark)
    want = _rows(through_spark)
    assert len(want) == 40
    assert _rows(fast) == want and _rows(selected) == want
    assert sum(r["s"]["events"] for r in want.values()) == table.column("x").drop_null().length()


def test_string_keys_and_a_file_without_a_column_read_as_spark_reads_them(spark, tmp_path):  # noqa: F811
    # Spark reads a column a file lacks as nulls: so do the map tasks (a null value is
    # skipped, a null coordinate follows on_error).
    table = _events(1200)
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(table.slice(0, 700), source / "part-0.parquet")
    pq.write_table(table.slice(700).drop_columns(["x", "c"]), source / "part-1.parquet")
    df = spark.read.schema(spark.read.parquet(str(source / "part-0.parquet")).schema).parquet(
        str(source)
    )
    aggregates = {"s": skf.scatter_nd_agg(["h", "c"], "x", SHAPE, on_error="drop")}
    assert _reader(df, "name", **aggregates) is not None
    fast = _rows(skf.aggregate(df, "name", **aggregates), "name")
    want = _rows(skf.aggregate(df.repartition(2), "name", **aggregates), "name")
    assert fast == want and len(want) == 9
    assert sum(r["s"]["dropped"] for r in want.values()) == 500  # part-1's null coordinates


def test_what_only_sparks_reader_reads_goes_through_it(spark, tmp_path):  # noqa: F811
    table = _events(600)
    source = write_parquet(tmp_path / "in", table, files=2)
    df = spark.read.parquet(str(source))
    aggregates = {"s": skf.scatter_nd_agg(["h", "c"], "x", SHAPE)}
    assert _reader(df, **aggregates) is not None
    by_spark = {
        "a filter": df.filter(F.col("t") > 3),
        "a computed column": df.withColumn("x", F.col("x") * 2),
        "a renamed column": df.select("user", "h", "c", F.col("t").alias("x")),
        "a reader option": spark.read.option("mergeSchema", "true").parquet(str(source)),
        "a row limit": df.limit(100),
        "a union": df.union(df),
    }
    for name, frame in by_spark.items():
        assert _reader(frame, **aggregates) is None, name
        planned = skf.aggregate(frame, "user", **aggregates)
        assert not _reads_files(planned), name
        assert planned.count() > 0, name
    # a timestamp order pyarrow would read in another type
    latest = {"w": skf.scatter_nd_agg(["h", "c"], "x", SHAPE, reduction="none", order_by="ts")}
    assert _reader(df, **latest) is None
    # a setting of Spark's reader, or the session asking for Spark's rows
    for key, value in (("spark.sql.files.ignoreCorruptFiles", "true"), (READ_FILES_CONF, "false")):
        spark.conf.set(key, value)
        try:
            assert _reader(df, **aggregates) is None, key
        finally:
            spark.conf.unset(key)
    assert _reader(df, **aggregates) is not None
    # partition directories: Spark adds their column
    for day, rows in (("day=1", table.slice(0, 200)), ("day=2", table.slice(200))):
        write_parquet(tmp_path / "parts" / day, rows, files=1)
    parted = spark.read.parquet(str(tmp_path / "parts"))
    assert _reader(parted, "day", **aggregates) is None
    days = _rows(skf.aggregate(parted, "day", **aggregates), "day")
    counted = {d: r["s"]["events"] for d, r in days.items()}
    assert counted == {
        1: 200 - table.slice(0, 200).column("x").null_count,
        2: 400 - table.slice(200).column("x").null_count,
    }


def test_a_corrupt_input_file_is_named(spark, tmp_path):  # noqa: F811
    source = write_parquet(tmp_path / "in", _events(900), files=3)
    damaged = source / "part-1.parquet"
    data = bytearray(damaged.read_bytes())
    data[8:-400] = bytes(len(data) - 408)  # pages zeroed, the footer intact
    damaged.write_bytes(bytes(data))
    df = spark.read.parquet(str(source))
    aggregates = {"s": skf.scatter_nd_agg(["h", "c"], "x", SHAPE)}
    assert _reader(df, **aggregates) is not None
    with pytest.raises(Exception, match=r"part-1\.parquet"):
        skf.aggregate(df, "user", **aggregates).collect()
