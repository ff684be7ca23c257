"""The demo end to end on local Spark, progress lines, the summary, and the pack command."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from types import SimpleNamespace

import numpy as np
import pyarrow.compute as pc
import pytest
from spark_helpers import list_array, pa, pq, spark, spark_env, write_parquet  # noqa: F401

from scatterkit.spark.demo import check_events, check_sample, run_demo
from scatterkit.spark.demo_data import generate
from scatterkit.spark.jobs.progress import Display, Progress, StageCounts
from scatterkit.spark.jobs.summary import JobSummary
from scatterkit.spark.runtime.stats import TaskStats
from scatterkit.spark.sessions.pack import _run, pack, wheel_from_installed
from scatterkit.spark.sessions.session import _quiet_start


@pytest.fixture(scope="module")
def demo(spark, tmp_path_factory):  # noqa: F811
    """One demo run of 1,000 users (one broken user of each kind), its work directory kept."""
    workdir = tmp_path_factory.mktemp("demo")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = run_demo(1000, master="local[2]", workdir=str(workdir), sample=40)
    data = generate(str(workdir / "input"), 1000)  # the same events again: what the job read
    return SimpleNamespace(code=code, out=printed.getvalue(), output=workdir / "output", data=data)


def test_demo_checks_a_sample_and_prints_a_summary(demo):
    out = demo.out
    assert demo.code == 0, out
    assert f"(4 Parquet file(s), {demo.data.events:,} events, 3 broken on purpose)" in out
    assert f"rows      {demo.data.events:,} events in, 1,000 groups out" in out
    assert re.search(r"events    spend_mean: [\d,]+ folded, 0 dropped, 1 group\(s\) kept in", out)
    assert re.search(r"events    tile: [\d,]+ folded, 1 dropped, 0 group\(s\) kept in", out)
    assert "errors    1 row(s) kept with errors (per step: series_updated: 1)" in out
    assert "rows/s" in out and "MB/s" in out
    assert "match scatterkit's single-call NumPy API bit for bit" in out
    assert f"each aggregate accounts for all {demo.data.events:,} events" in out


def test_the_check_catches_a_wrong_bit_a_lost_error_and_a_wrong_count(demo, tmp_path):
    data, output = demo.data, pq.read_table(demo.output)
    assert check_sample(data, str(demo.output), 0) == (3, [])  # sample 0: the broken users
    cell, category, tomorrow = data.bad_cell[0], data.bad_category[0], data.tomorrow[0]
    broken = pc.is_in(output["user_id"], pa.array([cell, category, tomorrow]))
    rows = output.filter(broken).to_pylist()
    for row in rows:
        if row["user_id"] == cell:
            values = row["spend_mean"]["values"]
            values[5] = float(np.nextafter(np.float32(values[5]), np.float32(np.inf)))
            row["tile"]["dropped"] = 0
        elif row["user_id"] == category:
            row["spend_sum"].update(values=[0.0] * 96, shape=[4, 24], error=None)
        else:
            row["series_updated"]["error"] = None
    wrong = pa.concat_tables(
        [output.filter(pc.invert(broken)), pa.Table.from_pylist(rows, schema=output.schema)]
    )
    pq.write_table(wrong, tmp_path / "wrong.parquet")
    checked, problems = check_sample(data, str(tmp_path / "wrong.parquet"), 0)
    assert checked == 3 and len(problems) == 4, problems
    assert f"user {cell} spend_mean: values differ from the NumPy API" in problems
    assert any(p.startswith(f"user {cell} tile: ") and "0 dropped" in p for p in problems)
    assert f"user {category} spend_sum: a bad event, but no error naming it" in problems
    assert f"user {tomorrow} series_updated: a null input, but no error" in problems


def test_the_check_catches_a_summary_that_loses_events(demo):
    printed = re.findall(
        r"events    (\w+): ([\d,]+) folded, ([\d,]+) dropped, ([\d,]+) group", demo.out
    )
    keys = ("events", "dropped", "error_groups")
    counts = {name: {k: int(n.replace(",", "")) for k, n in zip(keys, ns)} for name, *ns in printed}
    summary = JobSummary(demo.data.events, 1000, 1.0, aggregated=counts)
    assert len(counts) == 6 and check_events(demo.data, summary) == []
    counts["tile"]["dropped"] = 0  # the dropped reading lost
    counts["latest"]["events"] += 1  # an event folded twice
    problems = check_events(demo.data, summary)
    assert [p.split(":")[0] for p in problems] == ["events of latest", "events of tile"]


@pytest.mark.jvm  # Spark in a process of its own
def test_cli_keeps_sparks_start_up_lines_out_of_the_console(tmp_path):
    # Spark's default profile logs at WARN (and announces itself) until its context exists.
    # The smallest job shows it: every command starts Spark the same way.
    spec = {
        "steps": [
            {
                "op": "ScatterElementsUpdate-12",
                "attributes": {"axis": 0, "reduction": "sum"},
                "inputs": {
                    "data": {"fill": 0, "shape": [4], "dtype": "float"},
                    "indices": "i",
                    "updates": "x",
                },
                "output": "hist",
            }
        ]
    }
    (tmp_path / "job.json").write_text(json.dumps(spec))
    table = pa.table(
        {
            "i": list_array([np.array([0, 3, 3], np.int32)], np.int32),
            "x": list_array([np.ones(3, np.float32)], np.float32),
        }
    )
    source = write_parquet(tmp_path / "in", table, files=1)
    command = [sys.executable, "-m", "scatterkit.spark", "run", "--master", "local[1]"]
    args = ["--spec", tmp_path / "job.json", "--input", source, "--output", tmp_path / "out"]
    done = subprocess.run(
        [*command, "--engine", "spark", *map(str, args)],
        capture_output=True,
        text=True,
        env=spark_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert pq.read_table(tmp_path / "out")["hist"][0]["values"].as_py() == [1, 0, 0, 2]
    for noise in ("log4j profile", "Setting default log level", " WARN ", " INFO "):
        assert noise not in done.stderr, done.stderr


def test_quiet_start_yields_to_a_log4j_configuration_of_the_user(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    key = "spark.driver.extraJavaOptions"
    ours = _quiet_start({}, "FATAL")[key]
    assert ours.startswith("-Dlog4j2.configurationFile=file:") and ours.endswith(
        " -Dscatterkit.log.level=FATAL"
    )
    uri = urllib.parse.urlparse(ours.split()[0].split("=", 1)[1])
    assert uri.scheme == "file" and os.path.isfile(urllib.request.url2pathname(uri.path))
    assert _quiet_start({key: "-Xss4m"}, "ERROR")[key].startswith("-Xss4m -Dlog4j2.")
    assert _quiet_start({key: "-Dlog4j2.configurationFile=mine.properties"}, "ERROR") == {}
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert _quiet_start({}, "ERROR") == {}


def test_generate_writes_events_in_time_order_and_replaces_old_files(tmp_path):
    generate(str(tmp_path), 8)
    data = generate(str(tmp_path), 2, files=3)  # three files: the fourth of the first run goes
    assert len(list(tmp_path.iterdir())) == 3
    table = pq.read_table(tmp_path)
    assert table.num_rows == data.events and set(table["user_id"].to_pylist()) == {0, 1}
    assert np.all(np.diff(table["ts"].to_numpy()) >= 0)


@pytest.mark.parametrize(
    ("rows", "sample", "message"),
    [(0, 10, "rows must be at least 1, got 0"), (10, -1, "sample must be at least 0, got -1")],
)
def test_demo_rejects_bad_sizes_before_starting(rows, sample, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        run_demo(rows, workdir=str(tmp_path), sample=sample)
    assert not any(tmp_path.iterdir())


def test_summary_shows_kept_errors_only_when_errors_are_kept():
    fail = JobSummary(rows_in=5, rows_out=5, seconds=1.0)
    assert not any(line.startswith("errors") for line in fail.lines())
    keep = JobSummary(rows_in=5, rows_out=5, seconds=1.0, errors={"a": 0, "b": 2}, error_rows=2)
    assert "errors    2 row(s) kept with errors (per step: b: 2)" in keep.lines()
    clean = JobSummary(rows_in=5, rows_out=5, seconds=1.0, errors={"a": 0})
    assert "errors    0 row(s) kept with errors (per step: none)" in clean.lines()


def test_summary_flags_lost_rows_and_survives_a_zero_duration():
    summary = JobSummary(rows_in=5, rows_out=4, seconds=0.0)
    assert summary.rows_per_second == 0.0 and summary.tensor_mb_per_second == 0.0
    assert summary.lines()[0] == "rows      5 in, 4 out  << ROW COUNT MISMATCH"
    assert not summary.complete
    # An aggregation writes a row per group: fewer rows out is what it is for.
    folded = {"s": {"events": 5, "dropped": 0, "error_groups": 0}}
    grouped = JobSummary(rows_in=5, rows_out=2, seconds=1.0, aggregated=folded, fold_seconds=0.5)
    assert grouped.complete
    assert grouped.lines()[:2] == [
        "rows      5 events in, 2 groups out",
        "folds     0.50 s of task time in scatterkit's aggregation folds",
    ]


def test_stats_add_numbers_up_and_unite_sets():
    # Two tasks with scatterkit from different places: the summary must name both.
    total = TaskStats()
    first = {"batches": 3, "bytes_in": 0, "bytes_out": 1, "python_us": 0, "fold_us": 7}
    second = {"batches": 4, "bytes_in": 2, "bytes_out": 0, "python_us": 5, "fold_us": 1}
    total.add(TaskStats(first, {"/a"}, {1}))
    total.add(TaskStats(second, {"/b"}, {1}))
    want = {"batches": 7, "bytes_in": 2, "bytes_out": 1, "python_us": 5, "fold_us": 8}
    assert total.counts == want
    assert total.modules == {"/a", "/b"} and total.threads == {1}


def test_session_conf_wins_over_the_defaults(spark):  # noqa: F811
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # the fixture's conf
    assert spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch") == "4096"


def test_progress_says_a_stage_finished_when_it_is_no_longer_running():
    out = io.StringIO()
    display = Display(out, "t")
    display.show([StageCounts(3, tasks=4, completed=1, running=2)])
    display.show([StageCounts(3, tasks=4, completed=1, running=2)])  # unchanged: not again
    display.show([StageCounts(5, tasks=2, completed=0, failed=1)])
    display.show([])
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == [
        "stage 3: 1/4 tasks done, 2 running",
        "stage 3: finished; stage 5: 0/2 tasks done, 1 failed",
        "stage 5: finished",
    ]


def test_progress_shows_what_spark_connects_handler_reports():
    # The handler's arguments as Spark Connect passes them: (stages, inflight tasks, ...).
    out = io.StringIO()
    progress = Progress(SimpleNamespace(), out=out, label="t")
    stage = SimpleNamespace(stage_id=7, num_tasks=4, num_completed_tasks=1, done=False)
    progress._on_connect_progress([stage], 3, "operation", False)
    finished = SimpleNamespace(stage_id=7, num_tasks=4, num_completed_tasks=4, done=True)
    progress._on_connect_progress([finished], 0, "operation", True)
    lines = [line.split("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == ["stage 7: 1/4 tasks done, 3 running", "stage 7: finished"]


def test_progress_reports_running_stages(spark, capsys):  # noqa: F811
    def slow(batches):
        for batch in batches:
            time.sleep(1.5)
            yield batch

    with Progress(spark, interval=0.2, label="test"):
        spark.range(2).repartition(2).mapInArrow(slow, "id long").collect()
    out = capsys.readouterr().out
    assert "[test " in out and "tasks done" in out


def test_wheel_from_installed_holds_the_extension_and_a_valid_record(tmp_path):
    wheel = wheel_from_installed(tmp_path)
    assert wheel.name.startswith("scatterkit-") and wheel.suffix == ".whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert any(n.startswith("scatterkit/_core") for n in names)
        assert "scatterkit/spark/jobs/run.py" in names
        assert not any("__pycache__" in n for n in names)
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        for line in z.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if path == record:
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={want}" and int(size) == len(data), path


def test_pack_checks_the_wheel_and_source_exist_up_front(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"wheel '.*nope\.whl' not found"):
        pack(tmp_path / "env.tar.gz", wheel=tmp_path / "nope.whl")
    with pytest.raises(FileNotFoundError, match=r"source directory '.*src' not found"):
        pack(tmp_path / "env.tar.gz", source=tmp_path / "src")
    assert not any(tmp_path.iterdir())


def test_pack_step_failure_is_a_runtime_error_with_the_last_lines(capsys):
    # Thirty lines on stdout, then the error on stderr, as pip prints them.
    script = "import sys; print(*range(30), sep='\\n', flush=True); sys.exit('ERROR: no wheel')"
    with pytest.raises(RuntimeError, match="pip install failed \\(exit code 1\\):") as info:
        _run([sys.executable, "-c", script], "pip install")
    lines = str(info.value).splitlines()
    assert lines[1:] == [f"  {n}" for n in range(21, 30)] + ["  ERROR: no wheel"]
    assert "0\n1\n" in capsys.readouterr().out  # the output is still shown as it comes
