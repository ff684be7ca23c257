"""A real standalone Spark cluster on 127.0.0.1, shared by the tests that need one, and what
the fault tests on it share: a second worker under another host name, their drivers, the
executors' logs and the test-only pauses of scatterkit.spark.runtime.faults.

A master and one 2-core worker are started with ``spark-class`` from the pip pyspark
package (free ports, REST server off, web UIs on ephemeral ports, stopped by process group
id whatever happens). `extra_worker` adds a worker for a while: registered as ``localhost``
beside the first one's ``127.0.0.1`` (both loopback), it is another host to Spark's
scheduler, which starts a speculative copy of a task only on a host where the task has not
run.

The fixtures are session-scoped: a module that needs the cluster names this module in
``pytest_plugins`` (and imports only helpers, not the fixtures, which would make one
module-local copy, and one cluster, per importing module). Registered as a plugin, the
fixtures are global, so every module of a session shares one cluster.

PYTEST_DONT_REWRITE: the modules import their helpers before pytest registers this module
as a plugin, too late for assertion rewriting (it has no assert statements anyway).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from spark_helpers import free_port, spark_env

from scatterkit.spark.runtime.faults import PAUSE_ENV

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


def _start_worker(
    env: dict[str, str], root: Path, url: str, host: str, cores: int, memory: str, work: Path
) -> subprocess.Popen:
    """A Worker of the master at `url` under `host`, its directory `work`, its log in
    `root` (``worker.log``, ``worker-HOST.log`` beside it), once it has registered."""
    work.mkdir(exist_ok=True)
    log = root / ("worker.log" if host == "127.0.0.1" else f"worker-{host}.log")
    args = ["org.apache.spark.deploy.worker.Worker", "--host", host, "--port", "0"]
    args += ["--webui-port", "0", "--cores", str(cores), "--memory", memory]
    args += ["--work-dir", str(work), "--properties-file", str(root / "spark-defaults.conf")]
    proc = _start(env, [*args, url], log)
    try:
        _wait_for(log, "Successfully registered with master", proc, STARTUP_TIMEOUT)
    except BaseException:
        _stop(proc)
        raise
    return proc


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
        procs.append(_start_worker(env, root, url, "127.0.0.1", 2, "2g", root / "work"))
        # spark-class ends in `exec java ...`: the Popen pids are the daemons' JVMs.
        yield StandaloneCluster(url, root, root / "work", procs[0].pid, procs[1].pid)
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.fixture(scope="session")
def cluster(standalone_cluster: StandaloneCluster) -> tuple[str, Path]:
    """The shared cluster as (master URL, the worker's work dir)."""
    return standalone_cluster.url, standalone_cluster.work_dir


# -- a second worker, the drivers, the executors' logs, the pauses (the fault tests) --


@dataclass(frozen=True)
class Worker:
    """A worker `extra_worker` added: the host name it registered under, its directory."""

    host: str
    pid: int
    work_dir: Path


@contextmanager
def extra_worker(
    cluster: StandaloneCluster, host: str = "localhost", cores: int = 1, memory: str = "1g"
) -> Iterator[Worker]:
    """A second worker of `cluster`, registered under `host`, stopped on the way out."""
    work = cluster.root / f"work-{host}"
    proc = _start_worker(
        _cluster_env(cluster.root), cluster.root, cluster.url, host, cores, memory, work
    )
    try:
        yield Worker(host, proc.pid, work)
    finally:
        _stop(proc)


def app_conf(cores: int, executor_cores: int, memory: str = "900m") -> dict[str, str]:
    """The settings of the fault tests' applications: the driver on 127.0.0.1, at most
    `cores` cores in executors of `executor_cores`, C1-compiled short-lived JVMs, no UI."""
    jvm_options = "-XX:TieredStopAtLevel=1"
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.driver.extraJavaOptions": jvm_options,
        "spark.executor.memory": memory,
        "spark.executor.extraJavaOptions": jvm_options,
        "spark.executor.cores": str(executor_cores),
        "spark.cores.max": str(cores),
        "spark.ui.enabled": "false",
    }


def launch(root: Path, name: str, argv: Sequence[str]) -> subprocess.Popen:
    """Runs ``python ARGV`` (a driver) in `root`, in a process group of its own (to kill it
    with its JVM), its output in ``NAME.out`` and ``NAME.err``, the executors on this Python
    (``PYSPARK_PYTHON``: it has scatterkit)."""
    env = _cluster_env(root)
    env["PYSPARK_PYTHON"] = sys.executable
    with open(root / f"{name}.out", "wb") as out, open(root / f"{name}.err", "wb") as err:
        return subprocess.Popen(
            [sys.executable, *argv], stdout=out, stderr=err, env=env, cwd=root,
            start_new_session=True,
        )  # fmt: skip


def end(proc: subprocess.Popen) -> None:
    """Kills a driver `launch` started, with its JVM, if it still runs."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def executor_logs(app_id: str, *work_dirs: Path) -> dict[str, str]:
    """The executors' logs of an application: work dir name -> their stderr, joined."""
    return {
        work.name: "".join(
            p.read_text(errors="replace") for p in sorted(work.glob(f"{app_id}/*/stderr"))
        )
        for work in work_dirs
    }


def _parent(pid: int) -> int | None:
    """The parent of a process (from /proc/<pid>/stat), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])  # the name may hold spaces


def _cmdline(pid: int) -> list[str]:
    """/proc/<pid>/cmdline split at NULs ([] once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


@dataclass(frozen=True)
class Paused:
    """A task attempt held at a pause point (scatterkit.spark.runtime.faults), and the
    executor that runs it (read from /proc while it is held: its Python worker's parent
    is ``pyspark.daemon``, whose parent is the executor's JVM)."""

    point: str
    stage: int
    partition: int
    attempt: int
    tid: int
    pid: int  # the Python worker's
    app_id: str
    host: str  # the executor's, as the scheduler knows it

    @property
    def task(self) -> str:
        """As Spark's logs name the task: ``TASK.ATTEMPT in stage STAGE.0``."""
        return f"{self.partition}.{self.attempt} in stage {self.stage}.0"


class Pauses:
    """The pauses a test asks of the executors, in a directory of its own."""

    def __init__(self, folder: Path, points: Sequence[str]):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.points = folder, tuple(points)
        self.seen: dict[str, Paused] = {}  # by signal file name

    @property
    def conf(self) -> dict[str, str]:
        """The setting that asks the executors for the pauses."""
        return {f"spark.executorEnv.{PAUSE_ENV}": f"{','.join(self.points)}:{self.folder}"}

    def new(self) -> list[Paused]:
        """The task attempts held since the last call."""
        found = []
        for path in sorted(self.folder.glob("*.paused")):
            if path.name in self.seen:
                continue
            pid, note = path.read_text().split("\n", 1)
            task = json.loads(note)
            args: list[str] = []
            process: int | None = int(pid)
            while process and "--app-id" not in args:  # up to the executor's JVM
                process = _parent(process)
                args = _cmdline(process) if process else []
            found.append(
                Paused(
                    path.stem.rsplit("-", 1)[0],
                    task["stage"],
                    task["partition"],
                    task["attempt"],
                    task["tid"],
                    int(pid),
                    args[args.index("--app-id") + 1] if args else "?",
                    args[args.index("--hostname") + 1] if args else "?",
                )
            )
            self.seen[path.name] = found[-1]
        return found

    def release(self, paused: Paused) -> None:
        (self.folder / f"{paused.point}-{paused.stage}.release").touch()

    def release_all(self) -> None:
        for paused in self.seen.values():
            self.release(paused)

    def passed(self, paused: Paused) -> list[int]:
        """The attempts of the held task that went on past its pause point."""
        prefix = f"{paused.point}-{paused.stage}.passed-{paused.partition}."
        return sorted(int(p.name[len(prefix) :]) for p in self.folder.glob(prefix + "*"))
