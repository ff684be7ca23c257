"""Shared helpers of the Spark tests: Arrow tensor columns, Parquet files, a local session.

(Not a conftest.py: a second conftest module would shadow ``from conftest import ...`` in the
other test folders.) Test modules import the fixtures they use from here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")

REPO = Path(__file__).resolve().parents[3]

# The tests' JVMs (sessions, Connect servers, a standalone master and worker) run many short
# jobs on two cores: the C1 compiler alone and the serial collector leave the cores to the
# work. A user's own setting of either variable wins.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ.setdefault("SPARK_SUBMIT_OPTS", JVM_OPTIONS)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", JVM_OPTIONS)


def list_array(rows: Sequence[np.ndarray | None], dtype: object) -> pa.Array:
    """A list<T> column: one flattened array per row (None: a null row)."""
    present = [np.asarray(r, dtype).ravel() for r in rows if r is not None]
    values = np.concatenate(present) if present else np.empty(0, dtype)
    sizes = [0 if r is None else np.asarray(r).size for r in rows]
    offsets = np.zeros(len(rows) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    mask = pa.array([r is None for r in rows])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values), mask=mask)


def tensor_column(
    rows: Sequence[np.ndarray | None],
    dtype: object,
    shapes: Sequence[Sequence[int]] | None = None,
) -> pa.StructArray:
    """A tensor struct column <values, shape>; `shapes` may override the true shapes."""
    if shapes is None:
        shapes = [() if r is None else np.shape(r) for r in rows]
    shape_list = list_array([np.asarray(s, np.int32) for s in shapes], np.int32)
    mask = pa.array([r is None for r in rows])
    return pa.StructArray.from_arrays(
        [list_array(rows, dtype), shape_list], names=["values", "shape"], mask=mask
    )


def tensor_rows(column: pa.Array) -> list[np.ndarray | None]:
    """A tensor struct column back to arrays (None for a null row or null values)."""
    dtype = np.dtype(column.type.field("values").type.value_type.to_pandas_dtype())
    out = []
    for item in column.to_pylist():
        if item is None or item["values"] is None:
            out.append(None)
        else:
            out.append(np.array(item["values"], dtype).reshape(item["shape"]))
    return out


def write_parquet(path: Path, table: pa.Table, files: int = 2) -> Path:
    """Writes `table` as `files` Parquet files under directory `path`."""
    path.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    for number, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        pq.write_table(table.slice(lo, hi - lo), path / f"part-{number}.parquet")
    return path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_env() -> dict[str, str]:
    """Environment for Spark processes started by the tests: loopback only, quiet."""
    env = dict(os.environ)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return env


def run_python(code: str, timeout: float, env: dict[str, str] | None = None) -> str:
    """Runs `code` in a fresh interpreter (its own SparkContext); returns its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or spark_env(),
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-6000:]}"
    return done.stdout


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the in-process tests (2 cores, small memory, no UI)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from scatterkit.spark.sessions.session import build_session

    session = build_session(
        master="local[2]",
        conf={
            "spark.driver.memory": "1g",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.host": "127.0.0.1",
        },
        app_name="scatterkit-tests",
    )
    yield session
    # Left running for the other modules of the session; stopped with the interpreter.
