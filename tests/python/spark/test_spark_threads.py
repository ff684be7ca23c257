"""One OpenMP thread per task core, and forked Python workers that do not hang in libgomp."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time

import numpy as np
import pytest
from spark_helpers import list_array, pa, run_python, spark_env, write_parquet

import scatterkit as sk
from scatterkit.spark.runtime.steps import BatchPlan, run_steps
from scatterkit.spark.specs.job_spec import JobSpec

SPEC = {
    "row_id": "id",
    "steps": [
        {
            "op": "ScatterElementsUpdate-12",
            "attributes": {"axis": 0, "reduction": "sum"},
            "inputs": {
                "data": {"fill": 0, "shape": [64, 64], "dtype": "double"},
                "indices": {"values": "idx", "shape": "idx_shape"},
                "updates": {"values": "upd", "shape": "idx_shape"},
            },
            "output": "out",
        }
    ],
}


def _inputs(rows: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    idx = [rng.integers(0, 64, (32, 64)) for _ in range(rows)]
    return pa.table(
        {
            "id": pa.array(np.arange(rows), pa.int64()),
            "idx": list_array(idx, np.int64),
            "idx_shape": list_array([np.array([32, 64])] * rows, np.int32),
            "upd": list_array([np.full((32, 64), 0.5)] * rows, np.float64),
        }
    )


def _wait(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_batch_in_a_process_forked_after_the_pool_started_does_not_hang():
    spec = JobSpec.from_dict(SPEC)
    plan = BatchPlan(spec.steps, ("id", "out"), keep_errors=False, row_id="id")
    batch = _inputs(400).to_batches()[0]
    sk.set_num_threads(2)
    want = run_steps(plan, batch).batch  # 400 rows x 32 KB: threads over rows, pool started
    pid = os.fork()
    if pid == 0:  # the child: what a forked PySpark worker does with the batch
        code = 1
        try:
            sk.set_num_threads(2)
            got = run_steps(plan, batch).batch
            code = 0 if got.equals(want) and sk.get_num_threads() == 1 else 2
        finally:
            os._exit(code)
    assert _wait(pid, timeout=60) == 0, "the forked child hung or computed a wrong result"


DAEMON = '''
"""A PySpark daemon that runs a threaded scatterkit kernel before forking its workers."""
import os

if os.environ.get("SK_WARM_POOL") == "1":
    import numpy as np
    import scatterkit as sk

    sk.set_num_threads(2)
    data = np.zeros((4096, 256))
    sk.scatter_update(data, np.arange(4096), np.ones((4096, 256)), 0, out=data)

from pyspark.daemon import manager

if __name__ == "__main__":
    manager()
'''

DRIVER = """
import json, os, sys
import numpy as np
from pyspark.sql import functions as F
from scatterkit.spark.sessions.session import build_session
from scatterkit.spark.jobs.run import run_job
from scatterkit.spark.specs.job_spec import JobSpec

spark = build_session(master="local[2]", conf={{
    "spark.task.cpus": "2",
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "sk_warm_daemon",
    "spark.executorEnv.PYTHONPATH": {tmp!r},
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100",
}})
spec = JobSpec.from_dict(json.loads({spec!r}))
report = {{}}
for label, warm in [("cold", "0"), ("warm", "1"), ("warm-reused", "1")]:
    spark.sparkContext.environment["SK_WARM_POOL"] = warm  # a new daemon per environment
    summary = run_job(spark, spec, {data!r}, os.path.join({tmp!r}, "out-" + label),
                      engine="spark", progress=False)
    written = spark.read.parquet(os.path.join({tmp!r}, "out-" + label))
    first = sorted(r.v for r in written.select(F.col("out.values")[0].alias("v")).collect())
    report[label] = {{"rows": summary.rows_out, "threads": summary.executor_threads,
                     "first": first[:3]}}
print("REPORT " + json.dumps(report))
"""


@pytest.mark.jvm  # a driver in a process of its own
def test_threads_follow_task_cpus_and_forked_workers_of_a_warm_daemon_run(tmp_path):
    (tmp_path / "sk_warm_daemon.py").write_text(DAEMON)
    data = write_parquet(tmp_path / "in", _inputs(300), files=2)
    code = DRIVER.format(tmp=str(tmp_path), data=str(data), spec=json.dumps(SPEC))
    out = run_python(textwrap.dedent(code), timeout=300, env=spark_env())
    report = json.loads(out.split("REPORT ", 1)[1])
    assert report["cold"]["threads"] == [2]  # spark.task.cpus = 2
    assert report["warm"]["threads"] == [1]  # forked after the pool started: one thread
    assert report["warm-reused"]["threads"] == [1]
    for label in report:
        assert report[label]["rows"] == 300
    assert report["cold"]["first"] == report["warm"]["first"] == report["warm-reused"]["first"]
