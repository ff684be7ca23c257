"""A driver killed (SIGKILL) at each step of the commit loses nothing.

Each case runs ``scatterkit-spark run`` in a process of its own on a local master, where
the commit runs in the driver. A test-only pause (`commit.PAUSE_ENV`) holds the commit at
the step the case names; the test kills the process group there, so the kill lands where
the case says whatever the machine's speed. Then: the output path holds the complete old
output (or none, if there was none) or the complete new one, never a mix; and the next
run succeeds and leaves nothing beside the output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from spark_helpers import pa, pq, spark, spark_env, write_parquet  # noqa: F401

from scatterkit.spark.cli import main
from scatterkit.spark.runtime.commit import PAUSE_ENV, clean_leftovers
from scatterkit.spark.runtime.storage import locate

pytestmark = pytest.mark.spark

AGGREGATE = {"aggregate": {"by": ["user"], "aggregates": {
    "s": {"indices": ["h"], "updates": "x", "shape": [4]}}}}  # fmt: skip
STEPS = {
    "steps": [
        {"op": "ScatterElementsUpdate-12",
         "attributes": {"axis": 0, "reduction": "sum"},
         "inputs": {"data": {"fill": 0, "shape": [4], "dtype": "double"},
                    "indices": "h", "updates": "x"},
         "output": "s"}
    ],
}  # fmt: skip


def _events(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = 300
    return pa.table(
        {
            "user": rng.integers(0, 9, n),
            "h": pa.array([rng.integers(0, 4, 3).astype(np.int32) for _ in range(n)]),
            "x": pa.array([rng.standard_normal(3) for _ in range(n)]),
        }
    )


def _flat_events(seed: int) -> pa.Table:
    """The same events, one value per row (what an aggregation reads)."""
    table = _events(seed)
    users = np.repeat(table.column("user").to_numpy(), 3)
    h = np.concatenate(table.column("h").to_pylist()).astype(np.int32)
    x = np.concatenate(table.column("x").to_pylist())
    return pa.table({"user": users, "h": h, "x": x})


def _read(path) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _argv(spec, source, output, engine, overwrite):
    argv = ["run", "--spec", str(spec), "--input", str(source), "--output", str(output)]
    return argv + ["--engine", engine, "--quiet"] + (["--overwrite"] if overwrite else [])


def _killed_at(step: str, argv: list[str], tmp_path) -> None:
    """Runs the CLI in a process group of its own until the commit reaches `step`, then
    kills the group."""
    reached = tmp_path / f"reached-{step}"
    env = {**spark_env(), PAUSE_ENV: f"{step}:{reached}"}
    code = "import sys; from scatterkit.spark.cli import main; sys.exit(main(sys.argv[1:]))"
    log = open(tmp_path / f"driver-{step}.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv, "--master", "local[2]", "--conf",
         "spark.sql.shuffle.partitions=2", "--conf", "spark.ui.enabled=false"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not reached.exists():
            assert proc.poll() is None, (tmp_path / f"driver-{step}.log").read_text()[-6000:]
            assert time.monotonic() < deadline, f"the commit never reached {step!r}"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
        log.close()
    assert proc.returncode == -signal.SIGKILL


CASES = [
    # (engine, job, old output, step): every step of both ways to commit, both engines,
    # with and without an aggregation.
    ("arrow", "aggregate", False, "commit"),
    ("arrow", "aggregate", False, "staged"),
    ("arrow", "aggregate", True, "commit"),
    ("arrow", "aggregate", True, "staged"),
    ("arrow", "aggregate", True, "exchanged"),
    ("arrow", "steps", True, "set-aside"),
    ("spark", "steps", False, "staged"),
    ("spark", "steps", True, "exchanged"),
    ("spark", "aggregate", True, "staged"),
]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):  # noqa: F811
    """Per engine and job kind: the spec, both inputs and the outputs each gives (computed
    once, apart from any crash)."""
    made: dict[tuple[str, str], tuple] = {}

    def get(engine: str, job: str) -> tuple:
        if (engine, job) not in made:
            root = tmp_path_factory.mktemp(f"{engine}-{job}")
            spec = root / "job.json"
            spec.write_text(json.dumps(AGGREGATE if job == "aggregate" else STEPS))
            table = _flat_events if job == "aggregate" else _events
            first = write_parquet(root / "first", table(1))
            second = write_parquet(root / "second", table(2))
            assert main(_argv(spec, first, root / "want-old", engine, False)) == 0
            assert main(_argv(spec, second, root / "want-new", engine, False)) == 0
            made[engine, job] = (spec, second, root / "want-old", root / "want-new")
        return made[engine, job]

    return get


@pytest.mark.jvm
@pytest.mark.parametrize(("engine", "job", "old", "step"), CASES)
def test_a_driver_killed_in_the_commit_leaves_a_whole_output_and_the_next_run_succeeds(
    runs, tmp_path, engine, job, old, step
):
    spec, second, old_dir, new_dir = runs(engine, job)
    want_old, want_new = _read(old_dir), _read(new_dir)
    assert want_old != want_new
    area = tmp_path / "area"
    area.mkdir()
    output = area / "out"
    if old:  # the complete old output, as a job wrote it
        shutil.copytree(old_dir, output)

    _killed_at(step, _argv(spec, second, output, engine, old), tmp_path)

    if step == "set-aside":  # the two renames' gap: no output until the next run
        assert not output.exists()  # beside it: the old output set aside, the new one staged
        assert sorted(p.name.endswith(".old") for p in area.iterdir()) == [False, True]
    elif step == "exchanged":
        assert _read(output) == want_new
    elif old:
        assert _read(output) == want_old
    else:
        assert not output.exists()
    # The next run cleans up what the crash left, or finishes it (the old output put back).
    restored = old or step == "exchanged"
    assert main(_argv(spec, second, output, engine, restored)) == 0
    assert _read(output) == want_new
    assert [p.name for p in area.iterdir()] == ["out"]
    names = {p.name for p in output.iterdir() if not p.name.endswith(".crc")}
    assert "_SUCCESS" in names and all(n.endswith(".parquet") for n in names - {"_SUCCESS"})


def test_clean_puts_back_an_output_set_aside_and_removes_staging_directories(tmp_path):
    output = tmp_path / "out"
    aside = tmp_path / ".out.scatterkit-0123456789ab.old"
    aside.mkdir()
    (aside / "_SUCCESS").write_bytes(b"")
    staging = tmp_path / ".out.scatterkit-ba9876543210"
    (staging / "_attempts").mkdir(parents=True)
    unrelated = tmp_path / ".other.scatterkit-0123456789ab"
    unrelated.mkdir()
    done = clean_leftovers(locate(str(output)))
    assert sorted(p.name for p in tmp_path.iterdir()) == [unrelated.name, "out"]
    assert (output / "_SUCCESS").exists()
    assert len(done) == 2 and any("restored" in line for line in done)
    assert clean_leftovers(locate(str(output))) == []


def test_the_clean_command_says_what_it_did_and_needs_no_spark(tmp_path, capsys):
    (tmp_path / ".out.scatterkit-0123456789ab" / "_attempts").mkdir(parents=True)
    assert main(["clean", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"removed {tmp_path}/.out.scatterkit-0123456789ab" in out
    assert "1 leftover(s) of crashed jobs" in out
    assert list(tmp_path.iterdir()) == []
    assert main(["clean", "hdfs://nn/out"]) == 2
    assert "pyarrow does not read hdfs:// paths here" in capsys.readouterr().err
