"""Errors that name their cause (#51, item 3): each met for real, as a user meets it.

Each test runs ``scatterkit-spark run`` (`cli.main`) and checks the one line it prints,
its exit code (1: the job failed) and that nothing was committed:

- a truncated or corrupt Parquet input: the file named (both engines, with and without an
  aggregation), whether a task or the driver (splitting the input for more tasks than
  files) meets it;
- input files whose column types disagree: both files and both types named;
- no space left while writing: a real full file system (a 1 MB tmpfs the test mounts; it
  is skipped where mounting is not allowed), the old output intact;
- a Python worker out of memory (``spark.executor.pyspark.memory`` caps it, a step's
  constant needs more) and an executor's JVM out of memory (Spark's vectorized Parquet
  reader in a 192 MB heap), each said so with the setting to raise (a process of their own);
- a Spark Connect server that goes away mid-job: killed, by process group, while the
  commit's test-only pause (`commit.PAUSE_ENV`) holds the job, so the kill lands there
  whatever the machine's speed; the client says so within seconds, and the old output is
  intact;
- a Python worker killed by the system (SIGKILL): said to be memory, most likely.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from connect_server import serve
from spark_helpers import pa, pq, spark, spark_env, write_parquet  # noqa: F401

from scatterkit.spark.cli import main
from scatterkit.spark.jobs.failures import explain, spark_message
from scatterkit.spark.runtime.commit import PAUSE_ENV

pytestmark = [pytest.mark.spark, pytest.mark.jvm]

STEPS = {"steps": [
    {"op": "ScatterElementsUpdate-12",
     "attributes": {"axis": 0, "reduction": "sum"},
     "inputs": {"data": {"fill": 0, "shape": [4], "dtype": "double"},
                "indices": "h", "updates": "x"},
     "output": "s"}
]}  # fmt: skip
AGGREGATE = {"aggregate": {"by": ["user"], "aggregates": {
    "s": {"indices": ["h"], "updates": "x", "shape": [4]}}}}  # fmt: skip
SPECS = {"steps": STEPS, "aggregate": AGGREGATE}
JOBS = [("arrow", "steps"), ("spark", "steps"), ("arrow", "aggregate"), ("spark", "aggregate")]


def _events(job: str, rows: int = 400, width: int = 3, seed: int = 0) -> pa.Table:
    """Events with lists `h`, `x` of `width` values (steps), or one value per row (aggregate)."""
    rng = np.random.default_rng(seed)
    if job == "aggregate":
        return pa.table(
            {
                "user": rng.integers(0, 9, rows),
                "h": rng.integers(0, 4, rows).astype(np.int32),
                "x": rng.standard_normal(rows),
            }
        )
    return pa.table(
        {
            "h": pa.array(list(rng.integers(0, 4, (rows, width)).astype(np.int32))),
            "x": pa.array(list(rng.standard_normal((rows, width)))),
        }
    )


def _spec(tmp_path: Path, job: str | dict) -> Path:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(SPECS[job] if isinstance(job, str) else job))
    return path


def _run(spec: Path, source: Path, output: Path, *more: str) -> list[str]:
    return ["run", "--spec", str(spec), "--input", str(source), "--output", str(output),
            "--quiet", *more]  # fmt: skip


def _failed(capsys) -> str:
    """The one line the command printed to stderr (asserting it is one, and no traceback)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("scatterkit-spark: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    print(lines[0])  # what a user sees, in the test's output (pytest -s, or a failure)
    return lines[0]


# Runs the command once per argv, in one process (one session) of its own.
_RUNS_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from scatterkit.spark.cli import main
    for argv in json.loads(sys.argv[1]):
        print("=== run", file=sys.stderr, flush=True)
        code = main(argv)
        print(f"=== exit {code}", file=sys.stderr, flush=True)
    """
)


def _in_a_process(runs: list[list[str]]) -> tuple[list[tuple[int, str]], str]:
    """(exit code, the command's last line) of each run, in a process of its own (a session
    with settings of its own), and the process's stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _RUNS_SCRIPT, json.dumps(runs)],
        capture_output=True,
        text=True,
        timeout=300,
        env=spark_env(),
        check=False,
    )
    found = []
    for part in done.stderr.split("=== run")[1:]:
        lines = [line for line in part.splitlines() if line.startswith("scatterkit-spark: ")]
        code = part.rsplit("=== exit ", 1)[-1].split()[0] if "=== exit " in part else None
        found.append((int(code) if code else done.returncode, lines[-1] if lines else part))
    return found, done.stderr


def _tree(path: Path) -> dict[str, bytes]:
    """Every file under `path`, by relative name, with its bytes."""
    return {str(f.relative_to(path)): f.read_bytes() for f in path.rglob("*") if f.is_file()}


@pytest.mark.parametrize(("engine", "job"), JOBS)
@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_truncated_or_corrupt_input_file_is_named(spark, tmp_path, capsys, engine, job, damage):  # noqa: F811
    source = write_parquet(tmp_path / "in", _events(job))
    bad = source / "part-1.parquet"  # Spark takes the job's schema from part-0
    data = bad.read_bytes()
    if damage == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    else:  # its pages' headers garbled, its footer intact
        middle = bytes(b ^ 0xFF for b in data[4 : len(data) // 2])
        bad.write_bytes(data[:4] + middle + data[len(data) // 2 :])
    argv = _run(_spec(tmp_path, job), source, tmp_path / "out", "--engine", engine)

    assert main(argv) == 1
    line = _failed(capsys)
    assert line.startswith("scatterkit-spark: job failed: input file '")
    assert str(bad) in line and "is truncated, corrupt or not Parquet (" in line
    assert not (tmp_path / "out").exists()


def test_a_truncated_footer_met_as_the_driver_splits_the_input_is_named(tmp_path):
    # Fewer files than tasks (two files, local[3]): the Arrow engine's driver reads their
    # footers to split them at row groups, and meets the bad one before any task runs. A
    # session of its own, for its three cores; both jobs (steps, aggregation) in it.
    runs, bad = [], []
    for job in ("steps", "aggregate"):
        source = write_parquet(tmp_path / job / "in", _events(job))
        bad.append(source / "part-1.parquet")  # Spark takes the job's schema from part-0
        bad[-1].write_bytes(bad[-1].read_bytes()[:-100])  # the footer cut short
        conf = ["--master", "local[3]", "--conf", "spark.ui.enabled=false"]
        spec = _spec(tmp_path / job, job)
        runs.append(_run(spec, source, tmp_path / job / "out", "--engine", "arrow", *conf))

    found, stderr = _in_a_process(runs)
    assert len(found) == 2 and "Traceback" not in stderr, stderr[-6000:]
    for (code, line), path in zip(found, bad):
        print(line)
        assert code == 1, line
        assert line.startswith(f"scatterkit-spark: job failed: input file {str(path)!r} ")
        assert "is truncated, corrupt or not Parquet (" in line
    assert not (tmp_path / "steps" / "out").exists()
    assert not (tmp_path / "aggregate" / "out").exists()


@pytest.mark.parametrize(("engine", "job"), JOBS)
def test_input_files_whose_column_types_disagree_are_both_named(
    spark,  # noqa: F811
    tmp_path,
    capsys,
    engine,
    job,
):
    # Spark takes the schema (x as float) from part-0; part-1's doubles would lose digits
    table = _events(job)
    float_x = pa.list_(pa.float32()) if job == "steps" else pa.float32()
    floats = table.set_column(1 + (job == "aggregate"), "x", table.column("x").cast(float_x))
    source = tmp_path / "in"
    write_parquet(source, floats, files=1)
    (source / "part-0.parquet").rename(source / "a.parquet")
    write_parquet(source, table, files=1)
    (source / "part-0.parquet").rename(source / "b.parquet")

    assert main(_run(_spec(tmp_path, job), source, tmp_path / "out", "--engine", engine)) == 1
    line = _failed(capsys)
    double, single = "double", "float"
    if job == "steps":
        double, single = f"list<element: {double}>", f"list<element: {single}>"
    assert (
        f"job failed: file 'b.parquet' holds column 'x' as {double} but file 'a.parquet' as "
        f"{single}: the job reads every file with one schema; write every file with one type"
    ) in line
    assert not (tmp_path / "out").exists()


def test_files_that_spark_cannot_merge_are_both_named(spark, tmp_path, capsys):  # noqa: F811
    table = _events("steps")
    strings = table.set_column(1, "x", pa.array([str(v) for v in table.column("x").to_pylist()]))
    source = tmp_path / "in"
    write_parquet(source, table, files=1)
    (source / "part-0.parquet").rename(source / "a.parquet")
    write_parquet(source, strings, files=1)
    (source / "part-0.parquet").rename(source / "b.parquet")
    spark.conf.set("spark.sql.parquet.mergeSchema", "true")  # merged as the job starts
    try:
        assert main(_run(_spec(tmp_path, "steps"), source, tmp_path / "out")) == 1
    finally:
        spark.conf.unset("spark.sql.parquet.mergeSchema")
    line = _failed(capsys)
    assert line.startswith(
        "scatterkit-spark: Spark failed: file 'a.parquet' holds column 'x' as "
        "list<element: double> but file 'b.parquet' as string: "
    )
    assert line.endswith("[CANNOT_MERGE_SCHEMAS]")


@pytest.fixture
def small_disk(tmp_path):
    """A directory on a file system of 1 MB of its own (a tmpfs; root only)."""
    place = tmp_path / "small"
    place.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(place)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield place
    finally:  # lazily: Spark's JVM may still hold a file of the failed write open
        subprocess.run(["umount", "-l", str(place)], check=False)


@pytest.mark.parametrize("engine", ["arrow", "spark"])
def test_no_space_left_while_writing_leaves_the_old_output_and_says_so(
    spark,  # noqa: F811
    tmp_path,
    small_disk,
    capsys,
    engine,
):
    spec = _spec(tmp_path, "steps")
    old = write_parquet(tmp_path / "old-in", _events("steps", rows=20))
    big = write_parquet(tmp_path / "big-in", _events("steps", rows=1000, width=200))  # ~2 MB
    output = small_disk / "out"
    assert main(_run(spec, old, output, "--engine", engine)) == 0
    capsys.readouterr()
    before = _tree(output)

    assert main(_run(spec, big, output, "--engine", engine, "--overwrite")) == 1
    line = _failed(capsys)
    assert line.startswith("scatterkit-spark: job failed: no space left on device while the job")
    assert line.endswith(
        ": nothing was committed, an old output is intact; free space where the output is "
        "written (or in Spark's scratch directories, spark.local.dir, where the shuffle goes)"
    )
    assert _tree(output) == before
    assert [p.name for p in small_disk.iterdir()] == ["out"]  # the staging directory went


# One process of its own: a session whose JVM has a 192 MB heap (spark.testing.memory lets
# Spark start in it) and whose Python workers may address 1 GB. First a job whose step
# needs a constant of 10 rows x 1e8 doubles (8 GB) in a Python worker, then one whose rows
# of 2M doubles Spark's vectorized reader gathers 4096 rows at a time into that heap: the JVM
# runs out of memory (on a local master Spark then stops it: exit code 52).


@pytest.fixture(scope="module")
def out_of_memory(tmp_path_factory) -> list[tuple[int, str]]:
    """(exit code, the command's line) of the Python worker's job, then the JVM's."""
    root = tmp_path_factory.mktemp("memory")
    steps = json.loads(json.dumps(STEPS))
    steps["steps"][0]["inputs"]["data"]["shape"] = [100_000_000]
    python_spec = _spec(root, steps).rename(root / "python.json")
    jvm_spec = _spec(root, "steps")
    small = write_parquet(root / "small", _events("steps", rows=10), files=1)
    big = root / "big"
    big.mkdir()
    rows, width = 8, 2_000_000
    offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * width)
    zeros = {"h": np.zeros(rows * width, np.int32), "x": np.zeros(rows * width)}
    columns = {k: pa.ListArray.from_arrays(offsets, pa.array(v)) for k, v in zeros.items()}
    pq.write_table(pa.table(columns), big / "part-0.parquet", compression="zstd")
    conf = [
        "--master", "local[1]",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.memory=192m",
        "--conf", f"spark.testing.memory={1 << 30}",
        "--conf", "spark.executor.pyspark.memory=1g",
    ]  # fmt: skip
    runs = [
        _run(python_spec, small, root / "out-python", "--engine", "arrow", *conf),
        _run(jvm_spec, big, root / "out-jvm", "--engine", "spark", *conf),
    ]
    found, stderr = _in_a_process(runs)
    assert len(found) == 2, stderr[-6000:]
    assert not (root / "out-python").exists() and not (root / "out-jvm").exists()
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="Spark caps Python workers on Linux only")
def test_a_python_worker_out_of_memory_says_so_and_what_to_raise(out_of_memory):
    code, line = out_of_memory[0]
    print(line)
    assert code == 1
    assert line.startswith("scatterkit-spark: job failed: a Python worker ran out of memory (")
    assert "Unable to allocate 7.45 GiB" in line
    assert line.endswith(
        "): raise spark.executor.pyspark.memory (the Python workers' limit, where it is "
        "set; else spark.executor.memoryOverhead holds them), or send fewer rows per batch: "
        "spark.sql.execution.arrow.maxRecordsPerBatch (4096 by default) or "
        "spark.sql.execution.arrow.maxBytesPerBatch"
    )


def test_an_executor_jvm_out_of_memory_says_so_and_what_to_raise(out_of_memory):
    code, line = out_of_memory[1]
    print(line)
    assert code == 1
    # Spark stops a local master's JVM for it (exit code 52), unless the failure reached
    # the driver first: either way the line says memory, and which settings.
    assert line.startswith(
        (
            "scatterkit-spark: job failed: an executor ran out of memory "
            "(java.lang.OutOfMemoryError: Java heap space) while reading 'file:",
            "scatterkit-spark: job failed: Spark's JVM ran out of memory and exited "
            "(exit code 52): raise spark.driver.memory",
        )
    ), line
    assert "spark.driver.memory" in line
    assert "spark.sql.parquet.columnarReaderBatchSize (4096 by default)" in line


@pytest.fixture
def pausing_server(request, tmp_path, monkeypatch):
    """A Spark Connect server whose commits hold at their start (`commit.PAUSE_ENV`, in the
    server's environment): the test kills it there. Yields (server, the pause's signal file)."""
    reached = tmp_path / "reached-commit"
    monkeypatch.setenv(PAUSE_ENV, f"commit:{reached}")
    servers = serve(request, tmp_path / "server")
    server = next(servers)
    monkeypatch.delenv(PAUSE_ENV)  # the server has it; this process's own work does not
    try:
        yield server, reached
    finally:
        with contextlib.suppress(StopIteration):
            next(servers)


@pytest.mark.filterwarnings("ignore:.*RETRIES_EXCEEDED:UserWarning")
def test_a_connect_server_lost_mid_job_is_said_and_nothing_is_committed(
    pausing_server, tmp_path, capsys
):
    server, reached = pausing_server
    source = write_parquet(tmp_path / "in", _events("steps"))
    output = tmp_path / "out"  # an old output, to be replaced
    write_parquet(output, _events("steps", rows=5, seed=1), files=1)
    (output / "_SUCCESS").touch()
    before = _tree(output)

    def kill_at_the_commit() -> None:
        deadline = time.monotonic() + 300
        while not reached.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(server.pid, signal.SIGKILL)
        killed.append(time.monotonic())

    killed: list[float] = []
    killer = threading.Thread(target=kill_at_the_commit, daemon=True)
    killer.start()
    argv = _run(_spec(tmp_path, "steps"), source, output, "--remote", server.url, "--overwrite")
    assert main(argv) == 1
    said = time.monotonic()
    killer.join(timeout=60)
    assert reached.exists(), "the job never reached its commit"
    # Said promptly: the session's retry policy gives up on a lost server after about 10 s;
    # pyspark's own would retry for 10 minutes or more (the bound is loose: a loaded machine)
    line = _failed(capsys)
    print(f"said {said - killed[0]:.1f} s after the kill")
    assert said - killed[0] < 120, f"said {said - killed[0]:.0f} s after the kill"
    assert line.startswith("scatterkit-spark: job failed: the Spark Connect server went away (")
    assert line.endswith(
        "): it stopped, crashed or cannot be reached, and the job did not finish (the server's "
        "log says why); the commit is all or nothing: the output is as it was, unless the "
        "server went away after committing the new one whole"
    )
    assert _tree(output) == before


def test_a_python_worker_killed_by_the_system_is_said_to_be_memory_most_likely(spark):  # noqa: F811
    def killed(batches):
        for batch in batches:
            os.kill(os.getpid(), signal.SIGKILL)
            yield batch

    with pytest.raises(Exception) as info:
        spark.range(1, numPartitions=1).mapInArrow(killed, "id long").collect()
    cause = explain(info.value, spark)
    assert cause is not None and cause.kind == "python_memory"
    assert cause.message.startswith(
        "a Python worker died without a Python error (Python worker exited unexpectedly): "
        "most often the system killed it for its memory; give the Python workers more "
    )


def test_a_file_the_file_system_refuses_is_told_apart_from_a_corrupt_one():
    from scatterkit.spark.runtime.reading import unreadable

    refused = unreadable("/data/a.parquet", PermissionError(13, "Permission denied"))
    assert str(refused) == (
        "input file '/data/a.parquet' cannot be read ([Errno 13] Permission denied)"
    )
    corrupt = unreadable("/data/a.parquet", OSError("Couldn't deserialize thrift:\n bad"))
    assert str(corrupt) == (
        "input file '/data/a.parquet' is truncated, corrupt or not Parquet "
        "(Couldn't deserialize thrift: bad)"
    )
    with pytest.raises(MemoryError):  # no fault of the file's
        unreadable("/data/a.parquet", MemoryError("malloc failed"))


def test_a_container_killed_for_its_memory_says_which_setting_to_raise():
    reason = (
        "ExecutorLostFailure (executor 3 exited caused by one of the running tasks) Reason: "
        "Container killed by YARN for exceeding physical memory limits. 4.5 GB of 4.4 GB used."
    )
    cause = explain(RuntimeError(reason))
    assert cause is not None and cause.kind == "memory"
    assert cause.message.startswith(
        "the cluster killed an executor for using more memory than its container holds "
        "(exceeding physical memory limits): raise spark.executor.memoryOverhead"
    )


def test_an_unforeseen_python_worker_error_is_said_as_its_traceback_ends():
    # Spark's first line says only that a traceback follows; the error ends it (the text of
    # a real one, a bug met on the way: Spark's message up to its JVM stack)
    said = (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most "
        "recent call last):\n"
        '  File "/site-packages/scatterkit/spark/runtime/reading.py", line 297, in f\n'
        "    at = batch.schema.get_field_index(field.name)\n"  # a line of code, not a frame
        '  File "/site-packages/scatterkit/spark/runtime/reading.py", line 301, in f\n'
        "    for field in others or ():\n"
        "TypeError: 'function' object is not iterable\n"
        " SQLSTATE: 38000\n"
        "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException"
        "(PythonRunner.scala:1097)"
    )
    assert spark_message(RuntimeError(said)) == (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
        "TypeError: 'function' object is not iterable"
    )
    unstated = said.replace(" SQLSTATE: 38000\n", "")  # the JVM's stack ends it then
    assert spark_message(RuntimeError(unstated)) == spark_message(RuntimeError(said))
    plain = "[FAILED_READ_FILE.NO_HINT] Encountered error while reading file x.\nmore"
    assert spark_message(RuntimeError(plain)) == plain.splitlines()[0]
