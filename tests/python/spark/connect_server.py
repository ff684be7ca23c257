"""A real Spark Connect server for the tests: started with spark-submit, stopped by process group.

(A plain module, like spark_helpers.py.) `start_connect_server` runs
``SparkConnectServer`` on ``local[2]`` at a free port of 127.0.0.1, in its own process group
(the JVM and its Python workers are stopped as a whole), its output in ``root/connect.log``.
Test modules use the module-scoped `connect_server` fixture (one server per module), or
`serve` in a fixture of their own (e.g. for workers running another Python).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from spark_helpers import free_port, spark_env

STARTUP_TIMEOUT = 180.0  # seconds for the server to say it has started
STOP_TIMEOUT = 20.0  # seconds between SIGTERM and SIGKILL
_CONNECT_MARKS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
_STARTED = "Spark Connect server started"
_TAIL_LINES = 200  # of the log, shown when a test of the module failed


def log_tail(log: Path, lines: int = _TAIL_LINES) -> str:
    """The last `lines` lines of `log` ('' if it does not exist)."""
    if not log.exists():
        return ""
    with open(log, errors="replace") as f:
        return "".join(deque(f, maxlen=lines))


@dataclass
class ConnectServer:
    """A running Spark Connect server: its client URL, process, and log file."""

    url: str
    process: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """Stops the server and its children by process group id: SIGTERM, then SIGKILL."""
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.pid, signal.SIGTERM)
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT)
        except ProcessLookupError:
            self.process.wait(timeout=STOP_TIMEOUT)


def start_connect_server(
    root: Path, *, python: str | None = None, extra_conf: dict | None = None
) -> ConnectServer:
    """Starts a Spark Connect server on local[2]; returns once its log says it has started.

    `python` is the Python of its workers (PYSPARK_PYTHON; default: this interpreter).
    The server runs in `root` (its working directory) and logs to ``root/connect.log``.
    Raises AssertionError, with the log's tail, if it exits or is not up within
    STARTUP_TIMEOUT seconds (it is stopped then).
    """
    from pyspark.find_spark_home import _find_spark_home

    root.mkdir(parents=True, exist_ok=True)
    spark_home = _find_spark_home()
    port = free_port()
    env = spark_env()
    env.pop("PYTHONPATH", None)  # the workers see only what PYSPARK_PYTHON and Spark give them
    env.update(SPARK_HOME=spark_home, PYSPARK_PYTHON=python or sys.executable)
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        **(extra_conf or {}),
    }
    cmd = [
        str(Path(spark_home) / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
        "--driver-memory",
        "1g",
        "spark-internal",
    ]
    log = root / "connect.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=root,
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole
        )
    server = ConnectServer(f"sc://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if _STARTED in log.read_text(errors="replace"):
            return server
        if process.poll() is not None:
            break
        time.sleep(0.25)
    code = process.poll()
    server.stop()
    state = f"exited with {code}" if code is not None else f"not up in {STARTUP_TIMEOUT:.0f} s"
    raise AssertionError(f"Spark Connect server {state}; {log}:\n{log_tail(log, 60)}")


def serve(request: pytest.FixtureRequest, root: Path, **kwargs: Any) -> Iterator[ConnectServer]:
    """A fixture's body: yields a server started in `root`, stopped on teardown.

    `kwargs` go to `start_connect_server`. If a test failed meanwhile (in the fixture's
    scope), the last lines of the server's log are printed to stderr on teardown
    (past pytest's capture; the log itself stays in pytest's temporary directory).

    A Spark Connect session marks the whole process as Connect-only (pyspark sets
    ``SPARK_CONNECT_MODE_ENABLED``, and a classic session then cannot start): the marks
    are taken back on teardown, so that the later modules' classic sessions start.
    """
    failed_before = request.session.testsfailed
    marks = {name: os.environ.get(name) for name in _CONNECT_MARKS}
    server = start_connect_server(root, **kwargs)
    try:
        yield server
    finally:
        server.stop()
        for name, value in marks.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if request.session.testsfailed > failed_before:
            _show(request, f"\n--- last {_TAIL_LINES} lines of {server.log} ---\n")
            _show(request, log_tail(server.log))


def _show(request: pytest.FixtureRequest, text: str) -> None:
    """Writes `text` to the real stderr (pytest would keep a passing teardown's output)."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is None:  # -p no:capture
        sys.stderr.write(text)
        return
    with capture.global_and_fixture_disabled():
        sys.stderr.write(text)


@pytest.fixture(scope="module")
def connect_server(request, tmp_path_factory) -> Iterator[ConnectServer]:
    """One Spark Connect server for the module (workers: this interpreter)."""
    yield from serve(request, tmp_path_factory.mktemp("connect"))
