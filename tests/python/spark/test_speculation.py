"""Speculation: a copy of a slow map or reduce task of an aggregation counts no event twice
and leaves no file behind, for `aggregate` and for the job's aggregation on both engines.

With ``spark.speculation`` on, Spark starts a copy of a task that runs much longer than
its stage's others, and only on a host where the task has not run. The shared standalone
cluster gets a second worker for this module, registered as ``localhost`` beside the
first one's ``127.0.0.1``: the application (two executors of one core) has an executor on
each "host".

The slow task is made slow on purpose, whatever the machine's speed: the executors run
with the test-only pauses of ``scatterkit.spark.runtime.faults``, so that in each map stage
and each reduce stage of the three aggregations of test_aggregate_retry the first task
attempt to get there (a map task that has read its events, a reduce task with all but
its last group emitted) holds. The test leaves it held until a copy of it has finished on
the other host, then releases it: the original goes on while Spark kills it.

The outputs must be those of a run without faults, bit for bit; the job's summary counts
each event once; each output directory holds its committed files only (no attempt file,
no ``_temporary``), and nothing else is beside them (no staging directory).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from spark_helpers import pq, write_parquet
from standalone_cluster import (
    Paused,
    Pauses,
    StandaloneCluster,
    app_conf,
    executor_logs,
    extra_worker,
)
from test_aggregate_retry import (
    FILES,
    KINDS,
    Faults,
    aggregation_conf,
    check_output,
    events_table,
    reference,
    run_faults,
)

pytestmark = pytest.mark.spark
# The `standalone_cluster` fixture: one cluster for the session, shared with other modules.
pytest_plugins = ["standalone_cluster"]

COPY_TIMEOUT = 120  # seconds a task is held at most, waiting for its copy
SPECULATION = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    # Once half of a stage's tasks are done, a task running longer than their median (and
    # half a second) is slow; by its duration alone, not by the rate it reads data at.
    "spark.speculation.quantile": "0.5",
    "spark.speculation.multiplier": "1",
    "spark.speculation.minTaskRuntime": "500ms",
    "spark.speculation.efficiency.enabled": "false",
    "spark.locality.wait": "0s",  # a copy of a reduce task need not wait for a local slot
}


@pytest.fixture(scope="module")
def speculated(
    standalone_cluster: StandaloneCluster, tmp_path_factory
) -> Iterator[tuple[Faults, dict[str, str]]]:
    """The three aggregations with a map task and a reduce task each held until a copy of
    it finished; then the hosts the copies finished on, by held attempt."""
    root = tmp_path_factory.mktemp("speculation")
    write_parquet(root / "in", events_table(), files=FILES)
    pauses = Pauses(root / "pauses", ["map", "reduce"])
    conf = app_conf(cores=2, executor_cores=1, memory="768m") | aggregation_conf()
    conf |= pauses.conf | SPECULATION
    held: dict[str, tuple[Paused, float]] = {}
    copies: dict[str, str] = {}  # held attempt -> the host where a copy of it finished

    with extra_worker(standalone_cluster, "localhost", cores=1, memory="1g") as second:
        hosts = {standalone_cluster.work_dir.name: "127.0.0.1", second.work_dir.name: "localhost"}

        def hold(faults: Faults, paused: Paused) -> None:
            held[paused.task] = paused, time.monotonic()

        def release_once_copied() -> None:
            for task, (paused, since) in list(held.items()):
                copy = rf"Finished task {paused.partition}\.[1-9]\d* in stage {paused.stage}\.0 "
                logs = executor_logs(paused.app_id, standalone_cluster.work_dir, second.work_dir)
                for work, log in logs.items():
                    if re.search(copy, log):
                        copies[task] = hosts[work]
                if task in copies or time.monotonic() - since > COPY_TIMEOUT:
                    pauses.release(paused)
                    del held[task]

        yield (
            run_faults(standalone_cluster, root, conf, pauses, hold, release_once_copied),
            copies,
        )


@pytest.mark.parametrize("kind", KINDS)
def test_a_speculative_copy_counts_no_event_twice_and_leaves_no_file(speculated, kind):
    faults, copies = speculated
    log = faults.log()
    held = faults.paused.get(kind, [])
    print(f"\n{kind}: the three aggregations in {faults.seconds:.1f} s; held: {held}")
    print(f"copies finished on: {copies}")
    assert faults.returncode == 0, f"exit {faults.returncode}\n{log[-8000:]}"
    # A map task and a reduce task held at their first attempt, on one host; a copy of
    # each finished on the other; neither failed.
    assert sorted(p.point for p in held) == ["map", "reduce"], held
    for paused in held:
        assert paused.attempt == 0 and paused.host in ("127.0.0.1", "localhost"), paused
        assert paused.task in copies, f"no copy of {paused} finished\n{log[-8000:]}"
        assert copies[paused.task] != paused.host, (paused, copies)
    # No task failed; Spark killed each original once its copy had finished.
    lost = [line for line in log.splitlines() if "Lost task" in line]
    assert all("TaskKilled" in line for line in lost), lost
    for paused in held:
        assert any(f"Lost task {paused.task} (TID {paused.tid})" in line for line in lost), lost
    check_output(faults, kind, reference(pq.read_table(faults.root / "in")))
