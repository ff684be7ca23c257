"""scatterkit shipped with ``addArtifacts`` to a Spark Connect server whose workers lack it.

The server's Python workers run a fresh venv holding only NumPy and pyarrow (the driver's
versions; pyspark itself comes from SPARK_HOME's pyspark.zip, first on the workers'
PYTHONPATH). Without shipping, a function that uses scatterkit fails to unpickle there;
after `ship_library` it runs, and so do scatterkit's own column functions; an archive whose
root is not importable (the wheel as it is) works through `on_workers`.
"""

from __future__ import annotations

import importlib.metadata as metadata
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from connect_server import ConnectServer, serve
from spark_helpers import pa

import scatterkit as sk

pytestmark = [pytest.mark.spark, pytest.mark.jvm]  # its own Connect servers

VENV_TIMEOUT = 600  # seconds to build the workers' venv (downloads on a cold pip cache)
SCHEMA = "out array<double>, module string"


@pytest.fixture(scope="module")
def worker_python(tmp_path_factory) -> str:
    """A venv without scatterkit (and without the driver's site-packages): its Python."""
    venv = tmp_path_factory.mktemp("worker-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pins = [f"{name}=={metadata.version(name)}" for name in ("numpy", "pyarrow")]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", *pins],
        capture_output=True,
        text=True,
        timeout=VENV_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return str(python)


@pytest.fixture(scope="module")
def server(request, tmp_path_factory, worker_python) -> Iterator[ConnectServer]:
    yield from serve(request, tmp_path_factory.mktemp("connect"), python=worker_python)


@pytest.fixture
def spark(server):
    """A new Connect session per test: artifacts of one test are not seen by the next."""
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(server.url).create()
    yield session
    session.stop()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    from scatterkit.spark.sessions.pack import wheel_from_installed

    return wheel_from_installed(tmp_path_factory.mktemp("wheel"))


def _scatter() -> Callable:
    """A mapInArrow function using scatterkit (nested: cloudpickle takes it by value, and
    its global `sk` by reference, so the worker imports scatterkit to unpickle it)."""

    def scatter(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ids = batch.column(0).to_numpy()
            out = sk.scatter_elements_update(
                np.zeros(4), ids % 4, ids.astype(np.float64), 0, reduction="sum"
            )
            yield pa.RecordBatch.from_pydict({"out": [out.tolist()], "module": [sk.__file__]})

    return scatter


def _run(spark, fn) -> tuple[list[float], str]:
    (row,) = spark.range(8, numPartitions=1).mapInArrow(fn, SCHEMA).collect()
    return row.out, row.module


def test_workers_without_shipping_cannot_import_scatterkit(spark):
    with pytest.raises(Exception, match="No module named 'scatterkit'"):
        _run(spark, _scatter())


def test_ship_library_makes_scatterkit_importable(spark, wheel):
    from pyspark.sql import functions as F

    from scatterkit.spark import functions as skf
    from scatterkit.spark.sessions.artifacts import ship_library

    assert ship_library(spark, wheel=wheel) == "scatterkit"
    out, module = _run(spark, _scatter())
    assert out == [4.0, 6.0, 8.0, 10.0]  # ids 0..7 summed into id % 4
    assert module.endswith("/scatterkit/__init__.py")
    assert "site-packages" not in module  # the session's unpacked copy
    # scatterkit's own Arrow UDFs, pickled by reference to scatterkit.spark
    rows = spark.range(2).select(
        skf.scatter_elements_update(
            skf.full([4], 0.0, dtype="double"),
            F.array(F.lit(1), F.lit(3)),
            F.array(F.lit(2.0), F.lit(5.0)),
            0,
            dtype="double",
        ).alias("r")
    )
    assert [row.r.values for row in rows.collect()] == [[0.0, 2.0, 0.0, 5.0]] * 2


def test_on_workers_puts_an_archive_directory_on_sys_path(spark, wheel, tmp_path):
    from scatterkit.spark.sessions.artifacts import on_workers

    archive = shutil.copy(wheel, tmp_path / "wheel.zip")  # unpacked as wheel/scatterkit/...
    spark.addArtifacts(f"{archive}#wheel", archive=True)
    with pytest.raises(Exception, match="No module named 'scatterkit'"):
        _run(spark, _scatter())
    out, module = _run(spark, on_workers(_scatter(), path="wheel"))
    assert out == [4.0, 6.0, 8.0, 10.0]
    assert module.endswith("/wheel/scatterkit/__init__.py")


def test_the_job_runs_on_bare_workers_with_ship_library(server, tmp_path, capsys):
    import json

    from spark_helpers import tensor_column, write_parquet

    from scatterkit.spark.cli import main

    rng = np.random.default_rng(3)
    idx = [rng.integers(0, 6, 9) for _ in range(12)]
    upd = [rng.random(9) for _ in range(12)]
    table = pa.table(
        {
            "id": pa.array(range(12)),
            "i": tensor_column(idx, np.int64),
            "u": tensor_column(upd, np.float64),
        }
    )
    source = write_parquet(tmp_path / "in", table, files=2)
    step = {
        "op": "ScatterElementsUpdate-12",
        "attributes": {"axis": 0, "reduction": "sum", "exact": True},
        "inputs": {
            "data": {"fill": 0, "shape": [6], "dtype": "double"},
            "indices": "i",
            "updates": "u",
        },
        "output": "h",
    }
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"row_id": "id", "steps": [step]}))
    summary = tmp_path / "summary.json"
    args = ["run", "--remote", server.url, "--ship-library", "--spec", str(spec), "--quiet"]
    args += ["--input", str(source), "--output", str(tmp_path / "out")]
    assert main([*args, "--summary-json", str(summary)]) == 0, capsys.readouterr().err
    modules = json.loads(summary.read_text())["executor_modules"]
    assert modules and all("site-packages" not in m for m in modules)  # the shipped copy
    got = pa.parquet.read_table(tmp_path / "out").sort_by("id").column("h").to_pylist()
    for r, row in enumerate(got):
        want = sk.scatter_elements_update(
            np.zeros(6), idx[r], upd[r], 0, reduction="sum", exact=True
        )
        assert np.array_equal(np.array(row["values"]), want)
