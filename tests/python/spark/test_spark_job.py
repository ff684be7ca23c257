"""The main job on local Spark: Parquet in and out, bad rows kept or failing, the CLI."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from spark_helpers import list_array, pa, pq, spark, tensor_column, tensor_rows, write_parquet  # noqa: F401

import scatterkit as sk
from scatterkit.spark.cli import _at_least, main
from scatterkit.spark.jobs.run import JobFailed, run_job, transform
from scatterkit.spark.jobs.summary import JobSummary
from scatterkit.spark.specs.job_spec import JobSpec

SPEC = {
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 0, "reduction": "sum"},
            "inputs": {
                "data": {"fill": 0, "shape": [16], "dtype": "float"},
                "indices": "bucket",
                "updates": "amount",
            },
            "output": "hist",
        },
        {
            "op": "ScatterNDUpdate-3",
            "inputs": {"data": "grid", "indices": "cells", "updates": "vals"},
            "output": "grid2",
        },
    ]
}
BAD_BUCKET_ROW, BAD_GRID_ROW = 7, 30


def _table(rng, n: int = 60) -> tuple[dict, pa.Table]:
    cols = {
        "bucket": [
            rng.integers(0, 16, int(rng.integers(0, 20))).astype(np.int32) for _ in range(n)
        ],
        "grid": [rng.random((6, 5)).astype(np.float32) for _ in range(n)],
        "cells": [rng.integers(0, 6, (3, 1)) for _ in range(n)],
        "vals": [rng.random((3, 5)).astype(np.float32) for _ in range(n)],
    }
    cols["amount"] = [rng.random(b.size).astype(np.float32) for b in cols["bucket"]]
    cols["bucket"][BAD_BUCKET_ROW] = np.array([3, 16], np.int32)
    cols["amount"][BAD_BUCKET_ROW] = np.ones(2, np.float32)
    shapes = [g.shape for g in cols["grid"]]
    shapes[BAD_GRID_ROW] = (5, 5)
    table = pa.table(
        {
            "uid": pa.array(np.arange(n) * 10, pa.int64()),
            "bucket": list_array(cols["bucket"], np.int32),
            "amount": list_array(cols["amount"], np.float32),
            "grid": tensor_column(cols["grid"], np.float32, shapes=shapes),
            "cells": tensor_column(cols["cells"], np.int64),
            "vals": tensor_column(cols["vals"], np.float32),
        }
    )
    return cols, table


def _check_output(cols, table: pa.Table, keep: bool) -> None:
    table = table.sort_by("uid")
    assert table.column("uid").to_pylist() == [10 * r for r in range(len(cols["grid"]))]
    hist, grid2 = tensor_rows(table.column("hist")), tensor_rows(table.column("grid2"))
    for r in range(len(cols["grid"])):
        if r == BAD_BUCKET_ROW:
            assert hist[r] is None
            assert "index 16 is out of bounds" in table.column("hist")[r].as_py()["error"]
        else:
            want = sk.scatter_elements_update(
                np.zeros(16, np.float32), cols["bucket"][r], cols["amount"][r], 0, reduction="sum"
            )
            assert np.array_equal(hist[r], want)
        if r == BAD_GRID_ROW:
            assert grid2[r] is None
            assert "does not match its 30 values" in table.column("grid2")[r].as_py()["error"]
        else:
            want = sk.scatter_nd_update(cols["grid"][r], cols["cells"][r], cols["vals"][r])
            assert np.array_equal(grid2[r], want)


ENGINES = pytest.mark.parametrize("engine", ["arrow", "spark"])


@ENGINES
def test_run_job_keep_writes_every_row_with_errors_beside_results(spark, rng, tmp_path, engine):  # noqa: F811
    cols, table = _table(rng)
    source = write_parquet(tmp_path / "in", table, files=3)
    summary = run_job(
        spark,
        JobSpec.from_dict(SPEC),
        str(source),
        str(tmp_path / "out"),
        on_error="keep",
        progress=False,
        engine=engine,
    )
    assert summary.engine == engine
    assert summary.rows_in == summary.rows_out == table.num_rows
    assert summary.errors == {"hist": 1, "grid2": 1}
    assert summary.executor_threads == [1]  # spark.task.cpus = 1
    assert summary.tensor_bytes_out > 0 and summary.batches >= 1
    _check_output(cols, pq.read_table(tmp_path / "out"), keep=True)


@ENGINES
def test_run_job_fail_names_file_and_row_and_commits_nothing(spark, rng, tmp_path, engine):  # noqa: F811
    _, table = _table(rng)
    source = write_parquet(tmp_path / "in", table, files=2)  # rows 0-29, 30-59
    with pytest.raises(JobFailed) as info:
        run_job(
            spark,
            JobSpec.from_dict(SPEC),
            str(source),
            str(tmp_path / "out"),
            progress=False,
            engine=engine,
        )
    message = str(info.value)
    assert "failed for row " in message and "of file 'part-" in message
    assert ("row 7 of file 'part-0.parquet'" in message) or (
        "row 0 of file 'part-1.parquet'" in message
    )
    # Neither engine leaves a directory behind, nor its hidden staging directory.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def _keep_job(spark, source, out, **kwargs):  # noqa: F811
    return run_job(
        spark,
        JobSpec.from_dict(SPEC),
        str(source),
        str(out),
        on_error="keep",
        progress=False,
        **kwargs,
    )


def test_arrow_engine_output_matches_the_spark_engine(spark, rng, tmp_path):  # noqa: F811
    _, table = _table(rng)
    # Spark reads Parquet's uint16 as int; the arrow engine's steps must see the same
    at = table.schema.get_field_index("bucket")
    table = table.set_column(at, "bucket", table.column("bucket").cast(pa.list_(pa.uint16())))
    source = write_parquet(tmp_path / "in", table, files=2)
    _keep_job(spark, source, tmp_path / "a", engine="arrow")
    _keep_job(spark, source, tmp_path / "s", engine="spark")
    arrow, spark_out = (
        spark.read.parquet(str(tmp_path / "a")),
        spark.read.parquet(str(tmp_path / "s")),
    )
    assert arrow.schema == spark_out.schema
    assert sorted(arrow.collect()) == sorted(spark_out.collect())
    assert (tmp_path / "a" / "_SUCCESS").exists()
    assert not (tmp_path / "a" / "_temporary").exists()


def _write_halves(path, first: pa.Table, second: pa.Table) -> None:
    """part-0.parquet: the first half of `first`'s rows; part-1.parquet: the rest, of `second`."""
    path.mkdir()
    half = first.num_rows // 2
    pq.write_table(first.slice(0, half), path / "part-0.parquet")
    pq.write_table(second.slice(half), path / "part-1.parquet")


def _amount_as(table: pa.Table, value_type: pa.DataType) -> pa.Table:
    at = table.schema.get_field_index("amount")
    return table.set_column(at, "amount", table.column("amount").cast(pa.list_(value_type)))


def test_a_file_with_a_wider_column_type_fails_the_job_rather_than_rounding(spark, rng, tmp_path):  # noqa: F811
    # Spark takes the float schema from part-0; part-1's doubles would round to float
    _, table = _table(rng)
    _write_halves(tmp_path / "in", table, _amount_as(table, pa.float64()))
    assert spark.read.parquet(str(tmp_path / "in")).schema["amount"].dataType.simpleString() == (
        "array<float>"
    )
    with pytest.raises(
        JobFailed, match=r"file 'part-1\.parquet' holds column 'amount' as .*double"
    ):
        _keep_job(spark, tmp_path / "in", tmp_path / "a", engine="arrow")
    assert not (tmp_path / "a").exists()
    with pytest.raises(Exception, match="PARQUET_COLUMN_DATA_TYPE_MISMATCH"):
        _keep_job(spark, tmp_path / "in", tmp_path / "s", engine="spark")


def test_a_file_with_a_narrower_column_type_is_widened_by_both_engines(spark, rng, tmp_path):  # noqa: F811
    _, table = _table(rng)
    _write_halves(tmp_path / "in", _amount_as(table, pa.float64()), table)
    _keep_job(spark, tmp_path / "in", tmp_path / "a", engine="arrow")
    _keep_job(spark, tmp_path / "in", tmp_path / "s", engine="spark")
    arrow = spark.read.parquet(str(tmp_path / "a"))
    assert arrow.schema["amount"].dataType.simpleString() == "array<double>"
    assert sorted(arrow.collect()) == sorted(spark.read.parquet(str(tmp_path / "s")).collect())


def test_a_passed_through_column_a_file_lacks_is_null_there_on_both_engines(spark, rng, tmp_path):  # noqa: F811
    # Spark takes the schema from part-0, which has the column, and reads part-1's rows
    # with nulls there; the arrow engine's tasks failed on the missing column
    _, table = _table(rng)
    tags = pa.array([f"t{r}" for r in range(table.num_rows)])
    _write_halves(tmp_path / "in", table.append_column("tag", tags), table)
    spec = JobSpec.from_dict({**SPEC, "passthrough": ["uid", "tag"]})
    for engine in ("arrow", "spark"):
        run_job(spark, spec, str(tmp_path / "in"), str(tmp_path / engine), on_error="keep",
                progress=False, engine=engine)  # fmt: skip
    arrow = pq.read_table(tmp_path / "arrow").sort_by("uid")
    half = table.num_rows // 2
    assert arrow.column("tag").to_pylist() == tags.to_pylist()[:half] + [None] * half
    assert sorted(spark.read.parquet(str(tmp_path / "arrow")).collect()) == sorted(
        spark.read.parquet(str(tmp_path / "spark")).collect()
    )


@pytest.mark.parametrize(
    "source, target, widens",
    [
        (pa.int8(), pa.int16(), True),
        (pa.uint16(), pa.int32(), True),
        (pa.uint32(), pa.int64(), True),
        (pa.uint32(), pa.int32(), False),
        (pa.int16(), pa.uint32(), False),
        (pa.int64(), pa.int32(), False),
        (pa.float16(), pa.float32(), True),
        (pa.float32(), pa.float64(), True),
        (pa.float64(), pa.float32(), False),
        (pa.int32(), pa.float64(), False),
        (pa.float32(), pa.int64(), False),
        (pa.bool_(), pa.int8(), False),
        (pa.list_(pa.field("element", pa.uint8())), pa.list_(pa.int16()), True),
        (pa.large_list(pa.float64()), pa.list_(pa.float32()), False),
        (
            pa.struct([("values", pa.list_(pa.float32())), ("shape", pa.list_(pa.int32()))]),
            pa.struct([("shape", pa.list_(pa.int64())), ("values", pa.list_(pa.float64()))]),
            True,
        ),
        (
            pa.struct([("values", pa.list_(pa.float32())), ("shape", pa.list_(pa.int64()))]),
            pa.struct([("values", pa.list_(pa.float32())), ("shape", pa.list_(pa.int32()))]),
            False,
        ),
        (
            pa.struct([("values", pa.list_(pa.float32()))]),
            pa.struct([("v", pa.list_(pa.float32()))]),
            False,
        ),
    ],
)
def test_only_casts_that_keep_every_value_are_widenings(source, target, widens):
    from scatterkit.spark.runtime.reading import _widens

    assert _widens(source, target) is widens


def test_arrow_engine_splits_a_file_at_row_groups_and_names_rows_in_it(spark, rng, tmp_path):  # noqa: F811
    cols, table = _table(rng)
    (tmp_path / "in").mkdir()
    pq.write_table(table, tmp_path / "in" / "one.parquet", row_group_size=8)  # 8 groups
    summary = _keep_job(spark, tmp_path / "in", tmp_path / "out", engine="arrow")
    assert summary.rows_out == table.num_rows and summary.batches >= 2  # several tasks
    _check_output(cols, pq.read_table(tmp_path / "out"), keep=True)
    with pytest.raises(JobFailed, match=r"row 7 of file 'one\.parquet'"):
        run_job(
            spark, JobSpec.from_dict(SPEC), str(tmp_path / "in"), str(tmp_path / "o2"),
            progress=False, engine="arrow",
        )  # fmt: skip


@ENGINES
def test_engines_overwrite_only_after_success(spark, rng, tmp_path, engine):  # noqa: F811
    cols, table = _table(rng)
    source = write_parquet(tmp_path / "in", table, files=2)
    out = tmp_path / "out"
    _keep_job(spark, source, out, engine=engine)
    with pytest.raises(FileExistsError, match="already exists"):
        _keep_job(spark, source, out, engine=engine)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(JobFailed):  # fails on a bad row: the old output stays whole
        run_job(
            spark, JobSpec.from_dict(SPEC), str(source), str(out), mode="overwrite",
            progress=False, engine=engine,
        )  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == before
    (out / "stale.parquet").write_bytes(b"not parquet")
    _keep_job(spark, source, out, engine=engine, mode="overwrite")
    assert not (out / "stale.parquet").exists()
    _check_output(cols, pq.read_table(out), keep=True)
    for target in (source, tmp_path):  # the input itself, or a directory holding it
        with pytest.raises(ValueError, match="would replace the input"):
            _keep_job(spark, source, target, engine=engine, mode="overwrite")
    assert pq.read_table(source).num_rows == table.num_rows
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]  # no staging left


def test_auto_engine_reads_hadoop_local_paths_and_hands_globs_to_spark(spark, rng, tmp_path):  # noqa: F811
    cols, table = _table(rng)
    source = write_parquet(tmp_path / "in", table, files=2)
    # Hadoop writes local paths as file:/p; the arrow engine reads them as /p.
    summary = _keep_job(spark, f"file:{source}", f"file:{tmp_path / 'a'}")
    assert summary.engine == "arrow" and summary.rows_out == table.num_rows
    _check_output(cols, pq.read_table(tmp_path / "a"), keep=True)
    summary = _keep_job(spark, f"{source}/part-*.parquet", tmp_path / "g")
    assert summary.engine == "spark" and summary.rows_out == table.num_rows
    with pytest.raises(ValueError, match="glob pattern"):
        _keep_job(spark, f"{source}/part-*.parquet", tmp_path / "g2", engine="arrow")


def test_an_output_that_is_a_file_is_replaced_by_the_spark_engine(spark, rng, tmp_path):  # noqa: F811
    cols, table = _table(rng)
    source = write_parquet(tmp_path / "in", table, files=1)
    out = tmp_path / "out"
    out.write_text("a file")
    with pytest.raises(ValueError, match="is a file, not a directory"):
        _keep_job(spark, source, out, engine="arrow", mode="overwrite")
    with pytest.raises(FileExistsError):
        _keep_job(spark, source, out)
    summary = _keep_job(spark, source, out, mode="overwrite")
    assert summary.engine == "spark"
    _check_output(cols, pq.read_table(out), keep=True)


@ENGINES
def test_column_names_with_dots(spark, rng, tmp_path, engine):  # noqa: F811
    # PySpark's mapInArrow cannot look such names up; the job passes aliases and restores them.
    cols, table = _table(rng)
    inputs = ("bucket", "amount", "grid", "cells", "vals")
    table = table.rename_columns([f"in.{n}" if n in inputs else n for n in table.column_names])
    text = json.dumps({"row_id": "uid", **SPEC})
    for name in inputs:
        text = text.replace(f'"{name}"', f'"in.{name}"')
    source = write_parquet(tmp_path / "in", table, files=1)
    run_job(
        spark, JobSpec.from_dict(json.loads(text)), str(source), str(tmp_path / "out"),
        on_error="keep", progress=False, engine=engine,
    )  # fmt: skip
    _check_output(cols, pq.read_table(tmp_path / "out"), keep=True)


def test_arrow_pieces_number_rows_from_the_start_of_their_file(tmp_path):
    # A task reading row groups 2 and 3 names its rows 16 to 31, as Spark's row_index does,
    # so that a failure names the right row.
    from scatterkit.spark.runtime.reading import BatchLimits, Piece, read_piece
    from scatterkit.spark.runtime.steps import FILE_COLUMN, ROW_COLUMN

    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"x": pa.array(range(32), pa.int64())}), path, row_group_size=8)
    piece = Piece(str(path), 2, 4)
    batches = read_piece(pq.ParquetFile(path), piece, ["x"], True, BatchLimits(5, 1 << 20))
    rows = pa.Table.from_batches(list(batches))
    assert rows["x"].to_pylist() == list(range(16, 32))
    assert rows[ROW_COLUMN].to_pylist() == list(range(16, 32))
    assert set(rows[FILE_COLUMN].to_pylist()) == {"one.parquet"}


def test_arrow_engine_skips_hidden_and_underscore_files_as_spark_does(tmp_path):
    # Spark's own output holds .crc checksums and _SUCCESS: not Parquet to read.
    import pyarrow.fs as pafs

    from scatterkit.spark.runtime.reading import input_files

    pq.write_table(pa.table({"x": [1]}), tmp_path / "part-0.parquet")
    (tmp_path / ".part-0.parquet.crc").write_bytes(b"crc")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".staging").mkdir()
    pq.write_table(pa.table({"x": [2]}), tmp_path / ".staging" / "part-1.parquet")
    assert input_files(pafs.LocalFileSystem(), str(tmp_path)) == [str(tmp_path / "part-0.parquet")]


def test_an_output_is_apart_from_an_input_whose_name_merely_starts_like_it():
    from scatterkit.spark.runtime.storage import check_output_apart

    check_output_apart("/data/events_2024", "/data/events", "in", "out")  # siblings
    with pytest.raises(ValueError, match="would replace the input"):
        check_output_apart("/data/events/2024", "/data/events/", "in", "out")


def test_arrow_batch_limits_follow_sparks_settings():
    from scatterkit.spark.runtime.reading import BatchLimits, _byte_size

    rows_key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    bytes_key = "spark.sql.execution.arrow.maxBytesPerBatch"
    assert BatchLimits.from_conf({}) == BatchLimits(4096, 4 << 20)
    assert BatchLimits.from_conf({rows_key: "5", bytes_key: "1m"}) == BatchLimits(5, 1 << 20)
    assert BatchLimits.from_conf({rows_key: "0", bytes_key: "-1"}).rows == 2**31 - 1
    assert BatchLimits.from_conf({bytes_key: "0"}).bytes == 2**62  # 0 is "no limit" too
    assert [_byte_size(t) for t in ("1024", "64m", "1GB", " 2 k ")] == [
        1024,
        64 << 20,
        1 << 30,
        2048,
    ]
    with pytest.raises(ValueError, match="maxBytesPerBatch: cannot read 'lots'"):
        _byte_size("lots")


def test_arrow_engine_writes_an_empty_output_with_its_schema(spark, rng, tmp_path):  # noqa: F811
    _, table = _table(rng)
    source = write_parquet(tmp_path / "in", table.slice(0, 0), files=1)
    summary = _keep_job(spark, source, tmp_path / "out", engine="arrow")
    assert summary.rows_in == summary.rows_out == 0
    assert {"uid", "hist", "grid2"} <= set(pq.read_schema(
        next((tmp_path / "out").glob("*.parquet"))).names)  # fmt: skip


def test_auto_engine_leaves_partition_directories_to_spark(spark, rng, tmp_path):  # noqa: F811
    _, table = _table(rng)
    for part, rows in (("day=1", table.slice(0, 30)), ("day=2", table.slice(30))):
        (tmp_path / "in" / part).mkdir(parents=True)
        pq.write_table(rows, tmp_path / "in" / part / "f.parquet")
    summary = _keep_job(spark, tmp_path / "in", tmp_path / "out")
    assert summary.engine == "spark" and summary.rows_out == table.num_rows
    assert "day" in pq.read_table(tmp_path / "out").column_names  # Spark's partition column
    with pytest.raises(ValueError, match="partition directories"):
        _keep_job(spark, tmp_path / "in", tmp_path / "o2", engine="arrow")
    with pytest.raises(ValueError, match="engine must be one of"):
        _keep_job(spark, tmp_path / "in", tmp_path / "o3", engine="jvm")


def test_transform_is_a_lazy_dataframe_with_only_needed_columns(spark, rng, tmp_path):  # noqa: F811
    cols, table = _table(rng, n=40)
    df = spark.read.parquet(str(write_parquet(tmp_path / "in", table, files=1)))
    spec = JobSpec.from_dict({"row_id": "uid", "passthrough": [], "steps": SPEC["steps"][:1]})
    out = transform(df, spec, on_error="keep")
    assert out.columns == ["uid", "hist"]
    rows = {r.uid: r for r in out.collect()}
    assert rows[10 * BAD_BUCKET_ROW].hist.values is None
    assert "index 16 is out of bounds" in rows[10 * BAD_BUCKET_ROW].hist.error
    assert rows[30].hist.error is None
    want = sk.scatter_elements_update(
        np.zeros(16, np.float32), cols["bucket"][3], cols["amount"][3], 0, reduction="sum"
    )
    assert np.allclose(rows[30].hist.values, want)


def test_run_job_rejects_an_unknown_mode_before_reading(spark, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="mode must be 'errorifexists' or 'overwrite', got 'app"):
        run_job(
            spark, JobSpec.from_dict(SPEC), str(tmp_path / "in"), str(tmp_path / "out"),
            mode="append", progress=False,
        )  # fmt: skip


def test_cli_run_exit_codes_and_summary(spark, rng, tmp_path, capsys):  # noqa: F811
    _, table = _table(rng, n=40)
    source = write_parquet(tmp_path / "in", table, files=1)
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps({"row_id": "uid", **SPEC}))
    common = ["run", "--spec", str(spec_path), "--input", str(source), "--quiet"]

    assert main([*common, "--output", str(tmp_path / "a")]) == 1
    assert "job failed: step 1 (ScatterElementsUpdate-12 -> 'hist') failed for uid=70" in (
        capsys.readouterr().err
    )
    summary_path = tmp_path / "summary.json"
    code = main(
        [
            *common,
            "--output",
            str(tmp_path / "b"),
            "--on-error",
            "keep",
            "--summary-json",
            str(summary_path),
        ]
    )
    assert code == 0
    assert "40 in, 40 out" in capsys.readouterr().out
    summary = json.loads(summary_path.read_text())
    assert summary["rows_out"] == 40 and summary["error_rows"] == 2
    assert summary["engine"] == "arrow"  # auto, on a local directory

    assert main([*common, "--output", str(tmp_path / "b"), "--on-error", "keep"]) == 3
    assert "already exists (--overwrite replaces it)" in capsys.readouterr().err
    assert main([*common, "--output", str(tmp_path / "b"), "--engine", "spark"]) == 3
    assert (
        main([*common, "--output", str(tmp_path / "b"), "--on-error", "keep", "--overwrite"]) == 0
    )
    assert "40 in, 40 out" in capsys.readouterr().out
    keep_spark = ["--on-error", "keep", "--engine", "spark", "--summary-json", str(summary_path)]
    assert main([*common, "--output", str(tmp_path / "b2"), *keep_spark]) == 0
    assert json.loads(summary_path.read_text())["engine"] == "spark"
    assert "(spark engine)" in capsys.readouterr().out

    spec_path.write_text(json.dumps({"steps": [{**SPEC["steps"][0], "op": "Nope-1"}]}))
    assert main([*common, "--output", str(tmp_path / "c")]) == 2
    assert "unknown op 'Nope-1'" in capsys.readouterr().err


def test_cli_usage_errors_exit_2_before_spark_starts(tmp_path, capsys):
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps(SPEC))
    common = ["run", "--spec", str(spec_path), "--input", "in", "--output", "out"]
    for bad, message in (
        (["--conf", "x"], "argument --conf: takes KEY=VALUE, got 'x'"),
        (["--conf", "=1"], "argument --conf: takes KEY=VALUE, got '=1'"),
        (["--master", "bogus://x"], "'bogus://x' is not a Spark master URL"),
    ):
        with pytest.raises(SystemExit) as info:
            main([*common, *bad])
        assert info.value.code == 2 and message in capsys.readouterr().err
    assert _at_least(1)("1") == 1 and _at_least(0)("0") == 0  # the bound itself is allowed
    for bad in (["--rows", "0"], ["--sample", "-1"]):
        with pytest.raises(SystemExit) as info:
            main(["demo", *bad])
        assert info.value.code == 2 and "must be at least" in capsys.readouterr().err
    assert main([*common, "--summary-json", str(tmp_path / "no" / "s.json")]) == 2
    assert "no directory for --summary-json" in capsys.readouterr().err
    assert main([*common, "--archive", str(tmp_path / "nope.tar.gz")]) == 2
    assert "no environment archive at" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cli_run_exits_1_and_says_so_when_rows_are_lost(spark, tmp_path, capsys, monkeypatch):  # noqa: F811
    def lost_a_row(*_, **__):
        return JobSummary(rows_in=5, rows_out=4, seconds=1.0)

    monkeypatch.setattr("scatterkit.spark.sessions.session.build_session", lambda **_: spark)
    monkeypatch.setattr("scatterkit.spark.jobs.run.run_job", lost_a_row)
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps(SPEC))
    assert main(["run", "--spec", str(spec_path), "--input", "in", "--output", "out"]) == 1
    assert "rows      5 in, 4 out  << ROW COUNT MISMATCH" in capsys.readouterr().out


def test_cli_says_where_to_look_when_spark_stops_while_starting(tmp_path, capsys, monkeypatch):
    def stopped(**_):
        raise RuntimeError("Cannot call methods on a stopped SparkContext.\nThis stopped ...")

    monkeypatch.setattr("scatterkit.spark.sessions.session.build_session", stopped)
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps(SPEC))
    argv = ["run", "--spec", str(spec_path), "--input", "in", "--output", "out"]
    assert main([*argv, "--master", "spark://127.0.0.1:9"]) == 2
    assert capsys.readouterr().err == (
        "scatterkit-spark: Spark did not start: Cannot call methods on a stopped SparkContext. "
        "(is the master spark://127.0.0.1:9 reachable? --log-level ERROR shows Spark's log)\n"
    )


def test_cli_run_names_an_unreadable_input_in_one_line(spark, tmp_path, capsys):  # noqa: F811
    spec_path = tmp_path / "job.json"
    spec_path.write_text(json.dumps({"row_id": "uid", **SPEC}))
    not_parquet = tmp_path / "notes.txt"
    not_parquet.write_text("not parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    common = ["run", "--spec", str(spec_path), "--quiet", "--output", str(tmp_path / "out")]

    assert main([*common, "--input", str(not_parquet)]) == 1
    err = capsys.readouterr().err
    assert "scatterkit-spark: Spark failed: [FAILED_READ_FILE" in err
    assert "Traceback" not in err and "An error occurred while calling" not in err

    assert main([*common, "--input", str(empty)]) == 2
    assert f"input '{empty}' holds no Parquet files" in capsys.readouterr().err


@ENGINES
def test_an_exact_step_gives_the_bits_of_the_exact_api_on_both_engines(
    spark,  # noqa: F811
    rng,
    tmp_path,
    engine,
):
    cols, table = _table(rng, n=BAD_GRID_ROW + 1)
    spec = json.loads(json.dumps(SPEC))
    spec["steps"][0]["attributes"].update(reduction="mean", exact=True)
    spec["steps"] = spec["steps"][:1]
    source = write_parquet(tmp_path / "in", table, files=2)
    run_job(
        spark,
        JobSpec.from_dict(spec),
        str(source),
        str(tmp_path / "out"),
        on_error="keep",
        progress=False,
        engine=engine,
    )
    out = pq.read_table(tmp_path / "out").sort_by("uid")
    hist = tensor_rows(out.column("hist"))
    for r in range(len(cols["bucket"])):
        if r == BAD_BUCKET_ROW:
            assert hist[r] is None
            continue
        want = sk.scatter_elements_update(
            np.zeros(16, np.float32),
            cols["bucket"][r],
            cols["amount"][r],
            0,
            reduction="mean",
            exact=True,
        )
        assert np.array_equal(hist[r].view(np.uint32), want.view(np.uint32))


def test_the_file_work_on_a_local_master_runs_in_the_driver(spark):  # noqa: F811
    # Its executors share this machine's files: no one-task job per listing or commit.
    from scatterkit.spark.core.cluster import on_cluster

    assert spark.sparkContext.master.startswith("local")
    assert on_cluster(spark, os.getpid) == os.getpid()


def test_task_files_gather_row_groups_and_dictionary_encode_flat_columns_only(
    tmp_path, monkeypatch
):
    from scatterkit.spark.runtime import piece_task

    def batch(first: int) -> pa.RecordBatch:
        return pa.record_batch(
            {
                "id": pa.array(np.arange(first, first + 100)),
                "kind": pa.array(["a", "b"] * 50),
                "values": pa.array([[1.5, 2.5, first]] * 100),
            }
        )

    batches = [batch(100 * i) for i in range(5)]
    monkeypatch.setattr(piece_task, "ROW_GROUP_BYTES", 3 * batches[0].nbytes - 1)
    path, rows = piece_task.write_task_file(str(tmp_path / "f.parquet"), None, iter(batches))
    assert (path, rows) == (str(tmp_path / "f.parquet"), 500)
    metadata = pq.ParquetFile(path).metadata
    groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    assert [g.num_rows for g in groups] == [300, 200]  # three batches, then the rest
    encodings = {
        groups[0].column(c).path_in_schema: groups[0].column(c).encodings for c in range(3)
    }
    assert "RLE_DICTIONARY" in encodings["kind"] and "RLE_DICTIONARY" in encodings["id"]
    assert "RLE_DICTIONARY" not in encodings["values.list.element"]
    assert pq.read_table(path).equals(pa.Table.from_batches(batches))
    assert piece_task.write_task_file(str(tmp_path / "none.parquet"), None, iter([])) == ("", 0)
    assert not (tmp_path / "none.parquet").exists()


def test_parallelism_is_the_partitions_spark_range_gets_without_a_job(spark):  # noqa: F811
    from scatterkit.spark.core.cluster import parallelism

    tracker = spark.sparkContext.statusTracker()
    jobs = len(tracker.getJobIdsForGroup(None))
    assert parallelism(spark) == 2  # local[2]
    assert len(tracker.getJobIdsForGroup(None)) == jobs  # asked of the session, not a job
    assert spark.range(1 << 16).rdd.getNumPartitions() == 2  # what it stands for
