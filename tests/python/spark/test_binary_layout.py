"""The binary tensor layout, ``struct<data: binary, shape: array<int>, dtype: string>``,
beside the arrays layout: read everywhere, written on request, converted both ways, and
read back into NumPy by `read_tensors`. Bad bytes are row errors, never a crash."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from spark_helpers import pa, pq, spark, tensor_column, write_parquet  # noqa: F401

import scatterkit as sk
from scatterkit._batch import Ragged
from scatterkit.spark import functions as skf
from scatterkit.spark import read_tensors
from scatterkit.spark.cli import main
from scatterkit.spark.core.errors import JobFailed
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.runtime.tensors import read_tensor, tensor_array
from scatterkit.spark.specs.job_spec import JobSpec

pytestmark = pytest.mark.spark


def _binary_column(rows, dtype=np.float32, shapes=None, dtypes=None) -> pa.StructArray:
    """A binary tensor column from arrays (None: a null row); `shapes`/`dtypes` override."""
    data = [None if r is None else np.asarray(r, dtype).tobytes() for r in rows]
    shapes = shapes or [None if r is None else list(np.shape(r)) for r in rows]
    names = dtypes or [None if r is None else np.dtype(dtype).name for r in rows]
    return pa.StructArray.from_arrays(
        [pa.array(data, pa.binary()), pa.array(shapes, pa.list_(pa.int32())), pa.array(names)],
        names=["data", "shape", "dtype"],
    )


# -- no JVM: the Arrow side ------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["arrays", "binary"])
@pytest.mark.parametrize("errors", [None, [None, "bad", None]])
def test_a_tensor_column_round_trips_in_both_layouts_with_null_and_failed_rows(layout, errors):
    values = np.arange(10, dtype=np.float32)
    like = Ragged(values, np.array([0, 4, 4, 10]), np.array([2, 2, 0, 6]), np.array([0, 2, 3, 4]))
    valid = np.array([True, errors is None, True])
    column = tensor_array(values, like, valid, errors, layout)
    names = ["values", "shape"] if layout == "arrays" else ["data", "shape", "dtype"]
    assert [f.name for f in column.type] == names + (["error"] if errors else [])
    rows = read_tensor(column, "t")
    assert set(rows.problems) == ({1} if errors else set())
    assert np.array_equal(rows.ragged.values[rows.ragged.offsets[2] :], values[4:])
    if layout == "binary":
        assert column[0]["data"].as_py() == values[:4].tobytes()  # C order, little-endian
        assert column[0]["dtype"].as_py() == "float32"
    tail = read_tensor(column.slice(2), "t")  # a slice reads its own rows only
    assert np.array_equal(tail.ragged.values, values[4:]) and list(tail.ragged.shapes) == [6]


def test_binary_bytes_that_do_not_match_the_shape_or_dtype_are_row_problems():
    column = _binary_column(
        [np.ones(2), np.ones(3), np.ones(2), None],
        shapes=[[2], [1], [2], None],  # row 1: 12 bytes for 1 float
        dtypes=["float32", "float32", "int16", None],  # row 2: another dtype
    )
    rows = read_tensor(column, "t")
    assert rows.problems == {
        1: "t holds 12 byte(s); shape [1] of float32 takes 4",
        2: "t holds int16 values, not float32",
        3: "t shape is null",  # every field null (the struct itself is not)
    }
    assert np.array_equal(rows.ragged.values[:2], [1, 1])  # the good row is intact
    assert rows.ragged.offsets[1] == 2  # the bad rows hold nothing


def test_read_tensors_stacks_one_shape_without_copying_and_lists_ragged_rows(tmp_path):
    tensors = [np.arange(12, dtype=np.float64).reshape(3, 4) * r for r in range(5)]
    column = _binary_column(tensors, np.float64)
    pq.write_table(pa.table({"t": column}), tmp_path / "one.parquet")
    stacked = read_tensors(tmp_path / "one.parquet", "t")
    assert stacked.shape == (5, 3, 4) and stacked.dtype == np.float64
    assert not stacked.flags.owndata  # a view of the bytes pyarrow read
    assert np.array_equal(stacked, np.stack(tensors))
    # Several files: one array still (concatenated), in file order.
    write_parquet(tmp_path / "dir", pa.table({"t": column}), files=2)
    assert np.array_equal(read_tensors(tmp_path / "dir", "t"), np.stack(tensors))
    # The arrays layout and plain lists give the same.
    arrays = tensor_column(tensors, np.float64)
    pq.write_table(pa.table({"t": arrays, "flat": pa.array([t.ravel() for t in tensors])}),
                   tmp_path / "arrays.parquet")  # fmt: skip
    assert np.array_equal(read_tensors(tmp_path / "arrays.parquet", "t"), np.stack(tensors))
    flat = read_tensors(tmp_path / "arrays.parquet", "flat")
    assert flat.shape == (5, 12)
    # Rows that disagree on a shape, or a null: one array (or None) per row.
    ragged = _binary_column([np.ones((2, 2)), None, np.zeros(3)])
    pq.write_table(pa.table({"t": ragged}), tmp_path / "ragged.parquet")
    rows = read_tensors(tmp_path / "ragged.parquet", "t")
    assert [None if r is None else r.shape for r in rows] == [(2, 2), None, (3,)]
    bad = _binary_column([np.ones(2)], shapes=[[3]])
    pq.write_table(pa.table({"t": bad}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="row 0 holds 8 byte"):
        read_tensors(tmp_path / "bad.parquet", "t")
    with pytest.raises(ValueError, match="not a tensor column"):
        pq.write_table(pa.table({"x": [1]}), tmp_path / "x.parquet")
        read_tensors(tmp_path / "x.parquet", "x")


# -- on Spark ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame(spark):  # noqa: F811
    rng = np.random.default_rng(4)
    n = 30
    data = [rng.random(6).astype(np.float32) for _ in range(n)]
    idx = [rng.integers(0, 6, 4) for _ in range(n)]
    upd = [rng.random(4).astype(np.float32) for _ in range(n)]
    table = pa.table(
        {
            "uid": np.arange(n),
            "data": tensor_column(data, np.float32),
            "bdata": _binary_column(data),
            "idx": pa.array([i.tolist() for i in idx], pa.list_(pa.int64())),
            "upd": tensor_column(upd, np.float32),
        }
    )
    want = [
        sk.scatter_elements_update(d, i, u, 0, reduction="sum") for d, i, u in zip(data, idx, upd)
    ]
    return spark.createDataFrame(table.to_pandas()), want


def test_column_functions_read_either_layout_and_write_either(frame):
    df, want = frame
    for data in ("data", "bdata"):
        for layout in ("arrays", "binary"):
            out = df.select(
                "uid",
                skf.scatter_elements_update(
                    data, "idx", "upd", 0, reduction="sum", layout=layout
                ).alias("r"),
            ).orderBy("uid")
            got = read_rows(out.toArrow().column("r"))
            assert all(np.array_equal(g, w) for g, w in zip(got, want)), (data, layout)


def read_rows(column) -> list:
    rows = read_tensor(column, "r")
    r = rows.ragged
    return [r.values[r.offsets[i] : r.offsets[i + 1]] for i in range(r.rows)]


def test_to_binary_and_to_arrays_convert_both_ways_and_name_a_bad_row(spark):  # noqa: F811
    tensors = [np.arange(6, dtype=np.float32).reshape(2, 3) + r for r in range(4)]
    df = spark.createDataFrame(pa.table({"t": tensor_column(tensors, np.float32)}).to_pandas())
    binary = df.select(skf.to_binary("t").alias("b"))
    assert binary.schema["b"].dataType.simpleString() == (
        "struct<data:binary,shape:array<int>,dtype:string>"
    )
    back = binary.select(skf.to_arrays("b").alias("t")).toArrow().column("t")
    assert (
        back.to_pylist()
        == pa.table({"t": tensor_column(tensors, np.float32)}).column("t").to_pylist()
    )
    bad = _binary_column([np.ones(2), np.ones(2)], shapes=[[2], [5]])
    df = spark.createDataFrame(pa.table({"b": bad}).to_pandas())
    kept = df.select(skf.to_arrays("b", on_error="keep").alias("t")).toArrow().to_pylist()
    assert kept[0]["t"]["values"] == [1.0, 1.0]
    assert kept[1]["t"]["values"] is None
    assert kept[1]["t"]["error"] == "tensor holds 8 byte(s); shape [5] of float32 takes 20"
    with pytest.raises(
        Exception, match="of a batch \\(pass row_id= to name rows\\): tensor holds 8"
    ):
        df.select(skf.to_arrays("b").alias("t")).collect()
    named = spark.createDataFrame(pa.table({"b": bad, "id": [10, 11]}).to_pandas())
    for convert in (skf.to_arrays, skf.to_binary):
        with pytest.raises(Exception, match="row_id=11: tensor holds 8 byte\\(s\\); shape"):
            named.select(convert("b", row_id="id").alias("t")).collect()


def _events(spark, n=400):  # noqa: F811
    rng = np.random.default_rng(8)
    table = pa.table(
        {
            "user": rng.integers(0, 12, n),
            "h": rng.integers(0, 4, n).astype(np.int32),
            "c": rng.integers(0, 3, n).astype(np.int32),
            "x": rng.standard_normal(n).astype(np.float32),
        }
    )
    return spark.createDataFrame(table.to_pandas())


def test_scatter_nd_agg_writes_binary_in_aggregate_and_in_group_by(spark):  # noqa: F811
    events = _events(spark)
    agg = {"indices": ["h", "c"], "updates": "x", "shape": [4, 3]}
    arrays = skf.aggregate(events, "user", s=skf.scatter_nd_agg(**agg)).orderBy("user")
    binary = skf.aggregate(events, "user", s=skf.scatter_nd_agg(**agg, layout="binary"))
    grouped = events.groupBy("user").agg(
        skf.scatter_nd_agg(**agg, dtype="float", layout="binary").alias("s")
    )
    want = read_tensors_of(arrays, "s")
    for frame_ in (binary.orderBy("user"), grouped.orderBy("user")):
        assert frame_.schema["s"].dataType.names == [
            "data", "shape", "dtype", "error", "events", "dropped"
        ]  # fmt: skip
        got = read_tensors_of(frame_, "s")
        assert got.shape == (12, 4, 3) and got.tobytes() == want.tobytes()


def read_tensors_of(df, column):
    table = df.select(column).toArrow()
    rows = read_tensor(table.column(column), column)
    r = rows.ragged
    return r.values.reshape(r.rows, *r.shapes[: r.shape_offsets[1]])


STEPS = {
    "row_id": "uid",
    "steps": [
        {"op": "ScatterElementsUpdate-12", "attributes": {"axis": 0, "reduction": "sum"},
         "inputs": {"data": "data", "indices": "idx", "updates": "upd"}, "output": "r"}
    ],
}  # fmt: skip


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_the_job_reads_binary_inputs_and_writes_binary_outputs_on_both_engines(
    spark,  # noqa: F811
    tmp_path,
    engine,
):
    rng = np.random.default_rng(2)
    n = 40
    data = [rng.random(6).astype(np.float32) for _ in range(n)]
    idx = [rng.integers(0, 6, 4) for _ in range(n)]
    upd = [rng.random(4).astype(np.float32) for _ in range(n)]
    idx[7][1] = 9  # a bad row
    table = pa.table(
        {
            "uid": np.arange(n),
            "data": _binary_column(data),
            "idx": pa.array([i.tolist() for i in idx], pa.list_(pa.int64())),
            "upd": _binary_column(upd),
        }
    )
    source = write_parquet(tmp_path / "in", table)
    spec = JobSpec.from_dict({**STEPS, "layout": "binary"})
    with pytest.raises(JobFailed, match="uid=7"):
        run_job(spark, spec, str(source), str(tmp_path / "failed"), engine=engine, progress=False)
    summary = run_job(
        spark, spec, str(source), str(tmp_path / "out"), engine=engine, on_error="keep",
        progress=False,
    )  # fmt: skip
    assert summary.error_rows == 1 and summary.tensor_bytes_out == n * 6 * 4  # the kernel wrote
    out = pq.read_table(tmp_path / "out")  # in file order, as read_tensors reads it
    assert out.schema.field("r").type.names == ["data", "shape", "dtype", "error"]
    rows = read_tensors(tmp_path / "out", "r")  # a null row: one array per row
    for uid, got in zip(out.column("uid").to_pylist(), rows):
        if uid == 7:
            assert got is None
        else:
            want = sk.scatter_elements_update(data[uid], idx[uid], upd[uid], 0, reduction="sum")
            assert got.tobytes() == want.tobytes()


def test_the_cli_writes_an_aggregation_in_binary_and_read_tensors_stacks_it(
    spark,  # noqa: F811
    tmp_path,
    capsys,
):
    events = _events(spark).toArrow()
    source = write_parquet(tmp_path / "events", events)
    spec = tmp_path / "job.json"
    aggregates = {"s": {"indices": ["h", "c"], "updates": "x", "shape": [4, 3]}}
    spec.write_text(json.dumps({"aggregate": {"by": ["user"], "aggregates": aggregates}}))
    argv = ["run", "--spec", str(spec), "--input", str(source), "--quiet"]
    assert main([*argv, "--output", str(tmp_path / "arrays")]) == 0
    assert main([*argv, "--output", str(tmp_path / "binary"), "--layout", "binary"]) == 0
    out = capsys.readouterr().out
    assert f"tensors 0.0 MB in, {12 * 12 * 4 / 1e6:.1f} MB out" in out
    order = pq.read_table(tmp_path / "binary").column("user").to_numpy().argsort()
    binary = read_tensors(tmp_path / "binary", "s")[order]
    arrays = pq.read_table(tmp_path / "arrays").sort_by("user")
    want = np.array([v["values"] for v in arrays.column("s").to_pylist()], np.float32)
    assert binary.shape == (12, 4, 3) and binary.tobytes() == want.tobytes()


# -- slices of either layout as scatter_nd_agg's updates --------------------------------------


def _slices_spec(**extra):
    from scatterkit.spark.specs.agg_spec import check_agg

    return check_agg("h", extra.pop("updates", "v"), [4, 3], **extra)


def test_slice_lists_decode_binary_and_tensor_slices_and_name_each_bad_row():
    from scatterkit.spark.aggregation.slices import slice_lists

    good = [np.arange(3, dtype=np.float32) + r for r in range(3)]
    spec = _slices_spec(dtype="float")
    lists, problems = slice_lists(spec, _binary_column(good))
    assert problems == {} and lists.to_pylist() == [g.tolist() for g in good]
    column = _binary_column(good)
    lists, _ = slice_lists(spec, column)
    assert lists.values.buffers()[1].address == column.field("data").buffers()[2].address
    # float32 bytes into a double aggregate, int64 into double: converted exactly
    wide, problems = slice_lists(_slices_spec(dtype="double"), _binary_column(good))
    assert problems == {} and wide.type.value_type == pa.float64()
    assert wide.to_pylist() == [g.astype(np.float64).tolist() for g in good]
    ints = _binary_column([np.array([1, -2, 3]), np.array([4, 5, 6])], dtype=np.int64)
    assert slice_lists(_slices_spec(dtype="double"), ints)[0].to_pylist()[1] == [4.0, 5.0, 6.0]
    # bad rows: each a problem of its own row, null in the lists; a null tensor stays null
    bad = _binary_column(
        [np.ones(3), np.ones(2), np.ones(4), None, np.ones(3), np.ones(3)],
        shapes=[[3], [3], [4], None, [1, 3], [3]],
        dtypes=["float32", "float32", "float32", None, "float32", "complex64"],
    )
    lists, problems = slice_lists(spec, bad)
    assert problems == {
        1: "updates 'v' holds 8 byte(s); a slice of shape [3] of float32 takes 12",
        2: "updates 'v' holds a tensor of shape [4]; a slice of shape [3] is needed",
        4: "updates 'v' holds a tensor of shape [1, 3]; a slice of shape [3] is needed",
        5: "updates 'v' holds complex64 values, not a NumPy number or boolean dtype",
    }
    assert lists.to_pylist() == [[1.0, 1.0, 1.0], None, None, None, None, None]
    # a conversion Spark's cast could change is a problem of the row (binary) ...
    doubles = _binary_column([np.ones(3)], dtype=np.float64)
    _, problems = slice_lists(_slices_spec(dtype="bigint"), doubles)
    assert problems == {
        0: "updates 'v' holds float64 values, which Spark's cast to bigint may change"
    }
    # ... and of the column (arrays), which must be cast first
    with pytest.raises(TypeError, match="cast the column first"):
        slice_lists(_slices_spec(dtype="int"), pa.array([[1.5, 2.0, 3.0]]))
    # the arrays layout: its shape checked, its values converted
    tensors = tensor_column([np.ones(3, np.float32), np.ones(2, np.float32), None], np.float32)
    lists, problems = slice_lists(_slices_spec(dtype="double"), tensors)
    assert problems == {
        1: "updates 'v' holds a tensor of shape [2]; a slice of shape [3] is needed"
    }
    assert lists.to_pylist() == [[1.0, 1.0, 1.0], None, None]


def _slice_events(tmp_path, n=300):
    rng = np.random.default_rng(5)
    slices = [rng.standard_normal(3).astype(np.float32) for _ in range(n)]
    table = pa.table(
        {
            "user": rng.integers(0, 10, n),
            "h": rng.integers(-4, 4, n).astype(np.int32),
            "arr": pa.array([s.tolist() for s in slices], pa.list_(pa.float32())),
            "ten": tensor_column(slices, np.float32),
            "bin": _binary_column(slices),
        }
    )
    return write_parquet(tmp_path / "slices", table)


def test_scatter_nd_agg_folds_slices_of_either_layout_to_the_same_bits(spark, tmp_path):  # noqa: F811
    events = spark.read.parquet(str(_slice_events(tmp_path)))

    def tensors(frame):
        return read_tensors_of(frame.orderBy("user"), "s")

    want = {}
    for dtype in ("float", "double"):
        agg = {"indices": ["h"], "shape": [4, 3], "dtype": dtype}
        want[dtype] = tensors(
            skf.aggregate(events, "user", s=skf.scatter_nd_agg(updates="arr", **agg))
        )
        for column in ("ten", "bin"):
            planned = skf.aggregate(events, "user", s=skf.scatter_nd_agg(updates=column, **agg))
            grouped = events.groupBy("user").agg(
                skf.scatter_nd_agg(updates=column, **agg).alias("s")
            )
            for frame_ in (planned, grouped):
                assert tensors(frame_).tobytes() == want[dtype].tobytes(), (dtype, column)
    # binary slices carry their dtype in each row: aggregate settles on double, as .agg() does
    default = skf.aggregate(events, "user", s=skf.scatter_nd_agg("h", "bin", [4, 3]))
    assert tensors(default).tobytes() == want["double"].tobytes()
    # a large tensor goes one group a call in .agg(): the same bits from binary slices
    wide = spark.read.parquet(str(_slice_events(tmp_path))).selectExpr(
        "user", "h + 4 as h", "arr", "bin"
    )
    big = {"indices": ["h"], "shape": [2000, 3], "dtype": "double"}
    by_arrays = wide.groupBy("user").agg(skf.scatter_nd_agg(updates="arr", **big).alias("s"))
    by_bytes = wide.groupBy("user").agg(skf.scatter_nd_agg(updates="bin", **big).alias("s"))
    assert tensors(by_bytes).tobytes() == tensors(by_arrays).tobytes()


def test_bad_binary_slices_follow_on_error_in_every_entry_point(spark, tmp_path):  # noqa: F811
    rows = [np.ones(3, np.float32), np.ones(2, np.float32), np.full(3, 2, np.float32)]
    table = pa.table(
        {
            "user": [1, 1, 2],
            "h": pa.array([0, 1, 2], pa.int32()),
            "bin": _binary_column(rows, shapes=[[3], [3], [3]]),
        }
    )
    events = spark.read.parquet(str(write_parquet(tmp_path / "bad", table, files=1)))
    agg = {"indices": ["h"], "updates": "bin", "shape": [4, 3], "dtype": "float"}
    message = "updates 'bin' holds 8 byte(s); a slice of shape [3] of float32 takes 12"
    for make in (
        lambda **o: skf.aggregate(events, "user", s=skf.scatter_nd_agg(**agg, **o)),
        lambda **o: events.groupBy("user").agg(skf.scatter_nd_agg(**agg, **o).alias("s")),
    ):
        with pytest.raises(Exception, match=re.escape(message)):
            make().collect()
        kept = {r["user"]: r["s"] for r in make(on_error="keep").collect()}
        assert kept[1]["values"] is None and message in kept[1]["error"]
        assert kept[2]["values"][6:9] == [2.0, 2.0, 2.0] and kept[2]["error"] is None
        dropped = {r["user"]: r["s"] for r in make(on_error="drop").collect()}
        assert dropped[1]["dropped"] == 1 and dropped[1]["values"][:3] == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_the_job_aggregates_binary_slices_on_both_engines(spark, tmp_path, engine):  # noqa: F811
    source = _slice_events(tmp_path)
    out = {}
    for column in ("arr", "bin"):
        aggregates = {"s": {"indices": ["h"], "updates": column, "shape": [4, 3], "dtype": "float"}}
        spec = JobSpec.from_dict({"aggregate": {"by": ["user"], "aggregates": aggregates}})
        target = tmp_path / f"{engine}-{column}"
        run_job(spark, spec, str(source), str(target), engine=engine, progress=False)
        order = pq.read_table(target).column("user").to_numpy().argsort()
        out[column] = read_tensors(target, "s")[order]
    assert out["bin"].shape == (10, 4, 3) and out["bin"].tobytes() == out["arr"].tobytes()
    # the arrow engine reads binary tensors with pyarrow, not through Spark's reader
    from scatterkit.spark.aggregation.api import agg_plan, step_specs
    from scatterkit.spark.aggregation.sources import read_types

    events = spark.read.parquet(str(source))
    assert spec.aggregate is not None
    plan = agg_plan(events, ["user"], step_specs(events.schema, spec.aggregate))
    assert read_types(events, plan) is not None


def test_binary_slices_convert_as_spark_casts_array_slices(spark, tmp_path):  # noqa: F811
    # int64 values past 2^53 round to double, int32 to float: the bits of Spark's own cast
    ints = [np.array([2**53 + 1, -(2**60) - 3, 7]), np.array([2**62 + 5, 1, -1])]
    table = pa.table(
        {
            "user": [1, 1],
            "h": pa.array([0, 1], pa.int32()),
            "arr": pa.array([v.tolist() for v in ints], pa.list_(pa.int64())),
            "bin": _binary_column(ints, dtype=np.int64),
            "arr32": pa.array([v.astype(np.int32).tolist() for v in ints], pa.list_(pa.int32())),
            "bin32": _binary_column([v.astype(np.int32) for v in ints], dtype=np.int32),
        }
    )
    events = spark.read.parquet(str(write_parquet(tmp_path / "ints", table, files=1)))
    for dtype, arrays, binary in (("double", "arr", "bin"), ("float", "arr32", "bin32")):
        agg = {"indices": ["h"], "shape": [2, 3], "dtype": dtype}
        got = [
            read_tensors_of(
                skf.aggregate(events, "user", s=skf.scatter_nd_agg(updates=c, **agg)), "s"
            )
            for c in (arrays, binary)
        ]
        assert got[0].tobytes() == got[1].tobytes(), dtype


def test_a_binary_columns_element_type_is_read_off_its_first_non_null_row(spark, tmp_path):  # noqa: F811
    from scatterkit.spark.core.errors import SpecError
    from scatterkit.spark.jobs.plan import binary_elements
    from scatterkit.spark.runtime.storage import locate

    a = _binary_column([None, np.ones(2), np.ones(2)], np.float64)  # the first file's null
    b = _binary_column([np.ones(2, np.int32)] * 3, np.int32)
    table = pa.table({"a": a, "b": b, "c": _binary_column([None] * 3)})
    source = write_parquet(tmp_path / "in", table, files=3)  # a row each
    df = spark.read.parquet(str(source))
    want = {"a": "double", "b": "int"}
    assert binary_elements(df, ["a", "b", "c"]) == want  # Spark's first rows
    assert binary_elements(df, ["a", "b", "c"], locate(str(source))) == want  # pyarrow's
    assert binary_elements(df.limit(0), ["a", "b"]) == {}
    # pyarrow does not read partition directories: Spark does
    write_parquet(tmp_path / "parts" / "day=1", table, files=1)
    parted = spark.read.parquet(str(tmp_path / "parts"))
    assert binary_elements(parted, ["a", "b"], locate(str(tmp_path / "parts"))) == want
    bad = pa.table({"a": _binary_column([np.ones(2)], dtypes=["complex64"])})
    df = spark.read.parquet(str(write_parquet(tmp_path / "bad", bad, files=1)))
    for where in (None, locate(str(tmp_path / "bad"))):
        with pytest.raises(SpecError, match="column 'a' holds binary tensors of dtype 'complex"):
            binary_elements(df, ["a"], where)
