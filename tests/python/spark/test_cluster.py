"""A real standalone cluster on 127.0.0.1: the job runs with scatterkit shipped as an archive.

A master and a worker are started with ``spark-class`` from the pip pyspark package (see
standalone_cluster.py), the executor environment is packed with ``scatterkit-spark pack``,
and the job is submitted through the CLI with ``--archive``. The executors must import
scatterkit from the unpacked archive, not from the driver's site-packages, and the output
must be right.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from spark_helpers import pa, pq, tensor_column, write_parquet
from standalone_cluster import _cluster_env

import scatterkit as sk

# The `cluster` fixture: one standalone cluster for the whole session, shared with the
# other modules that name this plugin.
pytest_plugins = ["standalone_cluster"]
JOB_TIMEOUT = 480
SPEC = {
    "row_id": "id",
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 1, "reduction": "mean", "use_init_val": False},
            "inputs": {"data": "grid", "indices": "idx", "updates": "upd"},
            "output": "means",
        },
        {
            "op": "SliceScatter-15",
            "attributes": {"start": -1, "stop": -100, "step": -3, "axis": 1},
            "inputs": {"data": "means", "updates": "win"},
            "output": "final",
        },
    ],
}


@pytest.fixture(scope="module")
def packed_env(tmp_path_factory) -> Path:
    """The executor environment archive, built by ``scatterkit-spark pack``."""
    out = tmp_path_factory.mktemp("pack") / "scatterkit-env.tar.gz"
    done = subprocess.run(
        [sys.executable, "-m", "scatterkit.spark", "pack", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _dataset(rows: int) -> tuple[dict, pa.Table]:
    rng = np.random.default_rng(11)
    cols = {
        "grid": [rng.random((3, 50)) for _ in range(rows)],
        "idx": [rng.integers(-50, 50, (3, 40)).astype(np.int32) for _ in range(rows)],
        "upd": [rng.random((3, 40)) for _ in range(rows)],
        "win": [rng.random((3, 17)) for _ in range(rows)],
    }
    table = pa.table(
        {"id": pa.array(np.arange(rows), pa.int64())}
        | {name: tensor_column(values, values[0].dtype) for name, values in cols.items()}
    )
    return cols, table


def test_job_on_a_standalone_cluster_uses_the_shipped_environment(cluster, packed_env, tmp_path):
    url, work_dir = cluster
    cols, table = _dataset(300)
    source = write_parquet(tmp_path / "in", table, files=4)
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps(SPEC))
    summary_path = tmp_path / "summary.json"
    env = _cluster_env(tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "scatterkit.spark",
        "run",
        "--spec",
        str(spec),
        "--input",
        str(source),
        "--output",
        str(tmp_path / "out"),
        "--master",
        url,
        "--archive",
        str(packed_env),
        "--summary-json",
        str(summary_path),
        "--conf",
        "spark.driver.host=127.0.0.1",
        "--conf",
        "spark.driver.bindAddress=127.0.0.1",
        "--conf",
        "spark.driver.memory=1g",
        "--conf",
        "spark.executor.memory=1g",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.cores.max=2",
    ]
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT, env=env, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr[-8000:]
    summary = json.loads(summary_path.read_text())

    driver_site = str(Path(sk.__file__).resolve().parent.parent)
    modules = summary["executor_modules"]
    assert modules, summary
    for module in modules:  # <work dir>/app-*/<executor>/environment/lib/.../scatterkit
        assert module.startswith(str(work_dir)) and "/environment/" in module, module
        assert not module.startswith(driver_site), module
    assert summary["rows_in"] == summary["rows_out"] == 300

    out = pq.read_table(tmp_path / "out").sort_by("id").column("final").to_pylist()
    for r, item in enumerate(out):
        means = sk.scatter_elements_update(
            cols["grid"][r],
            cols["idx"][r],
            cols["upd"][r],
            1,
            reduction="mean",
            use_init_val=False,
        )
        want = sk.slice_scatter(means, cols["win"][r], -1, -100, -3, 1)
        got = np.array(item["values"]).reshape(item["shape"])
        assert np.array_equal(got, want), r
