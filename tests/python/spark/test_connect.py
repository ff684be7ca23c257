"""Every public entry of scatterkit.spark through a real Spark Connect server.

The server (spark-submit of SparkConnectServer from the pip package, local[2], 127.0.0.1,
a free port, stopped by its process group id; see connect_server.py) has scatterkit in its
workers' Python. Through it: the job on both engines, bad rows failing or kept, the CLI
with its progress lines, the column functions, the demo, and ``$SPARK_REMOTE``.
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest
from connect_server import connect_server  # noqa: F401
from pyspark.sql import functions as F
from spark_helpers import pa, pq, tensor_column, tensor_rows, write_parquet

import scatterkit as sk
from scatterkit.spark import functions as skf
from scatterkit.spark import read_tensors
from scatterkit.spark.cli import main
from scatterkit.spark.core.connect import is_connect
from scatterkit.spark.core.errors import JobFailed, RowError
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.sessions.session import build_session
from scatterkit.spark.specs.job_spec import JobSpec

pytestmark = pytest.mark.spark

ROWS, BAD_ROW = 40, 13
SPEC = {
    "row_id": "uid",
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 0, "reduction": "mean", "use_init_val": False},
            "inputs": {"data": "grid", "indices": "idx", "updates": "upd"},
            "output": "means",
        }
    ],
}


@pytest.fixture(scope="module")
def remote(connect_server):  # noqa: F811
    """A Connect session on the module's server (the same one for every test here)."""
    session = build_session(remote=connect_server.url)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(21)
    cols = {
        "grid": [rng.random((8, 3)) for _ in range(ROWS)],
        "idx": [rng.integers(0, 8, (5, 3)) for _ in range(ROWS)],
        "upd": [rng.random((5, 3)) for _ in range(ROWS)],
    }
    cols["idx"][BAD_ROW][2, 1] = 8  # out of range
    table = pa.table(
        {"uid": pa.array(np.arange(ROWS) + 1000, pa.int64())}
        | {name: tensor_column(values, values[0].dtype) for name, values in cols.items()}
    )
    return cols, write_parquet(tmp_path_factory.mktemp("connect") / "in", table, files=3)


def _want(cols, r: int) -> np.ndarray:
    return sk.scatter_elements_update(
        cols["grid"][r], cols["idx"][r], cols["upd"][r], 0, reduction="mean", use_init_val=False
    )


def test_a_remote_session_is_a_spark_connect_session(remote, connect_server, monkeypatch):  # noqa: F811
    assert is_connect(remote)
    monkeypatch.setenv("SPARK_REMOTE", connect_server.url)  # as pyspark itself reads it
    from_environment = build_session()
    assert is_connect(from_environment) and from_environment is not remote
    assert from_environment.range(3).count() == 3
    from_environment.stop()
    with pytest.raises(ValueError, match="not both"):
        build_session(master="local[1]")
    with pytest.raises(ValueError, match="starts with sc://"):
        build_session(remote="spark://127.0.0.1:7077")


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_the_job_runs_on_both_engines_and_keeps_bad_rows(remote, data, tmp_path, engine):
    cols, source = data
    out = tmp_path / "out"
    summary = run_job(
        remote, JobSpec.from_dict(SPEC), str(source), str(out),
        on_error="keep", progress=False, engine=engine,
    )  # fmt: skip
    assert summary.engine == engine
    assert summary.rows_in == summary.rows_out == ROWS
    assert summary.errors == {"means": 1} and summary.batches >= 2
    assert summary.executor_modules == [sk.__file__]  # the executors' own scatterkit
    table = pq.read_table(out).sort_by("uid")
    assert table.column("uid").to_pylist() == list(range(1000, 1000 + ROWS))
    for r, got in enumerate(tensor_rows(table.column("means"))):
        error = table.column("means")[r].as_py()["error"]
        if r == BAD_ROW:
            assert got is None and "index 8 is out of bounds" in error
        else:
            assert error is None and np.array_equal(got, _want(cols, r))
    # Parts, their checksums (Spark's writer) and _SUCCESS: no temporary files.
    rest = [p.name for p in out.iterdir() if not p.name.endswith((".parquet", ".crc"))]
    assert rest == ["_SUCCESS"]


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_a_failing_row_fails_the_job_naming_it_and_commits_nothing(remote, data, tmp_path, engine):
    _, source = data
    with pytest.raises(JobFailed, match=rf"failed for uid={1000 + BAD_ROW}: IndexError"):
        run_job(
            remote, JobSpec.from_dict(SPEC), str(source), str(tmp_path / "out"),
            progress=False, engine=engine,
        )  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # no output, no staging directory


def test_the_cli_runs_on_the_server_with_progress_and_both_on_error_modes(
    connect_server,  # noqa: F811
    data,
    tmp_path,
    capsys,
):
    cols, source = data
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(SPEC))
    common = ["run", "--remote", connect_server.url, "--spec", str(spec), "--input", str(source)]
    assert main([*common, "--output", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err
    assert "job failed: step 1 (ScatterElementsUpdate-12 -> 'means') failed for " in err
    assert f"uid={1000 + BAD_ROW}: IndexError" in err
    assert main([*common, "--output", str(tmp_path / "b"), "--on-error", "keep"]) == 0
    out = capsys.readouterr().out
    assert "(through Spark Connect)" in out
    assert "[job " in out and "tasks done" in out and "finished" in out  # the progress lines
    assert f"rows      {ROWS} in, {ROWS} out" in out
    assert "errors    1 row(s) kept with errors (per step: means: 1)" in out
    table = pq.read_table(tmp_path / "b").sort_by("uid")
    assert np.array_equal(tensor_rows(table.column("means"))[0], _want(cols, 0))


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_the_cli_exits_0_after_an_aggregation_on_the_server(
    connect_server,  # noqa: F811
    tmp_path,
    capsys,
    engine,
):
    rng = np.random.default_rng(3)
    n = 500
    events = pa.table(
        {
            "user": rng.integers(0, 7, n),
            "h": rng.integers(0, 4, n).astype(np.int32),
            "x": rng.standard_normal(n),
        }
    )
    source = write_parquet(tmp_path / "events", events, files=2)
    spec = tmp_path / "job.json"
    aggregates = {"s": {"indices": ["h"], "updates": "x", "shape": [4]}}
    spec.write_text(json.dumps({"aggregate": {"by": ["user"], "aggregates": aggregates}}))
    argv = ["run", "--remote", connect_server.url, "--spec", str(spec), "--input", str(source)]
    argv += ["--engine", engine, "--on-error", "keep", "--quiet", "--output", str(tmp_path / "out")]
    summary = tmp_path / "summary.json"
    assert main([*argv, "--summary-json", str(summary)]) == 0
    assert "rows      500 events in, 7 groups out" in capsys.readouterr().out
    counted = json.loads(summary.read_text())
    assert counted["tensor_bytes_out"] == 7 * 4 * 8 and counted["fold_seconds"] > 0
    assert main(argv) == 3
    assert "already exists" in capsys.readouterr().err
    sums = pq.read_table(tmp_path / "out").to_pydict()
    assert sorted(sums["user"]) == list(range(7))


def test_the_column_functions_run_through_the_server(remote, data):
    cols, source = data
    df = remote.read.parquet(str(source))
    kept = df.select(
        "uid",
        skf.scatter_elements_update(
            "grid", "idx", "upd", 0, reduction="mean", use_init_val=False,
            dtype="double", on_error="keep",
        ).alias("m"),
    ).collect()  # fmt: skip
    assert len(kept) == ROWS
    for row in kept:
        r = row.uid - 1000
        if r == BAD_ROW:
            assert row.m.values is None and "out of bounds" in row.m.error
        else:
            got = np.array(row.m.values).reshape(row.m.shape)
            assert row.m.error is None and np.array_equal(got, _want(cols, r))
    failing = df.select(skf.scatter_elements_update("grid", "idx", "upd", 0, dtype="double",
                                                    row_id="uid"))  # fmt: skip
    with pytest.raises(Exception, match=rf"{RowError.__name__}: .*row_id={1000 + BAD_ROW}"):
        failing.collect()


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_binary_tensors_through_the_server_job_and_column_functions(remote, data, tmp_path, engine):
    cols, source = data
    binary = JobSpec.from_dict({**SPEC, "layout": "binary"})
    run_job(remote, binary, str(source), str(tmp_path / "b"), on_error="keep", progress=False,
            engine=engine)  # fmt: skip
    table = pq.read_table(tmp_path / "b")
    assert table.schema.field("means").type.names == ["data", "shape", "dtype", "error"]
    tensors = read_tensors(tmp_path / "b", "means")  # the bad row is null: one per row
    for uid, got in zip(table.column("uid").to_pylist(), tensors):
        r = uid - 1000
        assert got is None if r == BAD_ROW else np.array_equal(got, _want(cols, r))
    # The column functions read the binary output back, and convert it to arrays.
    df = remote.read.parquet(str(tmp_path / "b")).where(F.col("uid") != 1000 + BAD_ROW)
    arrays = df.select("uid", skf.to_arrays("means", dtype="double").alias("m")).collect()
    for row in arrays:
        assert np.array_equal(
            np.array(row.m.values).reshape(row.m.shape), _want(cols, row.uid - 1000)
        )


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    """3,000 events of 50 users over a (4, 3) tensor; user 7 has half of them."""
    rng = np.random.default_rng(9)
    n = 3000
    table = pa.table(
        {
            "user": np.where(rng.random(n) < 0.5, 7, rng.integers(0, 50, n)),
            "h": rng.integers(0, 4, n).astype(np.int32),
            "c": rng.integers(0, 3, n).astype(np.int32),
            "x": rng.standard_normal(n) * rng.choice([1e-10, 1.0, 1e10], n),
        }
    )
    return table, write_parquet(tmp_path_factory.mktemp("events") / "in", table, files=3)


def _sums(table, user: int) -> np.ndarray:
    """The exact sum per cell, rounded once (math.fsum is correctly rounded)."""
    mine = table.filter(pa.compute.equal(table.column("user"), user)).to_pydict()
    cells: dict[int, list[float]] = {}
    for h, c, x in zip(mine["h"], mine["c"], mine["x"]):
        cells.setdefault(h * 3 + c, []).append(x)
    out = np.zeros(12)
    for cell, values in cells.items():
        out[cell] = math.fsum(values)
    return out


def test_event_aggregation_runs_through_the_server(remote, events, tmp_path):
    table, source = events
    df = remote.read.parquet(str(source))
    results = []
    for partitions in (1, 5):
        shuffled = df.repartition(partitions)
        planned = skf.aggregate(shuffled, "user", s=skf.scatter_nd_agg(["h", "c"], "x", [4, 3]))
        bare = shuffled.groupBy("user").agg(
            skf.scatter_nd_agg(["h", "c"], "x", [4, 3], dtype="double").alias("s")
        )
        for frame in (planned, bare):
            rows = {r["user"]: np.array(r["s"]["values"]) for r in frame.collect()}
            results.append(b"".join(rows[u].tobytes() for u in sorted(rows)))
            for user in (7, 0, 49):
                assert rows[user].tobytes() == _sums(table, user).tobytes()
    assert len(set(results)) == 1  # the same bits for both ways and both partitionings
    bad = df.withColumn("h", F.when(F.col("user") == 3, 9).otherwise(F.col("h")))
    with pytest.raises(Exception, match=r"group user=3: coordinate h=9 is out of range"):
        skf.aggregate(bad, "user", s=skf.scatter_nd_agg(["h", "c"], "x", [4, 3])).collect()
    spec = JobSpec.from_dict(
        {"aggregate": {"by": ["user"], "aggregates": {
            "s": {"indices": ["h", "c"], "updates": "x", "shape": [4, 3]}}}}
    )  # fmt: skip
    for engine in ("arrow", "spark"):
        summary = run_job(remote, spec, str(source), str(tmp_path / engine), engine=engine)
        assert summary.engine == engine and summary.rows_out == 50
        assert summary.aggregated == {"s": {"events": 3000, "dropped": 0, "error_groups": 0}}
        written = pq.read_table(tmp_path / engine).to_pydict()
        user7 = written["user"].index(7)
        assert np.array(written["s"][user7]["values"]).tobytes() == _sums(table, 7).tobytes()


def test_aggregate_reads_a_plain_scans_files_itself_through_the_server(remote, events):
    from scatterkit.spark.aggregation.api import agg_plan, settle_spec
    from scatterkit.spark.aggregation.sources import scan_reader

    table, source = events
    df = remote.read.parquet(str(source))
    agg = skf.scatter_nd_agg(["h", "c"], "x", [4, 3])
    plan = agg_plan(df, ["user"], {"s": settle_spec(df.schema, agg._scatterkit_agg, "s")})
    for frame in (df, df.select("user", "h", "c", "x")):
        reader = scan_reader(frame, plan)
        assert reader is not None and len(reader.pieces) == 3  # the module's three files
    others = (
        df.filter(F.col("x") > 0),
        df.select("user", "h", "c", F.col("h").alias("x")),
        remote.read.option("mergeSchema", "true").parquet(str(source)),
        df.repartition(2),
    )
    assert all(scan_reader(frame, plan) is None for frame in others)
    fast, through_spark = (skf.aggregate(f, "user", s=agg) for f in (df, df.repartition(2)))
    rows = [{r["user"]: r["s"]["values"] for r in f.collect()} for f in (fast, through_spark)]
    assert rows[0] == rows[1] and len(rows[0]) == 50
    assert np.array(rows[0][7]).tobytes() == _sums(table, 7).tobytes()


def test_binary_slices_aggregate_through_the_server(remote, events, tmp_path):
    table, _ = events
    slices = np.zeros((table.num_rows, 3))
    slices[np.arange(table.num_rows), table.column("c").to_numpy()] = table.column("x")
    data = pa.array([row.tobytes() for row in slices], pa.binary())
    shapes = pa.array([[3]] * table.num_rows, pa.list_(pa.int32()))
    dtypes = pa.array(["float64"] * table.num_rows)
    with_slices = table.append_column(
        "arr", pa.array(list(slices), pa.list_(pa.float64()))
    ).append_column(
        "bin", pa.StructArray.from_arrays([data, shapes, dtypes], ["data", "shape", "dtype"])
    )
    df = remote.read.parquet(str(write_parquet(tmp_path / "slices", with_slices, files=2)))
    results = set()
    for column in ("arr", "bin"):
        agg = skf.scatter_nd_agg("h", column, [4, 3], dtype="double")
        for frame in (skf.aggregate(df, "user", s=agg), df.groupBy("user").agg(agg.alias("s"))):
            rows = {r["user"]: np.array(r["s"]["values"]) for r in frame.collect()}
            results.add(b"".join(rows[u].tobytes() for u in sorted(rows)))
    assert len(results) == 1  # binary slices fold to the bits of array slices, both ways


def test_the_file_work_runs_on_the_servers_executors(remote, tmp_path):
    # The client may not see the server's files: listing and committing run in a Spark task.
    from scatterkit.spark.core.cluster import on_cluster

    assert on_cluster(remote, os.getpid) != os.getpid()
    with pytest.raises(FileNotFoundError):  # raised here with its type
        on_cluster(remote, os.listdir, str(tmp_path / "missing"))


def test_the_demo_runs_through_the_server(connect_server, tmp_path, capsys):  # noqa: F811
    code = main(
        ["demo", "--remote", connect_server.url, "--rows", "300", "--sample", "40",
         "--workdir", str(tmp_path)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "(through Spark Connect)" in out and "bit for bit" in out
    assert "events in, 300 groups out" in out and "accounts for all" in out


def test_stopping_the_server_ends_its_whole_process_group(remote, connect_server):  # noqa: F811
    # After every test that uses the server: the fixtures' own stop() calls are then no-ops.
    remote.stop()  # first the session, which would otherwise retry a server that is gone
    connect_server.stop()
    assert connect_server.process.poll() is not None
    deadline = time.monotonic() + 10
    while True:  # the group's other members (Python workers) may take a moment
        try:
            os.killpg(connect_server.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "processes of the server's group are still alive"
        time.sleep(0.1)


def test_relative_paths_are_the_clients_not_the_servers(tmp_path, monkeypatch):
    # A Connect server resolves a relative path against its own working directory.
    from scatterkit.spark.jobs.run import _from_here

    monkeypatch.chdir(tmp_path)
    assert _from_here("in/part") == str(tmp_path / "in" / "part")
    for kept in ("/data/in", "file:/data/in", "s3://bucket/in", "hdfs:///in"):
        assert _from_here(kept) == kept
