"""A real standalone Spark cluster on 127.0.0.1, shared by the tests that need one.

A master and one 2-core worker are started with ``spark-class`` from the pip pyspark
package (free ports, REST server off, web UIs on ephemeral ports, stopped by process group
id whatever happens).

The fixtures are session-scoped: a module that needs the cluster names this module in
``pytest_plugins`` (and imports only helpers, not the fixtures, which would make one
module-local copy, and one cluster, per importing module). Registered as a plugin, the
fixtures are global, so every module of a session shares one cluster.

PYTEST_DONT_REWRITE: the modules import their helpers before pytest registers this module
as a plugin, too late for assertion rewriting (it has no assert statements anyway).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from spark_helpers import free_port, spark_env

STARTUP_TIMEOUT = 180  # seconds for each daemon to come up


@dataclass(frozen=True)
class StandaloneCluster:
    """A running cluster: its master URL, directories and daemon processes."""

    url: str
    root: Path  # logs/, master.log, worker.log
    work_dir: Path  # the worker's directory: <work dir>/<app id>/<executor id>/stderr
    master_pid: int
    worker_pid: int  # the Worker JVM; executor JVMs are its children


def _cluster_env(root: Path) -> dict[str, str]:
    from pyspark.find_spark_home import _find_spark_home

    env = spark_env()
    env.pop("PYTHONPATH", None)  # nothing may leak the driver's packages to the executors
    env.pop("PYSPARK_PYTHON", None)
    env.update(
        SPARK_HOME=_find_spark_home(),
        SPARK_LOG_DIR=str(root / "logs"),
        SPARK_DAEMON_MEMORY="512m",
        SPARK_NO_DAEMONIZE="1",
    )
    return env


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
    raise AssertionError(f"{text!r} not seen in {log} (exit {proc.poll()}):\n{tail}")


def _stop(proc: subprocess.Popen) -> None:
    """Stops a daemon and its children (executors, Python workers) by its process group id."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass


def _start(env: dict[str, str], args: list[str], log: Path) -> subprocess.Popen:
    spark_class = Path(env["SPARK_HOME"]) / "bin" / "spark-class"
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(spark_class), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stopped as a whole
        )


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory) -> Iterator[StandaloneCluster]:
    """A standalone master and one 2-core worker on 127.0.0.1."""
    root = tmp_path_factory.mktemp("cluster")
    (root / "logs").mkdir()
    (root / "work").mkdir()
    props = root / "spark-defaults.conf"
    props.write_text("spark.master.rest.enabled false\nspark.ui.killEnabled false\n")
    env = _cluster_env(root)
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log = root / "master.log"
        procs.append(
            _start(
                env,
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    "0",
                    "--properties-file",
                    str(props),
                ],
                master_log,
            )
        )
        _wait_for(master_log, "I have been elected leader", procs[0], STARTUP_TIMEOUT)
        worker_log = root / "worker.log"
        procs.append(
            _start(
                env,
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--webui-port",
                    "0",
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(root / "work"),
                    "--properties-file",
                    str(props),
                    url,
                ],
                worker_log,
            )
        )
        _wait_for(worker_log, "Successfully registered with master", procs[1], STARTUP_TIMEOUT)
        # spark-class ends in `exec java ...`: the Popen pids are the daemons' JVMs.
        yield StandaloneCluster(url, root, root / "work", procs[0].pid, procs[1].pid)
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.fixture(scope="session")
def cluster(standalone_cluster: StandaloneCluster) -> tuple[str, Path]:
    """The shared cluster as (master URL, the worker's work dir)."""
    return standalone_cluster.url, standalone_cluster.work_dir


# -- the process tree, read from /proc (the retry tests find Python workers with it) --


def process_tree() -> dict[int, list[int]]:
    """Parent pid -> child pids of every process now (from /proc/<pid>/stat)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])  # the name may hold spaces
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def proc_strings(pid: int, name: str) -> list[str]:
    """/proc/<pid>/cmdline or environ split at NULs ([] once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def cpu_ticks(pid: int) -> int | None:
    """User + system CPU time of a live process in clock ticks (None: gone or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[11]) + int(fields[12])
