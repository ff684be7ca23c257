"""The demo end to end on local Spark, progress lines, and the wheel the pack command ships."""

from __future__ import annotations

import base64
import hashlib
import time
import zipfile

import pytest
from spark_helpers import spark  # noqa: F401

from scatterkit.spark.demo import run_demo
from scatterkit.spark.pack import wheel_from_installed
from scatterkit.spark.progress import Progress


def test_demo_checks_a_sample_and_prints_a_summary(spark, tmp_path, capsys):  # noqa: F811
    code = run_demo(2000, master="local[2]", workdir=str(tmp_path), sample=60)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "rows      2,000 in, 2,000 out" in out
    assert "errors    " in out and "rows/s" in out and "MB/s" in out
    assert "match scatterkit's single-call NumPy API bit for bit" in out


def test_progress_reports_running_stages(spark, capsys):  # noqa: F811
    def slow(batches):
        for batch in batches:
            time.sleep(1.5)
            yield batch

    with Progress(spark.sparkContext, interval=0.2, label="test"):
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


@pytest.mark.parametrize("bad", ["x", "=1"])
def test_cli_conf_must_be_key_value(bad):
    from scatterkit.spark.cli import _conf

    with pytest.raises(SystemExit):
        _conf([bad])
