"""The demo end to end on local Spark, progress lines, the summary, and the pack command."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from types import SimpleNamespace

import numpy as np
import pytest
from spark_helpers import pq, spark, spark_env  # noqa: F401

from scatterkit.spark.demo import run_demo
from scatterkit.spark.demo_data import _lists
from scatterkit.spark.pack import _run, pack, wheel_from_installed
from scatterkit.spark.progress import Display, Progress, StageCounts
from scatterkit.spark.session import _quiet_start
from scatterkit.spark.stats import TaskStats
from scatterkit.spark.summary import JobSummary


def test_demo_checks_a_sample_and_prints_a_summary(spark, tmp_path, capsys):  # noqa: F811
    code = run_demo(2000, master="local[2]", workdir=str(tmp_path), sample=60)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "rows      2,000 in, 2,000 out" in out
    assert "errors    " in out and "rows/s" in out and "MB/s" in out
    assert "match scatterkit's single-call NumPy API bit for bit" in out


def test_demo_counts_the_files_it_wrote(spark, tmp_path, capsys):  # noqa: F811
    # Three rows make three files, not the four that larger inputs are split into.
    code = run_demo(3, master="local[2]", workdir=str(tmp_path), sample=3)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "(3 Parquet file(s), " in out


def test_cli_keeps_sparks_start_up_lines_out_of_the_console(tmp_path):
    # Spark's default profile logs at WARN (and announces itself) until its context exists
    command = [sys.executable, "-m", "scatterkit.spark", "demo", "--rows", "40"]
    done = subprocess.run(
        [*command, "--sample", "5", "--master", "local[1]", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=spark_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
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


def test_generate_replaces_the_files_of_a_reused_directory(tmp_path):
    from scatterkit.spark.demo_data import generate

    generate(str(tmp_path), 8)
    generate(str(tmp_path), 3)  # three files: the fourth of the first run must go
    assert len(list(tmp_path.iterdir())) == 3
    assert pq.read_table(tmp_path).num_rows == 3


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


def test_demo_data_null_lists_hold_no_elements():
    # The Parquet writers of pyarrow 16-23 refuse a null list of non-zero length.
    lists = _lists(np.arange(6.0), np.array([2, 2, 2]), mask=np.array([False, True, False]))
    assert lists.to_pylist() == [[0.0, 1.0], None, [4.0, 5.0]]
    assert lists.offsets.to_pylist() == [0, 2, 2, 4]


def test_summary_flags_lost_rows_and_survives_a_zero_duration():
    summary = JobSummary(rows_in=5, rows_out=4, seconds=0.0)
    assert summary.rows_per_second == 0.0 and summary.tensor_mb_per_second == 0.0
    assert summary.lines()[0] == "rows      5 in, 4 out  << ROW COUNT MISMATCH"


def test_stats_add_numbers_up_and_unite_sets():
    # Two tasks with scatterkit from different places: the summary must name both.
    total = TaskStats()
    total.add(TaskStats({"batches": 3, "bytes_in": 0, "bytes_out": 1, "python_us": 0}, {"/a"}, {1}))
    total.add(TaskStats({"batches": 4, "bytes_in": 2, "bytes_out": 0, "python_us": 5}, {"/b"}, {1}))
    assert total.counts == {"batches": 7, "bytes_in": 2, "bytes_out": 1, "python_us": 5}
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
        assert "scatterkit/spark/job.py" in names
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
